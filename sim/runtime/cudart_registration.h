/* C declarations of the entry points nvcc-generated host code calls to
 * register device code and launch kernels (crt/host_runtime.h and
 * crt/device_functions.h declare them for C++ under __CUDACC__ only).
 * The simulated runtime exports them so binaries built by the real toolkit
 * load and run: a registered fat binary is loaded through the driver on
 * first use, and launches run its PTX on the simulated device. */
#ifndef CUDART_REGISTRATION_H
#define CUDART_REGISTRATION_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* Registers a module's fat binary; returns the handle the other calls take. */
void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin);

/* Marks the end of a module's registrations. */
void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle);

/* Forgets a module and everything registered with it (run at exit). */
void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle);

/* Associates a host stub address with the named kernel of a module. */
void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                                      dim3 *bDim, dim3 *gDim, int *wSize);

/* Associates a host shadow of a __device__ or __constant__ variable with
 * its module, for the symbol copies and cudaGetSymbolAddress. */
void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant, int global);

/* Initialises a module for managed variables; non-zero means ready. */
char CUDARTAPI __cudaInitModule(void **fatCubinHandle);

/* Saves the <<<grid, block, shared, stream>>> of the launch about to happen;
 * 0 on success. */
unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                               struct CUstream_st *stream);

/* Takes back the configuration the matching push saved. */
cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                                 void *stream);

/* The kernel handle of a registered host stub. */
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);

/* Launches a kernel by handle (legacy and per-thread default stream). */
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                         size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                              size_t sharedMem, cudaStream_t stream);

#endif

/* Kernel launches. The simulator cannot run device code, so every launch
 * fails the way a binary without code for this architecture does, rather
 * than pretending to succeed. */
#include "sim_internal.h"

/* No launch argument is looked at: each entry point only counts the call,
 * applies injected failures and refuses the launch. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

SIM_EXPORT_SAME_VARIANTS(cuLaunchKernel, cuLaunchKernel_ptsz,
                         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                          void **kernelParams, void **extra),
                         CUDA_ERROR_NO_BINARY_FOR_GPU)

SIM_EXPORT_SAME_VARIANTS(cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
                         (const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra),
                         CUDA_ERROR_NO_BINARY_FOR_GPU)

SIM_EXPORT_SAME_VARIANTS(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
                         (CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                          void **kernelParams),
                         CUDA_ERROR_NO_BINARY_FOR_GPU)

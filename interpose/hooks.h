/* Every driver entry point the library defines and exports. cuda.h already
 * declares most of them; the variants its macros hide (the 4-argument
 * resolver, the v1 names, the _ptsz names) are declared here. */
#ifndef GPUCACHE_INTERPOSE_HOOKS_H
#define GPUCACHE_INTERPOSE_HOOKS_H

#include "cuda_headers.h"

GPUCACHE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags);
GPUCACHE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                              CUstream hStream);
GPUCACHE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
GPUCACHE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream);
GPUCACHE_EXPORT CUresult cuStreamDestroy(CUstream hStream);
GPUCACHE_EXPORT CUresult cuCtxDestroy(CUcontext ctx);
GPUCACHE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
GPUCACHE_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev);
GPUCACHE_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
GPUCACHE_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
GPUCACHE_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                        int numParams, unsigned int flags, CUdevice dev);
GPUCACHE_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx);
GPUCACHE_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx);
GPUCACHE_EXPORT CUresult cuStreamBeginCapture(CUstream hStream);
GPUCACHE_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
GPUCACHE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
GPUCACHE_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                          const CUgraphNode *dependencies,
                                                          const CUgraphEdgeData *dependencyData,
                                                          size_t numDependencies,
                                                          CUstreamCaptureMode mode);
GPUCACHE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);

/* The runtime's entry-point lookups (shared libcudart.so.13 exports). */
GPUCACHE_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                                    unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *status);
GPUCACHE_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                         unsigned long long flags,
                                                         enum cudaDriverEntryPointQueryResult *status);
GPUCACHE_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *status);
GPUCACHE_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *status);

#endif

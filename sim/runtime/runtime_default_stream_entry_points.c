/* The entry points whose NULL stream means "the default stream". This file
 * is compiled twice: once as is, for the legacy default stream, and once with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, for code compiled with
 * --default-stream per-thread. In that mode cuda_runtime_api.h renames each
 * function defined below (cudaMemcpy becomes cudaMemcpy_ptds, and so on), so
 * one definition yields both variants and the compiler checks each against
 * its header's prototype. */
#include <stdint.h>

#include "runtime_internal.h"

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define DEFAULT_STREAM SIM_RUNTIME_PER_THREAD_STREAM
#else
#define DEFAULT_STREAM SIM_RUNTIME_LEGACY_STREAM
#endif

cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return sim_runtime_malloc_async(devPtr, size, hStream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream)
{
    return sim_runtime_malloc_from_pool_async(ptr, size, memPool, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return sim_runtime_free_async(devPtr, hStream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy(dst, src, count, kind, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream)
{
    return sim_runtime_memcpy_async(dst, src, count, kind, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    return sim_runtime_memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value, size_t count)
{
    return sim_runtime_memset(devPtr, value, count, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return sim_runtime_memset_async(devPtr, value, count, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
    return sim_runtime_stream_synchronize(stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream)
{
    return sim_runtime_stream_query(stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return sim_runtime_stream_wait_event(stream, event, flags, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return sim_runtime_stream_get_flags(hStream, flags, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return sim_runtime_stream_get_priority(hStream, priority, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
    return sim_runtime_stream_get_id(hStream, streamId, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    return sim_runtime_stream_get_device(hStream, device, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return sim_runtime_stream_begin_capture(stream, mode, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return sim_runtime_stream_end_capture(stream, pGraph, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return sim_runtime_stream_is_capturing(stream, pCaptureStatus, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                     cudaGraphInstantiateParams *instantiateParams)
{
    return sim_runtime_graph_instantiate_with_params(pGraphExec, graph, instantiateParams, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return sim_runtime_graph_upload(graphExec, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return sim_runtime_graph_launch(graphExec, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return sim_runtime_launch_host_func(stream, fn, userData, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                            unsigned int flags)
{
    return sim_runtime_stream_add_callback(stream, callback, userData, flags, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return sim_runtime_event_record(event, stream, 0, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return sim_runtime_event_record(event, stream, flags, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream)
{
    return sim_runtime_launch(func, false, gridDim, blockDim, args, sharedMem, stream, false, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                  size_t sharedMem, cudaStream_t stream)
{
    return sim_runtime_launch(func, false, gridDim, blockDim, args, sharedMem, stream, true, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    /* Attributes other than a cooperative launch (clusters, priorities,
     * programmatic serialization) are scheduling hints here. */
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL))
        return sim_runtime_record(cudaErrorInvalidValue);
    bool cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeCooperative && config->attrs[i].val.cooperative)
            cooperative = true;
    return sim_runtime_launch(func, false, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                              config->stream, cooperative, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy_symbol(symbol, (void *)(uintptr_t)src, count, offset, kind, true, false, NULL,
                                     DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy_symbol(symbol, dst, count, offset, kind, false, false, NULL, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return sim_runtime_memcpy_symbol(symbol, (void *)(uintptr_t)src, count, offset, kind, true, true, stream,
                                     DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return sim_runtime_memcpy_symbol(symbol, dst, count, offset, kind, false, true, stream, DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return sim_runtime_get_driver_entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus,
                                              DEFAULT_STREAM);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                       unsigned int cudaVersion, unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return sim_runtime_get_driver_entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus,
                                              DEFAULT_STREAM);
}

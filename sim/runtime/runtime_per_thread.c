/* The per-thread-default-stream entry points (_ptsz, _ptds) that code
 * compiled with --default-stream per-thread calls. This file is compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda_runtime_api.h renames each
 * function defined below (cudaMemcpy becomes cudaMemcpy_ptds, and so on) and
 * the compiler checks every definition against the header's prototype. */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "runtime_per_thread.c must be compiled with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include "runtime_internal.h"

#define PER_THREAD SIM_RUNTIME_PER_THREAD_STREAM

cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return sim_runtime_malloc_async(devPtr, size, hStream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream)
{
    return sim_runtime_malloc_from_pool_async(ptr, size, memPool, stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    return sim_runtime_free_async(devPtr, hStream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy(dst, src, count, kind, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream)
{
    return sim_runtime_memcpy_async(dst, src, count, kind, stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind)
{
    return sim_runtime_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    return sim_runtime_memcpy_2d_async(dst, dpitch, src, spitch, width, height, kind, stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value, size_t count)
{
    return sim_runtime_memset(devPtr, value, count, PER_THREAD);
}

cudaError_t CUDARTAPI cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return sim_runtime_memset_async(devPtr, value, count, stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
    return sim_runtime_stream_synchronize(stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream)
{
    return sim_runtime_stream_query(stream, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return sim_runtime_stream_wait_event(stream, event, flags, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return sim_runtime_stream_get_flags(hStream, flags, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return sim_runtime_stream_get_priority(hStream, priority, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
    return sim_runtime_stream_get_id(hStream, streamId, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    return sim_runtime_stream_get_device(hStream, device, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return sim_runtime_stream_begin_capture(stream, mode, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return sim_runtime_stream_end_capture(stream, pGraph, PER_THREAD);
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return sim_runtime_stream_is_capturing(stream, pCaptureStatus, PER_THREAD);
}

cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return sim_runtime_launch_host_func(stream, fn, userData, PER_THREAD);
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return sim_runtime_event_record(event, stream, 0, PER_THREAD);
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return sim_runtime_event_record(event, stream, flags, PER_THREAD);
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream)
{
    (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
    return sim_runtime_launch_registered_kernel(func);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return sim_runtime_get_driver_entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus,
                                              PER_THREAD);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                       unsigned int cudaVersion, unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return sim_runtime_get_driver_entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus,
                                              PER_THREAD);
}

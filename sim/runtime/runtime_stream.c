/* Streams: creation and destruction, synchronisation and queries, waits on
 * events, host functions and stream capture. A runtime stream is a driver
 * stream (cudaStream_t and CUstream are the same type), and the stream flag,
 * priority and capture enums number their values as the driver's do. */
#include <stdlib.h>

#include "runtime_driver.h"

cudaError_t CUDARTAPI cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pStream == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuStreamCreateWithPriority, pStream, flags, priority);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pStream == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuStreamCreate, pStream, flags);
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuStreamDestroy, stream);
}

cudaError_t sim_runtime_stream_synchronize(cudaStream_t stream, enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamSynchronize, stream);
}

cudaError_t sim_runtime_stream_query(cudaStream_t stream, enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamQuery, stream);
}

cudaError_t sim_runtime_stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags,
                                          enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamWaitEvent, stream,
                            event, flags);
}

cudaError_t sim_runtime_stream_get_flags(cudaStream_t stream, unsigned int *flags,
                                         enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (flags == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamGetFlags, stream,
                            flags);
}

cudaError_t sim_runtime_stream_get_priority(cudaStream_t stream, int *priority,
                                            enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (priority == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamGetPriority, stream,
                            priority);
}

cudaError_t sim_runtime_stream_get_id(cudaStream_t stream, unsigned long long *stream_id,
                                      enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (stream_id == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamGetId, stream,
                            stream_id);
}

cudaError_t sim_runtime_stream_get_device(cudaStream_t stream, int *device,
                                          enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (device == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamGetDevice,
                                          stream, &handle);
    /* Device handles are the ordinals the runtime numbers devices by. */
    if (status == cudaSuccess)
        *device = (int)handle;
    return status;
}

cudaError_t sim_runtime_stream_begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode,
                                             enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamBeginCapture, stream,
                            (CUstreamCaptureMode)mode);
}

cudaError_t sim_runtime_stream_end_capture(cudaStream_t stream, cudaGraph_t *graph,
                                           enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (graph == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamEndCapture, stream,
                            graph);
}

cudaError_t sim_runtime_stream_is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                            enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (status == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUstreamCaptureStatus driver_status = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t result = SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuStreamIsCapturing,
                                          stream, &driver_status);
    if (result == cudaSuccess)
        *status = (enum cudaStreamCaptureStatus)driver_status;
    return result;
}

cudaError_t CUDARTAPI cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (mode == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUstreamCaptureMode driver_mode = (CUstreamCaptureMode)*mode;
    cudaError_t status =
        SIM_RUNTIME_CALL(sim_runtime_driver.cuThreadExchangeStreamCaptureMode, &driver_mode);
    if (status == cudaSuccess)
        *mode = (enum cudaStreamCaptureMode)driver_mode;
    return status;
}

cudaError_t sim_runtime_launch_host_func(cudaStream_t stream, cudaHostFn_t function, void *user_data,
                                         enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (function == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuLaunchHostFunc, stream,
                            function, user_data);
}

/* cudaStreamAddCallback: the callback receives a runtime error code where the
 * driver's passes a CUresult, so each registration carries the runtime
 * callback to a trampoline that converts the status. */
struct stream_callback {
    cudaStreamCallback_t callback;
    void *user_data;
};

static void CUDA_CB stream_callback_trampoline(CUstream stream, CUresult status, void *data)
{
    struct stream_callback registration = *(struct stream_callback *)data;
    free(data);
    registration.callback(stream, sim_runtime_error_from_driver(status), registration.user_data);
}

cudaError_t sim_runtime_stream_add_callback(cudaStream_t stream, cudaStreamCallback_t callback,
                                            void *user_data, unsigned int flags,
                                            enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    /* Flags are reserved and must be 0. */
    if (callback == NULL || flags != 0)
        return sim_runtime_record(cudaErrorInvalidValue);
    const struct sim_runtime_stream_entry_points *entry_points = sim_runtime_stream_entry_points(default_stream);
    /* A captured callback could run once per graph launch, or never, so the
     * registration could not be freed when it ran: capture is refused, as
     * stream callbacks are not supported in stream capture. */
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t status = SIM_RUNTIME_CALL(entry_points->cuStreamIsCapturing, stream, &capture);
    if (status != cudaSuccess)
        return status;
    if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
        return sim_runtime_record(cudaErrorStreamCaptureUnsupported);
    struct stream_callback *registration = malloc(sizeof *registration);
    if (registration == NULL)
        return sim_runtime_record(cudaErrorMemoryAllocation);
    registration->callback = callback;
    registration->user_data = user_data;
    status = SIM_RUNTIME_CALL(entry_points->cuStreamAddCallback, stream, stream_callback_trampoline,
                              registration, 0);
    if (status != cudaSuccess)
        free(registration);
    return status;
}

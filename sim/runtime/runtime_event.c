/* Events: a runtime event is a driver event, and cudaEvent* flags have the
 * values of the CU_EVENT_* flags. */
#include "runtime_driver.h"

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (event == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuEventCreate, event, flags);
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t sim_runtime_event_record(cudaEvent_t event, cudaStream_t stream, unsigned int flags,
                                     enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    const struct sim_runtime_stream_entry_points *calls = sim_runtime_stream_entry_points(default_stream);
    /* Plain records use cuEventRecord, so a driver without the flags variant
     * still serves them. */
    if (flags == 0)
        return SIM_RUNTIME_CALL(calls->cuEventRecord, event, stream);
    return SIM_RUNTIME_CALL(calls->cuEventRecordWithFlags, event, stream, flags);
}

cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuEventQuery, event);
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuEventSynchronize, event);
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (ms == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuEventElapsedTime, ms, start, end);
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuEventDestroy, event);
}

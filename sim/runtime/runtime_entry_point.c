/* cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion: lookups go
 * through the runtime's own copy of cuGetProcAddress (fetched at start-up as
 * "cuGetProcAddress" at 12000), as NVIDIA's runtime does, so an interposer
 * that substituted that copy also answers these. */
#include "runtime_driver.h"

cudaError_t sim_runtime_get_driver_entry_point(const char *symbol, void **function, int cuda_version,
                                               unsigned long long flags,
                                               enum cudaDriverEntryPointQueryResult *driver_status,
                                               enum sim_runtime_default_stream default_stream)
{
    if (symbol == NULL || function == NULL ||
        (flags != cudaEnableDefault && flags != cudaEnableLegacyStream &&
         flags != cudaEnablePerThreadDefaultStream))
        return sim_runtime_record(cudaErrorInvalidValue);
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    if (sim_runtime_driver.cuGetProcAddress == NULL)
        return sim_runtime_record(cudaErrorNotSupported);
    /* cudaEnableDefault means per-thread only for code compiled per-thread,
     * which is what the _ptsz entry points are; the driver's own default is
     * the legacy stream. The flag values otherwise coincide. */
    cuuint64_t driver_flags = flags;
    if (flags == cudaEnableDefault && default_stream == SIM_RUNTIME_PER_THREAD_STREAM)
        driver_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *function = NULL;
    status = sim_runtime_record_driver(
        sim_runtime_driver.cuGetProcAddress(symbol, function, cuda_version, driver_flags, &found));
    if (status == cudaSuccess && driver_status != NULL)
        *driver_status = (enum cudaDriverEntryPointQueryResult)found;
    return status;
}

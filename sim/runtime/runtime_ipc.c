/* Sharing device allocations between processes: the runtime's IPC memory
 * handles are the driver's, byte for byte. */
#include <stdint.h>
#include <string.h>

#include "runtime_driver.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle),
               "runtime and driver IPC handles must have the same layout");

cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (handle == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUipcMemHandle driver_handle;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuIpcGetMemHandle, &driver_handle,
                                          (CUdeviceptr)(uintptr_t)devPtr);
    if (status == cudaSuccess)
        memcpy(handle, &driver_handle, sizeof *handle);
    return status;
}

cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (devPtr == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUipcMemHandle driver_handle;
    memcpy(&driver_handle, &handle, sizeof driver_handle);
    CUdeviceptr address = 0;
    /* cudaIpcMemLazyEnablePeerAccess equals CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS. */
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuIpcOpenMemHandle, &address, driver_handle,
                                          flags);
    if (status == cudaSuccess)
        *devPtr = (void *)(uintptr_t)address;
    return status;
}

cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void *devPtr)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuIpcCloseMemHandle, (CUdeviceptr)(uintptr_t)devPtr);
}

/* Legacy CUDA IPC exports whole driver allocations: the importer maps the
 * allocation that starts at the exported pointer. A cached block that starts
 * a plain segment is such an allocation; its segment is pinned so it is
 * never split, returned or reused while the program lives. Any other cached
 * block would hand the peer the wrong bytes, so the export fails loudly. */
#include "device_allocators.h"
#include "hook_support.h"
#include "hooks.h"
#include "log.h"

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (hook_bypassed_after_fork() || hook_mode() != HOOK_MODE_CACHE)
        return driver->ipc_get_mem_handle(pHandle, dptr);
    int device;
    struct gpucache_allocator *allocator = device_allocator_owning(dptr, &device);
    if (!allocator)
        return driver->ipc_get_mem_handle(pHandle, dptr);
    if (gpucache_allocator_pin_segment(allocator, dptr) != GPUCACHE_SUCCESS) {
        gpucache_log("cuIpcGetMemHandle(%p): the pointer is a block inside a cached segment "
                     "or expandable memory, and legacy IPC can only export a whole driver "
                     "allocation; run the exporting program with "
                     "GPUCACHE_ALLOC_CONF=passthrough:True",
                     (void *)(uintptr_t)dptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return driver->ipc_get_mem_handle(pHandle, dptr);
}

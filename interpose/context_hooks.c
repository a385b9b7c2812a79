/* Context lifetime, the current context, peer access and pool selection.
 * When a context dies (cudaDeviceReset, the last primary-context release,
 * cuCtxDestroy) the driver frees its memory itself: the device's cache is
 * forgotten, never freed a second time. A thread's current context changes
 * only through the calls hooked here (the runtime's cudaSetDevice and its
 * lazy binding reach cuCtxSetCurrent through the resolver), so the answer
 * the allocation hooks keep per thread is dropped at each of them. */
#include "cuda_driver.h"
#include "device_allocators.h"
#include "device_registry.h"
#include "hook_support.h"
#include "hooks.h"
#include "library_lifecycle.h"
#include "log.h"

/* Before a reset: expandable segments give their handles back while the
 * context still exists, and unmapping does not wait for work in flight, so
 * the device's work must be done first (the race detector of the simulated
 * device reports the unmapping otherwise). Plain segments make no call. */
static void forget_before_context_ends(CUdevice dev)
{
    if (hook_bypassed_after_fork())
        return;
    const struct gpucache_driver *driver = cuda_driver_interface();
    if (library_config()->expandable_segments && device_context(dev) && device_allocator(dev))
        driver->synchronize_device(driver->context, dev);
    device_forget(dev);
}

/* The same for every device served in a context about to be destroyed. */
static void forget_context_before_destroy(CUcontext ctx)
{
    if (hook_bypassed_after_fork() || !ctx)
        return;
    for (int dev = 0; dev < device_count_limit(); dev++)
        if (device_context(dev) == ctx)
            forget_before_context_ends(dev);
}

/* After a call that may have ended a context: a handle kept by any thread
 * may be dead, or its value reused for a new context. */
static CUresult context_ended(CUresult result)
{
    device_contexts_changed();
    return result;
}

/* After a call that changed (or may have changed) this thread's current
 * context. */
static CUresult current_context_changed(CUresult result)
{
    device_current_context_changed();
    return result;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    return current_context_changed(driver->ctx_set_current(ctx));
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_push_current_v1)
        return CUDA_ERROR_NOT_SUPPORTED;
    return current_context_changed(driver->ctx_push_current_v1(ctx));
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    return current_context_changed(driver->ctx_push_current(ctx));
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_pop_current_v1)
        return CUDA_ERROR_NOT_SUPPORTED;
    return current_context_changed(driver->ctx_pop_current_v1(pctx));
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    return current_context_changed(driver->ctx_pop_current(pctx));
}

/* A created context becomes current; its handle may be a dead one's. */
static CUresult context_created(CUresult result)
{
    device_current_context_changed();
    return context_ended(result);
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_create_v1)
        return CUDA_ERROR_NOT_SUPPORTED;
    return context_created(driver->ctx_create_v1(pctx, flags, dev));
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_create_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    return context_created(driver->ctx_create_v2(pctx, flags, dev));
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                        unsigned int flags, CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_create_v3)
        return CUDA_ERROR_NOT_SUPPORTED;
    return context_created(driver->ctx_create_v3(pctx, paramsArray, numParams, flags, dev));
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->ctx_create_v4)
        return CUDA_ERROR_NOT_SUPPORTED;
    return context_created(driver->ctx_create_v4(pctx, ctxCreateParams, flags, dev));
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    forget_before_context_ends(dev);
    return context_ended(driver->primary_ctx_reset(dev));
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    forget_before_context_ends(dev);
    return context_ended(driver->primary_ctx_reset_v2(dev));
}

/* A release destroys the primary context only when it was the last
 * reference, which the state query tells afterwards. */
static void primary_context_released(const struct real_driver *driver, CUdevice dev)
{
    unsigned int flags = 0;
    int active = 1;
    if (driver->primary_ctx_get_state(dev, &flags, &active) == CUDA_SUCCESS && !active)
        device_forget(dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->primary_ctx_release(dev);
    if (result == CUDA_SUCCESS && !hook_bypassed_after_fork())
        primary_context_released(driver, dev);
    return context_ended(result);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->primary_ctx_release_v2(dev);
    if (result == CUDA_SUCCESS && !hook_bypassed_after_fork())
        primary_context_released(driver, dev);
    return context_ended(result);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    forget_context_before_destroy(ctx);
    return context_ended(driver->ctx_destroy(ctx));
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    forget_context_before_destroy(ctx);
    return context_ended(driver->ctx_destroy_v2(ctx));
}

/* The device of `context`, asked of the driver when the library does not
 * serve that context yet. */
static int device_of_context(const struct real_driver *driver, CUcontext context)
{
    for (int device = 0; device < device_count_limit(); device++)
        if (device_context(device) == context)
            return device;
    CUdevice found = -1;
    if (driver->ctx_push_current(context) != CUDA_SUCCESS)
        return -1;
    if (driver->ctx_get_device(&found) != CUDA_SUCCESS)
        found = -1;
    CUcontext popped;
    driver->ctx_pop_current(&popped);
    return found;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->ctx_enable_peer_access(peerContext, Flags);
    if (result != CUDA_SUCCESS || hook_bypassed_after_fork())
        return result;
    /* Plain segments become peer-accessible through the driver; mapped
     * (expandable) memory only through access set per mapping. The driver's
     * call covers neither the mappings made before it nor those made after,
     * so (as PyTorch does) the owner's cache grants the accessing device
     * access to what it has mapped now, and every later mapping grants it
     * too (cuda_driver.c's set_access adds the granted peers). */
    CUcontext current;
    int accessor;
    if (!device_of_current_context(driver, &current, &accessor))
        return result;
    int owner = device_of_context(driver, peerContext);
    if (owner < 0)
        return result;
    device_grant_peer(owner, accessor);
    struct gpucache_allocator *allocator = device_allocator(owner);
    if (allocator && device_context(owner) == peerContext) {
        gpucache_result granted = gpucache_allocator_add_peer(allocator, accessor);
        if (granted != GPUCACHE_SUCCESS)
            gpucache_log("device %d cannot be given access to the expandable memory device %d "
                         "mapped before cuCtxEnablePeerAccess (error %d); memory mapped later "
                         "is accessible",
                         accessor, owner, granted);
    }
    return result;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->device_set_mem_pool(dev, pool);
    device_pools_changed();
    return result;
}

CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->mem_set_mem_pool(location, type, pool);
    device_pools_changed();
    return result;
}

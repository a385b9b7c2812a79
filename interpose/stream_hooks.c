/* Stream lifetime and synchronisation hooks. Creation and destruction keep
 * the live-stream registry that epoch fences are recorded on; a synchronize
 * the program makes anyway proves earlier work finished, so blocks freed
 * before it become reusable without any fence of ours. */
#include "cuda_driver.h"
#include "device_allocators.h"
#include "device_registry.h"
#include "hook_support.h"
#include "hooks.h"
#include "stream_tokens.h"

/* The allocator serving the current context, or NULL. */
static struct gpucache_allocator *current_allocator(const struct real_driver *driver,
                                                    int *device)
{
    CUcontext context;
    if (!device_of_current_context(driver, &context, device) ||
        device_context(*device) != context)
        return NULL;
    return device_allocator(*device);
}

static void stream_created(const struct real_driver *driver, CUstream stream,
                           unsigned int flags)
{
    CUcontext context;
    int device;
    if (device_of_current_context(driver, &context, &device))
        device_stream_created(device, stream, (flags & CU_STREAM_NON_BLOCKING) != 0);
    /* The handle may be one a destroyed stream had, on another device. */
    device_streams_changed();
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->stream_create(phStream, Flags);
    if (result == CUDA_SUCCESS && !hook_bypassed_after_fork())
        stream_created(driver, *phStream, Flags);
    return result;
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = driver->stream_create_with_priority(phStream, flags, priority);
    if (result == CUDA_SUCCESS && !hook_bypassed_after_fork())
        stream_created(driver, *phStream, flags);
    return result;
}

/* Blocks cached for the stream must move on while the stream still exists:
 * the allocator may record a last event on it. A synchronous free (and
 * under the cudaMallocAsync backend, a cudaFree) waits for the legacy
 * stream and every registered non-blocking stream; a destroyed non-blocking
 * stream's queued work must stay before it, so the legacy stream waits for
 * that work (DESIGN.md, Reuse safety). The wait comes before the stream
 * leaves the registry: a fence taken in between would otherwise order after
 * neither. */
static void stream_destroying(CUstream stream)
{
    if (hook_bypassed_after_fork() || !stream)
        return;
    device_streams_changed();
    bool non_blocking = false;
    int device = device_stream_find(stream, &non_blocking);
    if (device >= 0 && non_blocking && hook_mode() != HOOK_MODE_COUNT_ONLY)
        cuda_driver_stream_retiring(device, stream);
    device = device_stream_destroyed(stream, NULL);
    struct gpucache_allocator *allocator = device >= 0 ? device_allocator(device) : NULL;
    if (allocator && device_context(device))
        gpucache_allocator_stream_destroyed(allocator, stream_token(stream, false));
}

CUresult cuStreamDestroy(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    stream_destroying(hStream);
    CUresult result = driver->stream_destroy(hStream);
    /* A thread that asked about the stream meanwhile kept a stale answer. */
    device_streams_changed();
    return result;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    stream_destroying(hStream);
    CUresult result = driver->stream_destroy_v2(hStream);
    /* A thread that asked about the stream meanwhile kept a stale answer. */
    device_streams_changed();
    return result;
}

/* What a synchronizing call will prove: the allocator it concerns and its
 * clock before the call. Other threads may free while the call waits, and
 * their frees are not covered. */
struct synchronization {
    struct gpucache_allocator *allocator;
    struct gpucache_sync_point since;
};

static struct synchronization synchronization_of(struct gpucache_allocator *allocator)
{
    struct synchronization synchronization = {.allocator = allocator};
    if (allocator)
        synchronization.since = gpucache_allocator_sync_point(allocator);
    return synchronization;
}

static struct synchronization current_device_synchronization(const struct real_driver *driver)
{
    if (hook_bypassed_after_fork())
        return synchronization_of(NULL);
    int device;
    return synchronization_of(current_allocator(driver, &device));
}

static void device_synchronized(const struct synchronization *synchronization)
{
    if (synchronization->allocator)
        gpucache_allocator_synchronized_since(synchronization->allocator, true, 0,
                                              synchronization->since);
}

CUresult cuCtxSynchronize(void)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    struct synchronization synchronization = current_device_synchronization(driver);
    CUresult result = driver->ctx_synchronize();
    if (result == CUDA_SUCCESS)
        device_synchronized(&synchronization);
    return result;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || hook_bypassed_after_fork()) {
        struct synchronization synchronization = current_device_synchronization(driver);
        CUresult result = driver->ctx_synchronize_v2(ctx);
        if (result == CUDA_SUCCESS)
            device_synchronized(&synchronization);
        return result;
    }
    struct synchronization synchronizations[GPUCACHE_MAX_DEVICES] = {0};
    for (int device = 0; device < device_count_limit(); device++)
        if (device_context(device) == ctx)
            synchronizations[device] = synchronization_of(device_allocator(device));
    CUresult result = driver->ctx_synchronize_v2(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    for (int device = 0; device < device_count_limit(); device++)
        device_synchronized(&synchronizations[device]);
    return result;
}

static struct synchronization stream_synchronization(const struct real_driver *driver,
                                                     CUstream stream, gpucache_stream token)
{
    if (hook_bypassed_after_fork())
        return synchronization_of(NULL);
    if (stream_token_is_default(token))
        return current_device_synchronization(driver);
    int device = device_of_stream(driver, stream);
    return synchronization_of(device >= 0 && device_context(device) ? device_allocator(device)
                                                                    : NULL);
}

/* Only the stream itself: the legacy stream's work waited for blocking
 * streams' work queued before it, but not for what they queued after its
 * last operation, so even with no non-blocking stream alive its sync proves
 * nothing about another stream's latest frees. */
static void stream_synchronized(const struct synchronization *synchronization,
                                gpucache_stream token)
{
    if (synchronization->allocator)
        gpucache_allocator_synchronized_since(synchronization->allocator, false, token,
                                              synchronization->since);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    gpucache_stream token = stream_token(hStream, false);
    struct synchronization synchronization = stream_synchronization(driver, hStream, token);
    CUresult result = driver->stream_synchronize(hStream);
    if (result == CUDA_SUCCESS)
        stream_synchronized(&synchronization, token);
    return result;
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    gpucache_stream token = stream_token(hStream, true);
    struct synchronization synchronization = stream_synchronization(driver, hStream, token);
    CUresult result = driver->stream_synchronize_ptsz(hStream);
    if (result == CUDA_SUCCESS)
        stream_synchronized(&synchronization, token);
    return result;
}

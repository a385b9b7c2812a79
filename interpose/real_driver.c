/* Loads the real libcuda.so.1 lazily and resolves every entry point the
 * library needs through the driver's own resolver, so the variant chosen for
 * a (name, version, flags) triple is the driver's choice, not ours. */
#include "real_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "hooks.h"
#include "library_lifecycle.h"
#include "log.h"

static struct real_driver real;
const struct real_driver *real_driver_resolved;

enum load_state { NOT_LOADED = 0, LOADED, FAILED };
static int load_state; /* enum load_state, accessed atomically */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while this thread loads the driver: dlopen runs libcuda's
 * initialisers, which may call dlsym (our hook) and come back here. */
static __thread bool loading_on_this_thread __attribute__((tls_model("initial-exec")));

struct entry_point {
    const char *exported_name;
    const char *base_name;
    int version;
    cuuint64_t flags;
    void **real_slot;
    void *hook;           /* NULL for entry points the library only calls */
    void *exported_address; /* what dlsym(libcuda, exported_name) returned */
};

#define PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define HOOKED(name, base, version, flags, slot) \
    {#name, #base, version, flags, (void **)&real.slot, (void *)name, NULL}
#define CALLED(name, base, version, flags, slot) \
    {#name, #base, version, flags, (void **)&real.slot, NULL, NULL}

static struct entry_point entry_points[] = {
    HOOKED(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0, get_proc_address_v2),
    HOOKED(cuGetProcAddress, cuGetProcAddress, 11030, 0, get_proc_address),
    HOOKED(cuMemAlloc_v2, cuMemAlloc, 3020, 0, mem_alloc_v2),
    HOOKED(cuMemFree_v2, cuMemFree, 3020, 0, mem_free_v2),
    HOOKED(cuMemAllocAsync, cuMemAllocAsync, 11020, 0, mem_alloc_async),
    HOOKED(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, PER_THREAD, mem_alloc_async_ptsz),
    HOOKED(cuMemFreeAsync, cuMemFreeAsync, 11020, 0, mem_free_async),
    HOOKED(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, PER_THREAD, mem_free_async_ptsz),
    HOOKED(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0, mem_get_info_v2),
    HOOKED(cuStreamCreate, cuStreamCreate, 2000, 0, stream_create),
    HOOKED(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050, 0,
           stream_create_with_priority),
    HOOKED(cuStreamDestroy, cuStreamDestroy, 2000, 0, stream_destroy),
    HOOKED(cuStreamDestroy_v2, cuStreamDestroy, 4000, 0, stream_destroy_v2),
    HOOKED(cuCtxSynchronize, cuCtxSynchronize, 2000, 0, ctx_synchronize),
    HOOKED(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0, ctx_synchronize_v2),
    HOOKED(cuStreamSynchronize, cuStreamSynchronize, 2000, 0, stream_synchronize),
    HOOKED(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, PER_THREAD,
           stream_synchronize_ptsz),
    HOOKED(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0, primary_ctx_reset),
    HOOKED(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0, primary_ctx_reset_v2),
    HOOKED(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0, primary_ctx_release),
    HOOKED(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0,
           primary_ctx_release_v2),
    HOOKED(cuCtxDestroy, cuCtxDestroy, 2000, 0, ctx_destroy),
    HOOKED(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0, ctx_destroy_v2),
    HOOKED(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, 0, ipc_get_mem_handle),
    HOOKED(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, 0, ctx_enable_peer_access),
    HOOKED(cuDeviceSetMemPool, cuDeviceSetMemPool, 11020, 0, device_set_mem_pool),
    HOOKED(cuMemSetMemPool, cuMemSetMemPool, 13000, 0, mem_set_mem_pool),
    HOOKED(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0, ctx_set_current),
    HOOKED(cuCtxPushCurrent, cuCtxPushCurrent, 2000, 0, ctx_push_current_v1),
    HOOKED(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, 0, ctx_push_current),
    HOOKED(cuCtxPopCurrent, cuCtxPopCurrent, 2000, 0, ctx_pop_current_v1),
    HOOKED(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, 0, ctx_pop_current),
    HOOKED(cuCtxCreate, cuCtxCreate, 2000, 0, ctx_create_v1),
    HOOKED(cuCtxCreate_v2, cuCtxCreate, 3020, 0, ctx_create_v2),
    HOOKED(cuCtxCreate_v3, cuCtxCreate, 11040, 0, ctx_create_v3),
    HOOKED(cuCtxCreate_v4, cuCtxCreate, 12050, 0, ctx_create_v4),
    HOOKED(cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0, stream_begin_capture),
    HOOKED(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, PER_THREAD,
           stream_begin_capture_ptsz),
    HOOKED(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0, stream_begin_capture_v2),
    HOOKED(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, PER_THREAD,
           stream_begin_capture_v2_ptsz),
    HOOKED(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, 0,
           stream_begin_capture_to_graph),
    HOOKED(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, PER_THREAD,
           stream_begin_capture_to_graph_ptsz),
    HOOKED(cuStreamEndCapture, cuStreamEndCapture, 10000, 0, stream_end_capture),
    HOOKED(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, PER_THREAD,
           stream_end_capture_ptsz),

    CALLED(cuCtxGetCurrent, cuCtxGetCurrent, 4000, 0, ctx_get_current),
    CALLED(cuCtxGetDevice, cuCtxGetDevice, 2000, 0, ctx_get_device),
    CALLED(cuEventCreate, cuEventCreate, 2000, 0, event_create),
    CALLED(cuEventRecord, cuEventRecord, 2000, 0, event_record),
    CALLED(cuEventQuery, cuEventQuery, 2000, 0, event_query),
    CALLED(cuEventSynchronize, cuEventSynchronize, 2000, 0, event_synchronize),
    CALLED(cuEventDestroy_v2, cuEventDestroy, 4000, 0, event_destroy),
    CALLED(cuStreamWaitEvent, cuStreamWaitEvent, 3020, 0, stream_wait_event),
    CALLED(cuStreamIsCapturing, cuStreamIsCapturing, 10000, 0, stream_is_capturing),
    CALLED(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 10000, PER_THREAD,
           stream_is_capturing_ptsz),
    CALLED(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010, 0,
           thread_exchange_capture_mode),
    CALLED(cuStreamGetCtx, cuStreamGetCtx, 9020, 0, stream_get_ctx),
    CALLED(cuStreamGetFlags, cuStreamGetFlags, 5050, 0, stream_get_flags),
    CALLED(cuDeviceGetMemPool, cuDeviceGetMemPool, 11020, 0, device_get_mem_pool),
    CALLED(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, 0,
           device_get_default_mem_pool),
    CALLED(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, 0,
           primary_ctx_get_state),
    CALLED(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, 0, mem_get_address_range_v2),
    CALLED(cuMemAddressReserve, cuMemAddressReserve, 10020, 0, mem_address_reserve),
    CALLED(cuMemAddressFree, cuMemAddressFree, 10020, 0, mem_address_free),
    CALLED(cuMemCreate, cuMemCreate, 10020, 0, mem_create),
    CALLED(cuMemRelease, cuMemRelease, 10020, 0, mem_release),
    CALLED(cuMemMap, cuMemMap, 10020, 0, mem_map),
    CALLED(cuMemUnmap, cuMemUnmap, 10020, 0, mem_unmap),
    CALLED(cuMemSetAccess, cuMemSetAccess, 10020, 0, mem_set_access),
    CALLED(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020, 0,
           mem_get_allocation_granularity),
};

#define ENTRY_POINT_COUNT (sizeof entry_points / sizeof entry_points[0])

/* True for the library's own hooks. A driver whose resolver hands out
 * addresses bound through its own PLT returns our exported hooks once we are
 * preloaded; taking one as "the real function" would make the hook call
 * itself. */
static bool is_own_hook(void *function)
{
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++)
        if (entry_points[i].hook && entry_points[i].hook == function)
            return true;
    return false;
}

static void resolve_entry_points(void *handle, dlsym_function real_dlsym)
{
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++)
        entry_points[i].exported_address = real_dlsym(handle, entry_points[i].exported_name);
    /* The resolvers come from dlsym: they are what everything else is
     * resolved through. */
    real.get_proc_address_v2 = (PFN_cuGetProcAddress_v12000)real_dlsym(handle,
                                                                         "cuGetProcAddress_v2");
    real.get_proc_address = (PFN_cuGetProcAddress_v11030)real_dlsym(handle, "cuGetProcAddress");
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++) {
        struct entry_point *entry = &entry_points[i];
        void *resolved = NULL;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (real.get_proc_address_v2 &&
            real.get_proc_address_v2(entry->base_name, &resolved, entry->version, entry->flags,
                                     &status) == CUDA_SUCCESS &&
            status == CU_GET_PROC_ADDRESS_SUCCESS && resolved && !is_own_hook(resolved))
            *entry->real_slot = resolved;
        else if (!*entry->real_slot)
            *entry->real_slot = entry->exported_address;
    }
}

static const struct real_driver *load(bool only_if_loaded)
{
    pthread_mutex_lock(&load_lock);
    int state = __atomic_load_n(&load_state, __ATOMIC_ACQUIRE);
    if (state != NOT_LOADED) {
        pthread_mutex_unlock(&load_lock);
        return state == LOADED ? &real : NULL;
    }
    loading_on_this_thread = true;
    dlsym_function real_dlsym = real_dlsym_get();
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!handle && !only_if_loaded && real_dlsym)
        handle = dlopen("libcuda.so.1", RTLD_NOW);
    int new_state = NOT_LOADED;
    if (handle && real_dlsym) {
        resolve_entry_points(handle, real_dlsym);
        new_state = real.get_proc_address_v2 ? LOADED : FAILED;
        if (new_state == FAILED)
            gpucache_log("libcuda.so.1 has no cuGetProcAddress_v2 (a CUDA 12 or newer driver "
                         "is needed); every call passes through");
    } else if (!only_if_loaded) {
        new_state = FAILED;
    }
    __atomic_store_n(&load_state, new_state, __ATOMIC_RELEASE);
    if (new_state == LOADED)
        __atomic_store_n(&real_driver_resolved, &real, __ATOMIC_RELEASE);
    loading_on_this_thread = false;
    pthread_mutex_unlock(&load_lock);
    if (new_state == LOADED)
        library_lifecycle_activated();
    return new_state == LOADED ? &real : NULL;
}

const struct real_driver *real_driver_if_resolved(void)
{
    return __atomic_load_n(&load_state, __ATOMIC_ACQUIRE) == LOADED ? &real : NULL;
}

const struct real_driver *real_driver_get(bool only_if_loaded)
{
    const struct real_driver *resolved = real_driver_if_resolved();
    if (resolved || loading_on_this_thread)
        return resolved;
    if (__atomic_load_n(&load_state, __ATOMIC_ACQUIRE) == FAILED)
        return NULL;
    return load(only_if_loaded);
}

bool real_driver_activated(void)
{
    return real_driver_if_resolved() != NULL;
}

bool real_driver_stream_capturing(const struct real_driver *driver, CUstream stream,
                                  bool per_thread)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult result = per_thread ? driver->stream_is_capturing_ptsz(stream, &status)
                                 : driver->stream_is_capturing(stream, &status);
    return result != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void *real_driver_substitute(void *real_function)
{
    if (!real_function || !real_driver_if_resolved())
        return real_function;
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++) {
        const struct entry_point *entry = &entry_points[i];
        if (entry->hook && (real_function == *entry->real_slot ||
                            real_function == entry->exported_address))
            return entry->hook;
    }
    return real_function;
}

bool real_driver_is_hooked_name(const char *name)
{
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++)
        if (entry_points[i].hook && strcmp(entry_points[i].exported_name, name) == 0)
            return true;
    return false;
}

/* The real CUDA driver behind the hooks: its handle, its resolver, the real
 * entry points the library calls, and the table that tells, by address,
 * which real variant a lookup returned so that exactly that variant is
 * replaced by its hook. */
#ifndef GPUCACHE_INTERPOSE_REAL_DRIVER_H
#define GPUCACHE_INTERPOSE_REAL_DRIVER_H

#include <stdbool.h>

#include "cuda_headers.h"

/* cuStreamBeginCapture before the mode argument (CUDA 10.0); cuda.h
 * declares its type only for the driver's own build. */
typedef CUresult (CUDAAPI *stream_begin_capture_v1_function)(CUstream hStream);

/* Every real driver function the library calls. Hooked variants are called
 * through these pointers too, never through their exported names (those
 * resolve to the hooks). */
struct real_driver {
    PFN_cuGetProcAddress_v12000 get_proc_address_v2;
    PFN_cuGetProcAddress_v11030 get_proc_address;

    /* Hooked variants. */
    PFN_cuMemAlloc_v3020 mem_alloc_v2;
    PFN_cuMemFree_v3020 mem_free_v2;
    PFN_cuMemAllocAsync_v11020 mem_alloc_async;
    PFN_cuMemAllocAsync_v11020_ptsz mem_alloc_async_ptsz;
    PFN_cuMemFreeAsync_v11020 mem_free_async;
    PFN_cuMemFreeAsync_v11020_ptsz mem_free_async_ptsz;
    PFN_cuMemGetInfo_v3020 mem_get_info_v2;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamCreateWithPriority_v5050 stream_create_with_priority;
    PFN_cuStreamDestroy_v4000 stream_destroy; /* v1: same signature */
    PFN_cuStreamDestroy_v4000 stream_destroy_v2;
    PFN_cuCtxSynchronize_v2000 ctx_synchronize;
    PFN_cuCtxSynchronize_v13000 ctx_synchronize_v2;
    PFN_cuStreamSynchronize_v2000 stream_synchronize;
    PFN_cuStreamSynchronize_v7000_ptsz stream_synchronize_ptsz;
    PFN_cuDevicePrimaryCtxReset_v11000 primary_ctx_reset; /* v1 */
    PFN_cuDevicePrimaryCtxReset_v11000 primary_ctx_reset_v2;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release; /* v1 */
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release_v2;
    PFN_cuCtxDestroy_v4000 ctx_destroy; /* v1 */
    PFN_cuCtxDestroy_v4000 ctx_destroy_v2;
    PFN_cuIpcGetMemHandle_v4010 ipc_get_mem_handle;
    PFN_cuCtxEnablePeerAccess_v4000 ctx_enable_peer_access;
    PFN_cuDeviceSetMemPool_v11020 device_set_mem_pool;
    PFN_cuMemSetMemPool_v13000 mem_set_mem_pool;
    PFN_cuCtxSetCurrent_v4000 ctx_set_current;
    PFN_cuCtxPushCurrent_v4000 ctx_push_current_v1; /* v1: same signature */
    PFN_cuCtxPushCurrent_v4000 ctx_push_current;
    PFN_cuCtxPopCurrent_v4000 ctx_pop_current_v1; /* v1: same signature */
    PFN_cuCtxPopCurrent_v4000 ctx_pop_current;
    PFN_cuCtxCreate_v3020 ctx_create_v1; /* v1: same signature */
    PFN_cuCtxCreate_v3020 ctx_create_v2;
    PFN_cuCtxCreate_v11040 ctx_create_v3;
    PFN_cuCtxCreate_v12050 ctx_create_v4;
    stream_begin_capture_v1_function stream_begin_capture;
    stream_begin_capture_v1_function stream_begin_capture_ptsz;
    PFN_cuStreamBeginCapture_v10010 stream_begin_capture_v2;
    PFN_cuStreamBeginCapture_v10010_ptsz stream_begin_capture_v2_ptsz;
    PFN_cuStreamBeginCaptureToGraph_v12030 stream_begin_capture_to_graph;
    PFN_cuStreamBeginCaptureToGraph_v12030_ptsz stream_begin_capture_to_graph_ptsz;
    PFN_cuStreamEndCapture_v10000 stream_end_capture;
    PFN_cuStreamEndCapture_v10000_ptsz stream_end_capture_ptsz;

    /* Used by the library only. */
    PFN_cuCtxGetCurrent_v4000 ctx_get_current;
    PFN_cuCtxGetDevice_v2000 ctx_get_device;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventQuery_v2000 event_query;
    PFN_cuEventSynchronize_v2000 event_synchronize;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuStreamWaitEvent_v3020 stream_wait_event;
    PFN_cuStreamIsCapturing_v10000 stream_is_capturing;
    PFN_cuStreamIsCapturing_v10000_ptsz stream_is_capturing_ptsz;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 thread_exchange_capture_mode;
    PFN_cuStreamGetCtx_v9020 stream_get_ctx;
    PFN_cuStreamGetFlags_v5050 stream_get_flags;
    PFN_cuDeviceGetMemPool_v11020 device_get_mem_pool;
    PFN_cuDeviceGetDefaultMemPool_v11020 device_get_default_mem_pool;
    PFN_cuDevicePrimaryCtxGetState_v7000 primary_ctx_get_state;
    PFN_cuMemGetAddressRange_v3020 mem_get_address_range_v2;
    PFN_cuMemAddressReserve_v10020 mem_address_reserve;
    PFN_cuMemAddressFree_v10020 mem_address_free;
    PFN_cuMemCreate_v10020 mem_create;
    PFN_cuMemRelease_v10020 mem_release;
    PFN_cuMemMap_v10020 mem_map;
    PFN_cuMemUnmap_v10020 mem_unmap;
    PFN_cuMemSetAccess_v10020 mem_set_access;
    PFN_cuMemGetAllocationGranularity_v10020 mem_get_allocation_granularity;
};

/* The real driver, loaded and resolved on first use (thread-safe). Returns
 * NULL when libcuda.so.1 cannot be loaded or has no resolver: the hooks then
 * answer CUDA_ERROR_NOT_INITIALIZED, as a process without a driver would
 * see. With `only_if_loaded`, never loads libcuda itself. */
const struct real_driver *real_driver_get(bool only_if_loaded);

/* The real driver once resolved, else NULL (atomic): what every hook reads
 * first, without a call. */
extern const struct real_driver *real_driver_resolved;

/* The real driver if already resolved, without any locking (for the
 * fork child and for hot paths that already went through real_driver_get). */
const struct real_driver *real_driver_if_resolved(void);

/* The hook that stands for the real entry point `real_function`, or
 * `real_function` itself when it is not a variant the library hooks. */
void *real_driver_substitute(void *real_function);

/* True when `name` is the exact exported name of a variant the library
 * hooks (cuMemAlloc_v2 yes, cuMemAlloc no: that is the 32-bit v1 ABI). */
bool real_driver_is_hooked_name(const char *name);

/* True once the process has used the driver through the library. */
bool real_driver_activated(void);

/* True when the real driver reports `stream` capturing, or cannot tell; asked
 * through the per-thread variant when the program called one. The legacy
 * stream answers CU_STREAM_CAPTURE_STATUS_IMPLICIT while a blocking stream
 * of its context captures: that counts as capturing. */
bool real_driver_stream_capturing(const struct real_driver *driver, CUstream stream,
                                  bool per_thread);

/* The real dlsym of the C library (never our exported hook). */
typedef void *(*dlsym_function)(void *handle, const char *name);
dlsym_function real_dlsym_get(void);

#endif

/* The caching allocator of one device: PyTorch's native semantics (pools,
 * segments, best-fit split/merge, stream-safe reuse, GC, OOM retry chain)
 * behind the driver interface of gpucache_driver.h. Thread-safe: one lock per
 * device allocator. */
#ifndef GPUCACHE_ALLOCATOR_H
#define GPUCACHE_ALLOCATOR_H

#include "gpucache_driver.h"
#include "gpucache_events.h"
#include "gpucache_stats.h"

struct gpucache_config;
struct gpucache_allocator;

/* A new, empty allocator for `device`. `config` and `driver` must outlive it.
 * Returns NULL only when host memory for the allocator itself is exhausted. */
struct gpucache_allocator *gpucache_allocator_create(const struct gpucache_config *config,
                                                     const struct gpucache_driver *driver,
                                                     int device);

/* Returns every cached segment to the driver and frees the allocator.
 * Blocks still allocated are returned too: the caller is done with them. */
void gpucache_allocator_destroy(struct gpucache_allocator *allocator);

/* Used when the context that owned the allocator's memory is gone: forgets
 * its plain segments and fences without a driver call (the driver freed
 * them with the context) and gives back the physical handles and address
 * reservations of expandable segments, which belong to the process. */
void gpucache_allocator_abandon(struct gpucache_allocator *allocator);

/* Allocates `size` bytes for use on `stream`. Returns GPUCACHE_SUCCESS, or
 * GPUCACHE_ERROR_OUT_OF_MEMORY after the whole retry chain; size 0 gives
 * GPUCACHE_ERROR_INVALID_VALUE as cuMemAlloc does. */
gpucache_result gpucache_allocator_malloc(struct gpucache_allocator *allocator, size_t size,
                                          gpucache_stream stream, uint64_t *address);

/* How a block is freed. */
enum gpucache_free_kind {
    GPUCACHE_FREE_SYNCHRONOUS,   /* cuMemFree: pending until an epoch fence */
    GPUCACHE_FREE_STREAM_ORDERED /* cuMemFreeAsync(ptr, stream) */
};

/* Frees a block this allocator handed out. Returns GPUCACHE_SUCCESS,
 * GPUCACHE_ERROR_INVALID_VALUE for an interior pointer or a block already
 * free, and GPUCACHE_ALLOCATOR_NOT_OURS when the address is not in any of
 * this allocator's segments (the caller then asks the real driver). */
#define GPUCACHE_ALLOCATOR_NOT_OURS (-1)
gpucache_result gpucache_allocator_free(struct gpucache_allocator *allocator, uint64_t address,
                                        enum gpucache_free_kind kind, gpucache_stream stream);

/* cuIpcGetMemHandle of `address`: when it is the base of a plain segment
 * (a real driver allocation) the segment is pinned, never reused, split
 * again or returned to the driver, and SUCCESS is returned; otherwise
 * (an interior block, expandable memory) GPUCACHE_ERROR_INVALID_VALUE. */
gpucache_result gpucache_allocator_pin_segment(struct gpucache_allocator *allocator,
                                               uint64_t address);

/* True when `address` lies inside a segment of this allocator. */
bool gpucache_allocator_owns(struct gpucache_allocator *allocator, uint64_t address);

/* The allocator's clock: which frees had happened at one moment. */
struct gpucache_sync_point {
    uint64_t tick;  /* stream-ordered frees on their own stream */
    uint64_t frees; /* frees that wait for a fence */
};

/* Taken before a synchronizing driver call that other threads may overlap
 * with frees of their own: only frees before it are proven complete. */
struct gpucache_sync_point gpucache_allocator_sync_point(struct gpucache_allocator *allocator);

/* A synchronize of the device (`whole_device`) or of `stream` alone began at
 * `since` and returned: every block freed before `since` on what it
 * synchronized is now reusable. */
void gpucache_allocator_synchronized_since(struct gpucache_allocator *allocator,
                                           bool whole_device, gpucache_stream stream,
                                           struct gpucache_sync_point since);

/* gpucache_allocator_synchronized_since with the clock read now: for a
 * caller that knows no free overlapped its synchronize. */
void gpucache_allocator_synchronized(struct gpucache_allocator *allocator, bool whole_device,
                                     gpucache_stream stream);

/* A stream is about to be destroyed: blocks cached for it move to other
 * streams once its work is done. */
void gpucache_allocator_stream_destroyed(struct gpucache_allocator *allocator,
                                         gpucache_stream stream);

/* Device `peer` enabled peer access to this allocator's device
 * (cuCtxEnablePeerAccess): memory of expandable segments, which peer access
 * does not cover by itself, is made accessible to it now and whenever pages
 * are mapped later. Returns the driver's error, or INVALID_VALUE beyond
 * GPUCACHE_ALLOCATOR_MAX_PEERS peers. */
#define GPUCACHE_ALLOCATOR_MAX_PEERS 64
gpucache_result gpucache_allocator_add_peer(struct gpucache_allocator *allocator, int peer);

/* Returns every wholly free, ready segment (and free expandable page) to the
 * driver, as torch.cuda.empty_cache() does. */
void gpucache_allocator_empty_cache(struct gpucache_allocator *allocator);

/* For reports at exit: fences every stream's pending frees and frees those
 * whose work completes within `patience_ns`, without synchronizing the
 * device; returns the bytes still pending. */
size_t gpucache_allocator_settle(struct gpucache_allocator *allocator, int64_t patience_ns);

/* The figures an out-of-memory message gives, as PyTorch's does. */
struct gpucache_memory_state {
    int device;
    uint64_t allocated;          /* allocated_bytes: blocks the program holds */
    uint64_t reserved;           /* reserved_bytes: what the cache holds from the driver */
    uint64_t largest_free_block; /* the largest cached free block */
    uint64_t device_free;        /* the driver's free and total bytes; both 0 when */
    uint64_t device_total;       /* the driver could not say */
};

/* The cache's and the device's memory now (one driver query). */
void gpucache_allocator_memory_state(struct gpucache_allocator *allocator,
                                     struct gpucache_memory_state *state);

/* Bytes the cache holds free (reserved minus allocated), for cuMemGetInfo. */
size_t gpucache_allocator_cached_free_bytes(struct gpucache_allocator *allocator);

/* A consistent copy of the statistics. */
void gpucache_allocator_get_stats(struct gpucache_allocator *allocator,
                                  struct gpucache_stats *stats);

/* The state of a block, in the words of a PyTorch memory snapshot. */
enum gpucache_block_state {
    GPUCACHE_BLOCK_ACTIVE_ALLOCATED,    /* handed out */
    GPUCACHE_BLOCK_ACTIVE_PENDING_FREE, /* freed, waiting for GPU work to finish */
    GPUCACHE_BLOCK_INACTIVE,            /* free in the cache */
};

struct gpucache_block_info {
    uint64_t address;
    size_t size;
    size_t requested_size; /* 0 unless allocated or pending */
    enum gpucache_block_state state;
};

/* One segment as a memory snapshot shows it (`segments` of
 * torch.cuda.memory._snapshot()). */
struct gpucache_segment_info {
    uint64_t address;
    size_t total_size;
    size_t allocated_size;
    size_t active_size;
    size_t requested_size;
    gpucache_stream stream;
    bool small_pool;
    bool expandable;
    size_t block_count;
    const struct gpucache_block_info *blocks; /* in address order */
};

/* Calls `visit` for every segment, in address order, with its blocks. The
 * allocator is locked meanwhile: `visit` must not call it. Returns false
 * when host memory for the listing ran out (nothing was visited then). */
bool gpucache_allocator_visit_segments(struct gpucache_allocator *allocator,
                                       void (*visit)(void *context,
                                                     const struct gpucache_segment_info *segment),
                                       void *context);

/* gpucache_allocator_visit_segments, then `finished(context)` (when not
 * NULL) before the lock is released: what `finished` records (a copy of the
 * event trace) agrees exactly with the segments visited. */
bool gpucache_allocator_visit_segments_then(
    struct gpucache_allocator *allocator,
    void (*visit)(void *context, const struct gpucache_segment_info *segment),
    void (*finished)(void *context), void *context);

/* Sends every event of this allocator (gpucache_events.h: alloc,
 * free_requested, free_completed, segment_alloc/free/map/unmap, oom) to
 * `observer`, called under the allocator's lock in the order they happen;
 * NULL stops. Set it while no other thread uses the allocator (right after
 * creating it). Forgetting segments (gpucache_allocator_abandon) reports
 * their blocks freed and their memory gone, so a trace stays consistent. */
void gpucache_allocator_set_observer(struct gpucache_allocator *allocator,
                                     gpucache_event_observer *observer, void *context);

#endif

/* The allocation event model and the in-memory event log.
 *
 * One event per allocator action that changes what the program or the driver
 * sees: the names and meaning are those of PyTorch's trace entries
 * (torch.cuda.memory._record_memory_history), so a snapshot's device_traces
 * are these events written out. A log is appended to on the allocator's hot
 * path: it reuses preallocated chunks (no host allocation per event in
 * steady state) and takes one uncontended mutex per append. */
#ifndef GPUCACHE_EVENTS_H
#define GPUCACHE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

enum gpucache_event_action {
    GPUCACHE_EVENT_ALLOC = 0,       /* address: block, size: requested bytes */
    GPUCACHE_EVENT_FREE_REQUESTED,  /* the program freed it: address, requested size */
    GPUCACHE_EVENT_FREE_COMPLETED,  /* the block became reusable: address, requested size */
    GPUCACHE_EVENT_SEGMENT_ALLOC,   /* a driver allocation: address, size */
    GPUCACHE_EVENT_SEGMENT_FREE,    /* returned to the driver: address, size */
    GPUCACHE_EVENT_SEGMENT_MAP,     /* expandable pages mapped: range start, bytes */
    GPUCACHE_EVENT_SEGMENT_UNMAP,   /* expandable pages unmapped: range start, bytes */
    GPUCACHE_EVENT_OOM,             /* address: device free bytes, size: rounded request */
    GPUCACHE_EVENT_SNAPSHOT,        /* address 0, size: active bytes at snapshot time */
    GPUCACHE_EVENT_ACTION_COUNT
};

struct gpucache_event {
    uint64_t time_ns; /* CLOCK_REALTIME, nanoseconds since the Unix epoch */
    uint64_t address; /* for GPUCACHE_EVENT_OOM: the device's free bytes */
    uint64_t size;
    uint64_t stream;  /* the stream handle's value; 0 is the legacy stream */
    uint32_t thread;  /* the kernel thread id of the caller */
    int16_t device;
    uint8_t action;   /* enum gpucache_event_action */
    uint8_t reserved;
};

/* PyTorch's name of an action ("alloc", "segment_map", ...); "?" when out of range. */
const char *gpucache_event_action_name(enum gpucache_event_action action);

/* The current time in the events' clock. Inline, as the allocator stamps
 * events with it without linking the report library. */
static inline uint64_t gpucache_event_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The calling thread's kernel thread id, cached per thread. */
static inline uint32_t gpucache_event_thread_id(void)
{
    static _Thread_local uint32_t cached;
    if (cached == 0)
        cached = (uint32_t)gettid();
    return cached;
}

/* Receives events as they happen (the allocator's observer). */
typedef void gpucache_event_observer(void *context, const struct gpucache_event *event);

struct gpucache_event_log;

/* A log that keeps at least the newest `max_events` events (0: unlimited)
 * and at most one chunk (2048 events) more; when full, the oldest chunk is
 * dropped and reused, as PyTorch's ring buffer drops its oldest entries. Returns NULL when host memory is exhausted. */
struct gpucache_event_log *gpucache_event_log_create(size_t max_events);

/* Frees the log and every chunk. */
void gpucache_event_log_destroy(struct gpucache_event_log *log);

/* Appends one event. Never fails the caller: when a new chunk cannot be
 * allocated the event is counted as dropped. Thread-safe. */
void gpucache_event_log_append(struct gpucache_event_log *log, const struct gpucache_event *event);

/* gpucache_event_log_append as a gpucache_event_observer: `log` is the
 * context (gpucache_allocator_set_observer(allocator,
 * gpucache_event_log_observe, log) records an allocator's events). */
void gpucache_event_log_observe(void *log, const struct gpucache_event *event);

/* Stamps time and thread, then appends. */
void gpucache_event_log_record(struct gpucache_event_log *log, enum gpucache_event_action action,
                               int device, uint64_t address, uint64_t size, uint64_t stream);

/* Events held now, and events lost (dropped by the limit or for want of memory). */
size_t gpucache_event_log_count(struct gpucache_event_log *log);
uint64_t gpucache_event_log_dropped(struct gpucache_event_log *log);

/* A copy of the events, oldest first, into a new array the caller frees
 * (NULL with *count 0 when empty or out of memory). Events of `device` only,
 * or all when `device` is negative. */
struct gpucache_event *gpucache_event_log_copy(struct gpucache_event_log *log, int device,
                                               size_t *count);

/* Forgets every event, keeping the chunks for reuse. */
void gpucache_event_log_clear(struct gpucache_event_log *log);

#endif

/* The allocation event model: what the allocator reports to its observer.
 *
 * One event per allocator action that changes what the program or the driver
 * sees: the names and meaning are those of PyTorch's trace entries
 * (torch.cuda.memory._record_memory_history), so a snapshot's device_traces
 * are these events written out. The in-memory event log that records them
 * and the writers that render them are in report/ (gpucache_event_log.h,
 * gpucache_report.h). */
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
    /* alloc and free_requested: the block's bytes, what allocated_bytes
     * counts (size is what the program asked for); 0 for other actions. */
    uint64_t block_size;
    /* The call stack's id in the recorder's stack table (gpucache_stacks.h
     * in report/); 0: none recorded. */
    uint32_t stack;
    uint32_t thread;  /* the kernel thread id of the caller */
    int16_t device;
    uint8_t action;   /* enum gpucache_event_action */
    uint8_t reserved;
};

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

#endif

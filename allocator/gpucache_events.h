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
    /* CLOCK_REALTIME, nanoseconds since the Unix epoch; ticks of
     * gpucache_event_clock when `reserved` has GPUCACHE_EVENT_TICKS (as the
     * allocator stamps them). */
    uint64_t time_ns;
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
    uint8_t reserved; /* GPUCACHE_EVENT_TICKS or 0 */
};

/* In `reserved`: time_ns holds gpucache_event_clock()'s ticks, not wall
 * time; the event log converts when it copies the event out. */
#define GPUCACHE_EVENT_TICKS 1u

/* The current time in the events' clock. Inline, as the allocator stamps
 * events with it without linking the report library. */
static inline uint64_t gpucache_event_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Nonzero when gpucache_event_clock reads the time-stamp counter: x86-64
 * with the kernel itself keeping time by it (so it is invariant and in step
 * across cores). Set by gpucache_event_clock_init. */
extern int gpucache_event_clock_is_tsc __attribute__((visibility("hidden")));

/* Decides what gpucache_event_clock reads, once per process; called before
 * the first event is recorded (the event log does when it is created). */
void gpucache_event_clock_init(void) __attribute__((visibility("hidden")));

/* The clock events are stamped with on the hot path, in ticks: the TSC
 * where gpucache_event_clock_is_tsc (a few ns, no call), else
 * CLOCK_MONOTONIC ns. The event log turns ticks into wall time when it is
 * read (gpucache_event_log_copy). */
static inline uint64_t gpucache_event_clock(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(gpucache_event_clock_is_tsc, 1))
        return __builtin_ia32_rdtsc();
#endif
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* The calling thread's kernel thread id once gpucache_event_thread_id has
 * asked for it, else 0. Initial-exec: in libgpucache.so the default model
 * would call __tls_get_addr per event. */
static _Thread_local __attribute__((tls_model("initial-exec"), unused)) uint32_t
    gpucache_event_known_thread_id;

/* The calling thread's kernel thread id, cached per thread. */
static inline uint32_t gpucache_event_thread_id(void)
{
    if (gpucache_event_known_thread_id == 0)
        gpucache_event_known_thread_id = (uint32_t)gettid();
    return gpucache_event_known_thread_id;
}

/* Receives events as they happen (the allocator's observer). */
typedef void gpucache_event_observer(void *context, const struct gpucache_event *event);

#endif

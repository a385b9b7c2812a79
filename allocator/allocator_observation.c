/* What the allocator tells about itself: events to its observer,
 * statistics, the memory state an out-of-memory message gives, and the
 * settling of pending frees before the reports at exit. */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator_internal.h"

int gpucache_event_clock_is_tsc;
/* The thread's id once known, when the clock is the TSC (else 0): the one
 * test observe_event's fast path makes. */
static _Thread_local __attribute__((tls_model("initial-exec"))) uint32_t fast_thread_id;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

/* The TSC only where the kernel trusts it as its clocksource: it has then
 * checked that the counter is invariant and synchronized across CPUs, which
 * a trace's order across threads needs. */
static void choose_clock(void)
{
#if defined(__x86_64__)
    char name[16] = {0};
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t length = read(fd, name, sizeof name - 1);
        close(fd);
        if (length >= 3 && memcmp(name, "tsc", 3) == 0 && (length == 3 || name[3] == '\n'))
            __atomic_store_n(&gpucache_event_clock_is_tsc, 1, __ATOMIC_RELAXED);
    }
#endif
}

void gpucache_event_clock_init(void)
{
    pthread_once(&clock_once, choose_clock);
}

/* Any clock, any thread: the first event of a thread, or a clock other
 * than the TSC. */
static __attribute__((noinline)) void observe_event_slowly(
    struct gpucache_allocator *allocator, enum gpucache_event_action action, uint64_t address,
    uint64_t size, uint64_t block_size, gpucache_stream stream)
{
    struct gpucache_event event = {
        .time_ns = gpucache_event_clock(),
        .address = address,
        .size = size,
        .stream = (uint64_t)stream,
        .block_size = block_size,
        .thread = gpucache_event_thread_id(),
        .device = (int16_t)allocator->device,
        .action = (uint8_t)action,
        .reserved = GPUCACHE_EVENT_TICKS,
    };
#if defined(__x86_64__)
    if (gpucache_event_clock_is_tsc)
        fast_thread_id = event.thread;
#endif
    allocator->observer(allocator->observer_context, &event);
}

#if defined(__x86_64__)
/* Every field, stamped with the TSC: nothing is zeroed first. */
static inline __attribute__((always_inline)) void
fill_event(struct gpucache_event *event, const struct gpucache_allocator *allocator,
           uint32_t thread, enum gpucache_event_action action, uint64_t address, uint64_t size,
           uint64_t block_size, gpucache_stream stream)
{
    event->time_ns = __builtin_ia32_rdtsc();
    event->address = address;
    event->size = size;
    event->stream = (uint64_t)stream;
    event->block_size = block_size;
    event->stack = 0;
    event->thread = thread;
    event->device = (int16_t)allocator->device;
    event->action = (uint8_t)action;
    event->reserved = GPUCACHE_EVENT_TICKS;
}
#endif

/* With the TSC and the thread's id known, an event is a dozen stores and
 * the observer's call: nothing here calls out, so no register is saved,
 * and every field is written so nothing is zeroed first. */
void observe_event(struct gpucache_allocator *allocator, enum gpucache_event_action action,
                   uint64_t address, uint64_t size, uint64_t block_size, gpucache_stream stream)
{
#if defined(__x86_64__)
    uint32_t thread = fast_thread_id;
    if (__builtin_expect(thread != 0, 1)) {
        struct gpucache_event event;
        fill_event(&event, allocator, thread, action, address, size, block_size, stream);
        allocator->observer(allocator->observer_context, &event);
        return;
    }
#endif
    observe_event_slowly(allocator, action, address, size, block_size, stream);
}

/* The event is built once and only its time, action and block size change
 * for the second call: the pair costs little more than one event. */
void observe_free_at_once(struct gpucache_allocator *allocator, uint64_t address, uint64_t size,
                          uint64_t block_size, gpucache_stream stream)
{
#if defined(__x86_64__)
    uint32_t thread = fast_thread_id;
    if (__builtin_expect(thread != 0, 1)) {
        struct gpucache_event event;
        fill_event(&event, allocator, thread, GPUCACHE_EVENT_FREE_REQUESTED, address, size,
                   block_size, stream);
        allocator->observer(allocator->observer_context, &event);
        event.time_ns = __builtin_ia32_rdtsc();
        event.block_size = 0;
        event.action = (uint8_t)GPUCACHE_EVENT_FREE_COMPLETED;
        allocator->observer(allocator->observer_context, &event);
        return;
    }
#endif
    observe_event_slowly(allocator, GPUCACHE_EVENT_FREE_REQUESTED, address, size, block_size,
                         stream);
    observe_event_slowly(allocator, GPUCACHE_EVENT_FREE_COMPLETED, address, size, 0, stream);
}

static int64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Conservative reuse clears blocks only by synchronizing the device, which
 * a report must not do on the program's behalf: its pending frees stay
 * pending. The lock is dropped between polls so that threads still running
 * at exit are not held up. */
size_t gpucache_allocator_settle(struct gpucache_allocator *allocator, int64_t patience_ns)
{
    int64_t deadline = monotonic_ns() + patience_ns;
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    if (allocator->config->reuse != GPUCACHE_REUSE_CONSERVATIVE)
        epochs_close_all_open(allocator);
    for (;;) {
        epochs_process_completed(allocator);
        if (allocator->stats.pending_blocks.current == 0 ||
            allocator->config->reuse == GPUCACHE_REUSE_CONSERVATIVE || monotonic_ns() >= deadline)
            break;
        pthread_mutex_unlock(&allocator->mutex);
        nanosleep(&(struct timespec){0, 100000}, NULL);
        pthread_mutex_lock(&allocator->mutex);
    }
    size_t pending = (size_t)allocator->stats.pending_bytes.current;
    pthread_mutex_unlock(&allocator->mutex);
    return pending;
}

void gpucache_allocator_memory_state(struct gpucache_allocator *allocator,
                                     struct gpucache_memory_state *state)
{
    memset(state, 0, sizeof *state);
    state->device = allocator->device;
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    state->allocated = (uint64_t)allocator->stats.allocated_bytes[GPUCACHE_STAT_ALL].current;
    state->reserved = (uint64_t)allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    /* A walk of every free block: this runs after a failure, not per call. */
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks)
            if (block->size > state->largest_free_block)
                state->largest_free_block = block->size;
    }
    size_t free_bytes = 0, total_bytes = 0;
    gpucache_result result;
    DRIVER_CALL(allocator, result, memory_info, allocator->device, &free_bytes, &total_bytes);
    if (result == GPUCACHE_SUCCESS) {
        state->device_free = free_bytes;
        state->device_total = total_bytes;
    }
    pthread_mutex_unlock(&allocator->mutex);
}

size_t gpucache_allocator_cached_free_bytes(struct gpucache_allocator *allocator)
{
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    int64_t cached = allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current -
                     allocator->stats.allocated_bytes[GPUCACHE_STAT_ALL].current;
    pthread_mutex_unlock(&allocator->mutex);
    return (size_t)cached;
}

void gpucache_allocator_get_stats(struct gpucache_allocator *allocator,
                                  struct gpucache_stats *stats)
{
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    *stats = allocator->stats;
    pthread_mutex_unlock(&allocator->mutex);
}

void gpucache_allocator_set_observer(struct gpucache_allocator *allocator,
                                     gpucache_event_observer *observer, void *context)
{
    /* No lock: the caller does this while no other thread uses the
     * allocator, often under a lock of its own that must not nest the
     * allocator's. */
    allocator->observer = observer;
    allocator->observer_context = context;
}

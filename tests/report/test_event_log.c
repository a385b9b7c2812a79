/* The event log: order, per-device copies, the event limit, clearing. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gpucache_event_log.h"

/* A log (limit `max_events`) holding events 0..count-1 spread over `devices`. */
static struct gpucache_event_log *numbered_log(size_t max_events, uint64_t count, int devices)
{
    struct gpucache_event_log *log = gpucache_event_log_create(max_events);
    cr_assert_not_null(log);
    for (uint64_t number = 0; number < count; number++) {
        struct gpucache_event event = {.time_ns = number, .address = number, .size = number * 2,
                                       .device = (int16_t)(number % (uint64_t)devices),
                                       .action = GPUCACHE_EVENT_ALLOC};
        gpucache_event_log_append(log, &event);
    }
    return log;
}

Test(event_log, keeps_every_event_in_order_across_chunks)
{
    struct gpucache_event_log *log = numbered_log(0, 10000, 1);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_eq(count, 10000);
    for (size_t index = 0; index < count; index++)
        cr_assert_eq(events[index].address, index);
    cr_assert_eq(gpucache_event_log_dropped(log), 0);
    free(events);
    gpucache_event_log_destroy(log);
}

Test(event_log, copies_one_device)
{
    struct gpucache_event_log *log = numbered_log(0, 300, 3);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, 2, &count);
    cr_assert_eq(count, 100);
    for (size_t index = 0; index < count; index++) {
        cr_assert_eq(events[index].device, 2);
        cr_assert_eq(events[index].address, index * 3 + 2);
    }
    free(events);
    cr_assert_null(gpucache_event_log_copy(log, 5, &count));
    cr_assert_eq(count, 0);
    gpucache_event_log_destroy(log);
}

Test(event_log, limit_drops_the_oldest_events_and_counts_them)
{
    struct gpucache_event_log *log = numbered_log(4096, 20000, 1);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_geq(count, 4096);
    cr_assert_leq(count, 4096 + 2048);
    cr_assert_eq(gpucache_event_log_dropped(log) + count, 20000);
    /* What is kept is the newest events, still in order. */
    for (size_t index = 0; index < count; index++)
        cr_assert_eq(events[index].address, 20000 - count + index);
    free(events);
    gpucache_event_log_destroy(log);
}

Test(event_log, clear_forgets_events_and_keeps_working)
{
    struct gpucache_event_log *log = numbered_log(0, 5000, 1);
    gpucache_event_log_clear(log);
    cr_assert_eq(gpucache_event_log_count(log), 0);
    gpucache_event_log_record(log, GPUCACHE_EVENT_SEGMENT_MAP, 1, 0x1000, 4096, 7);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_eq(count, 1);
    cr_assert_eq(events[0].action, GPUCACHE_EVENT_SEGMENT_MAP);
    cr_assert_eq(events[0].device, 1);
    cr_assert_eq(events[0].stream, 7);
    cr_assert_eq(events[0].thread, gpucache_event_thread_id());
    cr_assert_gt(events[0].time_ns, UINT64_C(1600000000) * 1000000000u);
    free(events);
    gpucache_event_log_destroy(log);
}

Test(event_log, names_actions_as_pytorch_does)
{
    cr_assert_str_eq(gpucache_event_action_name(GPUCACHE_EVENT_FREE_REQUESTED), "free_requested");
    cr_assert_str_eq(gpucache_event_action_name(GPUCACHE_EVENT_SEGMENT_UNMAP), "segment_unmap");
    cr_assert_str_eq(gpucache_event_action_name(GPUCACHE_EVENT_OOM), "oom");
    cr_assert_str_eq(gpucache_event_action_name(GPUCACHE_EVENT_ACTION_COUNT), "?");
}

/* Events of threads that exited before the copy, each fewer than a chunk so
 * that none was ever published: the copy must read the buffers they left,
 * and later threads reuse those buffers without losing what they hold. */
struct numbered_thread {
    struct gpucache_event_log *log;
    uint64_t first, count;
};

static void *append_numbered(void *argument)
{
    const struct numbered_thread *work = argument;
    for (uint64_t number = work->first; number < work->first + work->count; number++) {
        struct gpucache_event event = {.address = number, .action = GPUCACHE_EVENT_ALLOC};
        gpucache_event_log_append(work->log, &event);
    }
    return NULL;
}

Test(event_log, keeps_the_events_of_threads_that_exited)
{
    struct gpucache_event_log *log = gpucache_event_log_create(0);
    for (uint64_t round = 0; round < 50; round++) {
        struct numbered_thread work = {log, round * 10, 10};
        pthread_t thread;
        pthread_create(&thread, NULL, append_numbered, &work);
        pthread_join(thread, NULL);
    }
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_eq(count, 500, "%zu events of 500", count);
    for (size_t index = 0; index < count; index++)
        cr_assert_eq(events[index].address, index, "event %zu", index);
    free(events);
    gpucache_event_log_destroy(log);
}

/* Threads that append under one lock, as the allocator's threads do, and
 * strictly in turn so that every thread's chunk holds every fourth event:
 * the copy is in the lock's order, across threads and chunk boundaries. */
#define TURN_THREADS 4
#define TURN_EVENTS 3000
static pthread_mutex_t ordering_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ordering_turn = PTHREAD_COND_INITIALIZER;
static uint64_t ordering_next;

struct turn_taker {
    struct gpucache_event_log *log;
    uint64_t turn;
};

static void *append_in_lock_order(void *argument)
{
    const struct turn_taker *taker = argument;
    for (int repeat = 0; repeat < TURN_EVENTS; repeat++) {
        pthread_mutex_lock(&ordering_lock);
        while (ordering_next % TURN_THREADS != taker->turn)
            pthread_cond_wait(&ordering_turn, &ordering_lock);
        struct gpucache_event event = {.address = ordering_next++, .action = GPUCACHE_EVENT_ALLOC};
        gpucache_event_log_append(taker->log, &event);
        pthread_cond_broadcast(&ordering_turn);
        pthread_mutex_unlock(&ordering_lock);
    }
    return NULL;
}

Test(event_log, interleaved_threads_keep_the_global_order)
{
    struct gpucache_event_log *log = gpucache_event_log_create(0);
    pthread_t threads[TURN_THREADS];
    struct turn_taker takers[TURN_THREADS];
    for (int index = 0; index < TURN_THREADS; index++) {
        takers[index] = (struct turn_taker){log, (uint64_t)index};
        pthread_create(&threads[index], NULL, append_in_lock_order, &takers[index]);
    }
    for (int index = 0; index < TURN_THREADS; index++)
        pthread_join(threads[index], NULL);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_eq(count, TURN_THREADS * TURN_EVENTS);
    for (size_t index = 0; index < count; index++)
        cr_assert_eq(events[index].address, index, "event %zu is %lu", index,
                     (unsigned long)events[index].address);
    free(events);
    gpucache_event_log_destroy(log);
}

/* The allocator's events carry clock ticks; what is copied out is wall
 * time again, and ticks a known time apart stay that far apart. */
Test(event_log, turns_ticks_into_wall_time)
{
    struct gpucache_event_log *log = gpucache_event_log_create(0);
    struct gpucache_event event = {.time_ns = gpucache_event_clock(),
                                   .reserved = GPUCACHE_EVENT_TICKS};
    uint64_t wall = gpucache_event_now();
    gpucache_event_log_append(log, &event);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    event.time_ns = gpucache_event_clock();
    gpucache_event_log_append(log, &event);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    cr_assert_eq(count, 2);
    cr_assert_eq(events[0].reserved, 0);
    int64_t off = (int64_t)(events[0].time_ns - wall);
    /* Bounds loose enough for a loaded machine: this checks the conversion,
     * not the scheduler. */
    cr_assert(off > -100000000 && off < 100000000, "%lld ns from the wall clock",
              (long long)off);
    int64_t apart = (int64_t)(events[1].time_ns - events[0].time_ns);
    cr_assert(apart >= 49000000 && apart < 2000000000, "%lld ns apart", (long long)apart);
    free(events);
    gpucache_event_log_destroy(log);
}

/* The allocator's events, one operation at a time: which actions, in which
 * order, with which addresses, sizes and streams. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"
#include "gpucache_event_log.h"

#define MiB ((size_t)1 << 20)
#define STREAM ((gpucache_stream)0xA000)

struct events_fixture {
    struct gpucache_config config;
    struct accounting_driver *driver;
    struct gpucache_allocator *allocator;
    struct gpucache_event_log *log;
};

static void open_fixture(struct events_fixture *f, const char *configuration, uint64_t capacity)
{
    struct gpucache_config_error error;
    gpucache_config_defaults(&f->config);
    cr_assert_eq(gpucache_config_parse(NULL, configuration, &f->config, &error), 0, "%s",
                 error.message);
    f->driver = accounting_driver_create(capacity, 0);
    f->allocator = gpucache_allocator_create(&f->config, accounting_driver_interface(f->driver), 3);
    f->log = gpucache_event_log_create(0);
    gpucache_allocator_set_observer(f->allocator, gpucache_event_log_observe, f->log);
}

static void close_fixture(struct events_fixture *f)
{
    gpucache_allocator_destroy(f->allocator);
    accounting_driver_destroy(f->driver);
    gpucache_event_log_destroy(f->log);
}

/* The events since the last call, checked against `expected` actions. */
static struct gpucache_event *expect_actions(struct events_fixture *f,
                                             const enum gpucache_event_action *expected,
                                             size_t expected_count)
{
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(f->log, -1, &count);
    cr_assert_eq(count, expected_count, "%zu events, expected %zu", count, expected_count);
    for (size_t index = 0; index < count; index++) {
        cr_assert_eq(events[index].action, expected[index], "event %zu is %s, expected %s", index,
                     gpucache_event_action_name(events[index].action),
                     gpucache_event_action_name(expected[index]));
        cr_assert_eq(events[index].device, 3);
    }
    gpucache_event_log_clear(f->log);
    return events;
}

Test(allocator_events, same_stream_free_completes_at_once)
{
    struct events_fixture f;
    open_fixture(&f, "", 1ull << 30);
    uint64_t address;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 3 * MiB, STREAM, &address), 0);
    const enum gpucache_event_action grown[] = {GPUCACHE_EVENT_SEGMENT_ALLOC, GPUCACHE_EVENT_ALLOC};
    struct gpucache_event *events = expect_actions(&f, grown, 2);
    cr_assert_eq(events[0].address, address);
    cr_assert_eq(events[0].size, 20 * MiB, "a 3 MiB request gets a 20 MiB segment");
    cr_assert_eq(events[1].size, 3 * MiB, "alloc carries the requested size");
    cr_assert_eq(events[1].stream, STREAM);
    free(events);
    cr_assert_eq(gpucache_allocator_free(f.allocator, address, GPUCACHE_FREE_STREAM_ORDERED,
                                         STREAM),
                 0);
    const enum gpucache_event_action freed[] = {GPUCACHE_EVENT_FREE_REQUESTED,
                                                GPUCACHE_EVENT_FREE_COMPLETED};
    /* The first free takes the allocator's lock; the second, of the block
     * the front hands out again, only the front's (its lane). */
    for (int round = 0; round < 2; round++) {
        events = expect_actions(&f, freed, 2);
        for (int i = 0; i < 2; i++) {
            cr_assert_eq(events[i].address, address);
            cr_assert_eq(events[i].size, 3 * MiB);
            cr_assert_eq(events[i].stream, STREAM);
        }
        cr_assert_eq(events[0].block_size, 3 * MiB, "free_requested carries the block's bytes");
        cr_assert_eq(events[1].block_size, 0, "free_completed carries none");
        cr_assert_leq(events[0].time_ns, events[1].time_ns);
        free(events);
        if (round == 1)
            break;
        uint64_t again;
        cr_assert_eq(gpucache_allocator_malloc(f.allocator, 3 * MiB, STREAM, &again), 0);
        cr_assert_eq(again, address, "the front serves the block again");
        const enum gpucache_event_action hit[] = {GPUCACHE_EVENT_ALLOC};
        free(expect_actions(&f, hit, 1));
        cr_assert_eq(gpucache_allocator_free(f.allocator, address, GPUCACHE_FREE_STREAM_ORDERED,
                                             STREAM),
                     0);
    }
    uint64_t hits, lane_frees;
    gpucache_allocator_lane_counts(f.allocator, &hits, &lane_frees);
    cr_assert_eq(lane_frees, 1);
    gpucache_allocator_empty_cache(f.allocator);
    const enum gpucache_event_action emptied[] = {GPUCACHE_EVENT_SEGMENT_FREE};
    events = expect_actions(&f, emptied, 1);
    cr_assert_eq(events[0].size, 20 * MiB);
    free(events);
    close_fixture(&f);
}

Test(allocator_events, synchronous_free_completes_after_its_fence)
{
    struct events_fixture f;
    open_fixture(&f, "", 1ull << 30);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t first, second;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 4096, 0, &first), 0);
    gpucache_event_log_clear(f.log);
    cr_assert_eq(gpucache_allocator_free(f.allocator, first, GPUCACHE_FREE_SYNCHRONOUS, 0), 0);
    const enum gpucache_event_action requested[] = {GPUCACHE_EVENT_FREE_REQUESTED};
    free(expect_actions(&f, requested, 1));
    /* The program synchronizes: the pending block becomes reusable. */
    accounting_driver_complete_all(f.driver);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 4096, 0, &second), 0);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(f.log, -1, &count);
    cr_assert_eq(count, 2);
    cr_assert_eq(events[0].action, GPUCACHE_EVENT_FREE_COMPLETED);
    cr_assert_eq(events[0].address, first);
    cr_assert_eq(events[1].action, GPUCACHE_EVENT_ALLOC);
    free(events);
    accounting_driver_hold_fences(f.driver, false);
    close_fixture(&f);
}

Test(allocator_events, out_of_memory_reports_the_device_free_bytes)
{
    struct events_fixture f;
    open_fixture(&f, "", 64 * MiB);
    uint64_t held, refused;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 30 * MiB, 0, &held), 0);
    gpucache_event_log_clear(f.log);
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 50 * MiB, 0, &refused),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(f.log, -1, &count);
    cr_assert_eq(count, 1, "only the oom: nothing was freed or grown");
    cr_assert_eq(events[0].action, GPUCACHE_EVENT_OOM);
    cr_assert_eq(events[0].size, 50 * MiB, "the rounded request");
    cr_assert_eq(events[0].address, 64 * MiB - 30 * MiB, "the device's free bytes");
    free(events);
    close_fixture(&f);
}

Test(allocator_events, expandable_segments_map_and_unmap_page_ranges)
{
    struct events_fixture f;
    open_fixture(&f, "expandable_segments:True", 1ull << 30);
    uint64_t first, second;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 16 * MiB, 0, &first), 0);
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 16 * MiB, 0, &second), 0);
    /* Worked example 2: a page for the first, an adjacent one for the second. */
    const enum gpucache_event_action grown[] = {GPUCACHE_EVENT_SEGMENT_MAP, GPUCACHE_EVENT_ALLOC,
                                                GPUCACHE_EVENT_SEGMENT_MAP, GPUCACHE_EVENT_ALLOC};
    struct gpucache_event *events = expect_actions(&f, grown, 4);
    cr_assert_eq(events[0].address, first);
    cr_assert_eq(events[0].size, 20 * MiB);
    cr_assert_eq(events[2].address, first + 20 * MiB);
    cr_assert_eq(events[2].size, 20 * MiB);
    free(events);
    gpucache_allocator_free(f.allocator, first, GPUCACHE_FREE_STREAM_ORDERED, 0);
    gpucache_allocator_free(f.allocator, second, GPUCACHE_FREE_STREAM_ORDERED, 0);
    gpucache_event_log_clear(f.log);
    gpucache_allocator_empty_cache(f.allocator);
    size_t count;
    events = gpucache_event_log_copy(f.log, -1, &count);
    uint64_t unmapped = 0;
    for (size_t index = 0; index < count; index++) {
        cr_assert_eq(events[index].action, GPUCACHE_EVENT_SEGMENT_UNMAP);
        unmapped += events[index].size;
    }
    cr_assert_eq(unmapped, 40 * MiB, "both pages go back");
    free(events);
    close_fixture(&f);
}

Test(allocator_events, forgetting_segments_reports_them_gone)
{
    struct events_fixture f;
    open_fixture(&f, "", 1ull << 30);
    uint64_t address;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 100, 0, &address), 0);
    gpucache_event_log_clear(f.log);
    gpucache_allocator_abandon(f.allocator);
    const enum gpucache_event_action gone[] = {GPUCACHE_EVENT_FREE_REQUESTED,
                                               GPUCACHE_EVENT_FREE_COMPLETED,
                                               GPUCACHE_EVENT_SEGMENT_FREE};
    struct gpucache_event *events = expect_actions(&f, gone, 3);
    cr_assert_eq(events[0].address, address);
    cr_assert_eq(events[0].size, 100);
    cr_assert_eq(events[2].size, 2 * MiB);
    free(events);
    f.allocator = gpucache_allocator_create(&f.config, accounting_driver_interface(f.driver), 3);
    close_fixture(&f);
}

/* Another thread's events, still in that thread's unpublished chunk when
 * the OOM happens, are in what a snapshot at the OOM copies: they happened
 * before it (the OOM first releases the worker's cached segment). */
struct worker {
    struct events_fixture *f;
    pthread_barrier_t *done; /* the worker waits, alive, until the copy */
    uint64_t address;
};

static void *allocate_then_wait(void *argument)
{
    struct worker *worker = argument;
    cr_assert_eq(gpucache_allocator_malloc(worker->f->allocator, 2 * MiB, STREAM,
                                           &worker->address), 0);
    gpucache_allocator_free(worker->f->allocator, worker->address, GPUCACHE_FREE_STREAM_ORDERED,
                            STREAM);
    pthread_barrier_wait(&worker->done[0]);
    pthread_barrier_wait(&worker->done[1]);
    return NULL;
}

Test(allocator_events, an_oom_copy_holds_a_live_thread_events_before_it)
{
    struct events_fixture f;
    open_fixture(&f, "", 64 * MiB);
    pthread_barrier_t done[2];
    pthread_barrier_init(&done[0], NULL, 2);
    pthread_barrier_init(&done[1], NULL, 2);
    struct worker worker = {&f, done, 0};
    pthread_t thread;
    pthread_create(&thread, NULL, allocate_then_wait, &worker);
    pthread_barrier_wait(&done[0]);
    uint64_t refused;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 100 * MiB, 0, &refused),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    size_t count;
    struct gpucache_event *events = gpucache_event_log_copy(f.log, -1, &count);
    pthread_barrier_wait(&done[1]);
    pthread_join(thread, NULL);
    static const enum gpucache_event_action expected[] = {
        GPUCACHE_EVENT_SEGMENT_ALLOC, GPUCACHE_EVENT_ALLOC, GPUCACHE_EVENT_FREE_REQUESTED,
        GPUCACHE_EVENT_FREE_COMPLETED, GPUCACHE_EVENT_SEGMENT_FREE, GPUCACHE_EVENT_OOM};
    cr_assert_eq(count, 6, "%zu events, expected the worker's 4, the release and the oom", count);
    for (size_t index = 0; index < count; index++)
        cr_assert_eq(events[index].action, expected[index], "event %zu is %s", index,
                     gpucache_event_action_name(events[index].action));
    cr_assert_eq(events[1].address, worker.address);
    cr_assert_neq(events[1].thread, events[5].thread, "two threads recorded them");
    free(events);
    pthread_barrier_destroy(&done[0]);
    pthread_barrier_destroy(&done[1]);
    close_fixture(&f);
}

/* The event log: order, per-device copies, the event limit, clearing. */
#include <criterion/criterion.h>
#include <stdlib.h>

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

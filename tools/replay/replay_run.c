#include "replay_run.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "accounting_driver.h"
#include "final_state.h"
#include "gpucache_allocator.h"
#include "gpucache_report.h"

/* Progress is reported this often; a power of two keeps the check cheap. */
#define PROGRESS_INTERVAL 65536

/* The largest device the smallest-device search tries: 1 PiB. */
#define LARGEST_DEVICE (UINT64_C(1) << 50)

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Records the state after event `index` in its slice of the timeline. */
static void sample(struct replay_timeline *timeline, struct gpucache_allocator *allocator,
                   size_t index, size_t event_count)
{
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(allocator, &stats);
    size_t bucket = (size_t)((double)index * (double)timeline->bucket_count / (double)event_count);
    uint64_t allocated = (uint64_t)stats.allocated_bytes[GPUCACHE_STAT_ALL].current;
    uint64_t reserved = (uint64_t)stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    if (allocated > timeline->allocated[bucket])
        timeline->allocated[bucket] = allocated;
    if (reserved > timeline->reserved[bucket])
        timeline->reserved[bucket] = reserved;
    timeline->buckets_reached = bucket + 1;
}

/* The loop itself: one array lookup per free, nothing else on the side
 * unless a timeline is asked for, so the figure measured is the allocator's
 * cost. */
static void replay_events(const struct replay_trace *trace, struct gpucache_allocator *allocator,
                          uint64_t *address_of_slot, const struct replay_progress *progress,
                          struct replay_timeline *timeline, struct replay_outcome *outcome)
{
    const struct replay_event *events = trace->events;
    const uint64_t *streams = trace->streams;
    for (size_t index = 0; index < trace->event_count; index++) {
        const struct replay_event *event = &events[index];
        gpucache_stream stream = (gpucache_stream)streams[event->stream_index];
        uint64_t *address = &address_of_slot[event->slot];
        gpucache_result result = GPUCACHE_SUCCESS;
        if (event->action == REPLAY_ALLOC) {
            /* A zero-byte request gets no memory in CUDA or PyTorch; its free
             * is skipped below because its address stays 0. */
            *address = 0;
            if (event->size > 0)
                result = gpucache_allocator_malloc(allocator, event->size, stream, address);
        } else if (*address != 0) {
            result =
                gpucache_allocator_free(allocator, *address, GPUCACHE_FREE_STREAM_ORDERED, stream);
        }
        if (timeline)
            sample(timeline, allocator, index, trace->event_count);
        if (result != GPUCACHE_SUCCESS) {
            outcome->failed_event = index;
            outcome->failed_result = result;
            return;
        }
        if (progress && (index & (PROGRESS_INTERVAL - 1)) == PROGRESS_INTERVAL - 1)
            progress->report(progress->context, index + 1, trace->event_count);
    }
    outcome->completed = true;
}

/* The replayed allocator's state and events as a snapshot file. */
static bool write_snapshot(const struct replay_observers *observers,
                           struct gpucache_allocator *allocator, struct gpucache_event_log *log,
                           const struct gpucache_config *config)
{
    if (!log)
        return false;
    int fd = gpucache_report_open(observers->snapshot_path, (long)getpid(), false, "snapshot");
    if (fd < 0)
        return false;
    struct gpucache_snapshot_source source = {
        &allocator, 1, log, config,
        observers->snapshot_settings ? observers->snapshot_settings : "", NULL};
    bool written = gpucache_snapshot_write_allocators(
        fd, gpucache_snapshot_encoding_for_path(observers->snapshot_path), &source);
    gpucache_report_close(fd);
    return written;
}

bool replay_run(const struct replay_trace *trace, const struct gpucache_config *config,
                uint64_t capacity, const struct replay_observers *observers,
                struct replay_outcome *outcome)
{
    static const struct replay_observers none = {0};
    observers = observers ? observers : &none;
    *outcome = (struct replay_outcome){0};
    uint64_t *address_of_slot =
        calloc(trace->slot_count ? trace->slot_count : 1, sizeof *address_of_slot);
    struct accounting_driver *driver = accounting_driver_create(capacity, 0);
    struct gpucache_allocator *allocator =
        driver ? gpucache_allocator_create(config, accounting_driver_interface(driver), 0) : NULL;
    if (!address_of_slot || !allocator) {
        free(address_of_slot);
        if (driver)
            accounting_driver_destroy(driver);
        return false;
    }
    struct gpucache_event_log *log =
        observers->snapshot_path ? gpucache_event_log_create(0) : NULL;
    if (log)
        gpucache_allocator_set_observer(allocator, gpucache_event_log_observe, log);
    const struct replay_progress *progress = observers->progress;
    double start = now_seconds();
    replay_events(trace, allocator, address_of_slot, progress, observers->timeline, outcome);
    outcome->seconds = now_seconds() - start;
    if (progress)
        progress->report(progress->context, trace->event_count, trace->event_count);
    gpucache_allocator_get_stats(allocator, &outcome->stats);
    for (int operation = 0; operation < ACCOUNTING_OPERATION_COUNT; operation++)
        outcome->driver_calls +=
            accounting_driver_calls(driver, (enum accounting_operation)operation);
    bool captured =
        !observers->final_state || replay_final_state_capture(allocator, &outcome->final_state);
    if (observers->snapshot_path)
        outcome->snapshot_failed = !write_snapshot(observers, allocator, log, config);
    gpucache_allocator_set_observer(allocator, NULL, NULL);
    gpucache_event_log_destroy(log);
    gpucache_allocator_destroy(allocator);
    accounting_driver_destroy(driver);
    free(address_of_slot);
    return captured;
}

static bool completes_on(const struct replay_trace *trace, const struct gpucache_config *config,
                         uint64_t capacity, const struct replay_progress *progress, bool *completed)
{
    struct replay_outcome outcome;
    struct replay_observers observers = {.progress = progress};
    if (!replay_run(trace, config, capacity, &observers, &outcome))
        return false;
    *completed = outcome.completed;
    return true;
}

bool replay_find_smallest_device(const struct replay_trace *trace,
                                 const struct gpucache_config *config, uint64_t start,
                                 const struct replay_progress *progress, uint64_t *smallest)
{
    const uint64_t unit = REPLAY_DEVICE_GRANULARITY;
    /* Below the most bytes the program held at once nothing can complete. */
    uint64_t failing = trace->peak_live_bytes ? (trace->peak_live_bytes - 1) / unit * unit : 0;
    uint64_t fitting = (start + unit - 1) / unit * unit;
    if (fitting <= failing)
        fitting = failing + unit;
    bool completed;
    for (;;) {
        if (!completes_on(trace, config, fitting, progress, &completed))
            return false;
        if (completed)
            break;
        failing = fitting;
        if (fitting >= LARGEST_DEVICE) {
            *smallest = 0;
            return true;
        }
        fitting *= 2;
    }
    while (fitting - failing > unit) {
        uint64_t middle = failing + (fitting - failing) / unit / 2 * unit;
        if (!completes_on(trace, config, middle, progress, &completed))
            return false;
        if (completed)
            fitting = middle;
        else
            failing = middle;
    }
    *smallest = fitting;
    return true;
}

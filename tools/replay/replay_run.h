/* Runs a trace through the caching allocator on a simulated device that only
 * counts capacity (the allocator's accounting driver): no GPU, no memory
 * touched, fences complete at once. */
#ifndef GPUCACHE_REPLAY_RUN_H
#define GPUCACHE_REPLAY_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "final_state.h"
#include "gpucache_stats.h"
#include "replay_trace.h"

struct gpucache_config;

/* The granularity of the smallest-device search. */
#define REPLAY_DEVICE_GRANULARITY (UINT64_C(2) << 20)

/* Called every few thousand events (and once at the end) so the command can
 * show progress; `context` is passed through. */
typedef void replay_progress_function(void *context, size_t events_done, size_t events_total);

struct replay_progress {
    replay_progress_function *report;
    void *context;
};

/* Allocated and reserved bytes over the replay, for drawing them: the
 * largest value of each within `bucket_count` equal slices of the events. */
struct replay_timeline {
    size_t bucket_count; /* set by the caller, with the two arrays it sizes */
    uint64_t *allocated;
    uint64_t *reserved;
    size_t buckets_reached; /* slices the replay entered before it ended */
};

/* What a replay records besides its outcome; every member may be NULL/false. */
struct replay_observers {
    const struct replay_progress *progress;
    struct replay_timeline *timeline;
    bool final_state; /* copy the segments into replay_outcome.final_state */
    /* Record the replayed allocator's events and write a PyTorch-format
     * snapshot of its final state to this new file (gpucache_report.h),
     * with `snapshot_settings` as the configuration string it shows. */
    const char *snapshot_path;
    const char *snapshot_settings;
};

struct replay_outcome {
    bool completed;                        /* every event replayed without running out of memory */
    size_t failed_event;                   /* index in trace.events of the request that failed */
    int failed_result;                     /* the allocator's result for it (GPUCACHE_ERROR_*) */
    struct gpucache_stats stats;           /* at the end, or just after the failure */
    double seconds;                        /* wall time of the replay loop alone */
    uint64_t driver_calls;                 /* every call the allocator made to the driver */
    struct replay_final_state final_state; /* when observed; release it */
    bool snapshot_failed;                  /* the snapshot asked for was not written */
};

/* Replays `trace` with `config` on a device of `capacity` bytes. Stops at the
 * first request the allocator cannot serve, which is a result, not an error.
 * `observers` may be NULL. Returns false only when host memory runs out for
 * the allocator or the final state. */
bool replay_run(const struct replay_trace *trace, const struct gpucache_config *config,
                uint64_t capacity, const struct replay_observers *observers,
                struct replay_outcome *outcome);

/* Searches the smallest capacity, a multiple of REPLAY_DEVICE_GRANULARITY, on
 * which the trace completes: upwards from `start` if it fails there, then by
 * bisection, assuming more memory never makes a trace fail. Gives 0 when even
 * 1 PiB is not enough. Returns false only when replay_run does. */
bool replay_find_smallest_device(const struct replay_trace *trace,
                                 const struct gpucache_config *config, uint64_t start,
                                 const struct replay_progress *progress, uint64_t *smallest);

#endif

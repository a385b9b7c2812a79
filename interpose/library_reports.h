/* The reports the configuration asks for (report, summary, trace,
 * trace_csv, snapshot, snapshot_signal): the event log the allocators write
 * into, bypass counts, and writing the files at exit, at an OOM and
 * when the snapshot signal arrives. The allocators are handed down by the
 * layer that owns them; the reports never look them up. */
#ifndef GPUCACHE_INTERPOSE_LIBRARY_REPORTS_H
#define GPUCACHE_INTERPOSE_LIBRARY_REPORTS_H

#include <stdbool.h>

#include "device_registry.h"
#include "gpucache_allocator.h"
#include "gpucache_report.h"

/* The allocator serving each device (NULL where none does), for devices 0
 * to count - 1. */
struct library_reports_allocators {
    struct gpucache_allocator *by_device[GPUCACHE_MAX_DEVICES];
    size_t count;
};

/* A device's allocator was created: attaches the event log when a trace or
 * snapshot is configured. */
void library_reports_allocator_created(struct gpucache_allocator *allocator);

/* One call went to the driver untouched, for `reason`. */
void library_reports_count_bypass(enum gpucache_bypass_reason reason);

/* `allocator` answered out of memory for `size` bytes: prints the
 * oom_message line and writes a snapshot of the `serving` allocators now
 * (before the program frees anything), named like the snapshot with -oom-N
 * added. */
void library_reports_out_of_memory(struct gpucache_allocator *allocator, size_t size,
                                   const struct library_reports_allocators *serving);

/* The snapshot signal arrived: the next hook writes a snapshot (its safe
 * point, device_allocators_safe_point). Async-signal-safe (one store). */
void library_reports_snapshot_requested(void);

/* True once per snapshot signal, for the caller that is to write it. Costs
 * one load when no signal arrived. */
bool library_reports_take_snapshot_request(void);
/* Nonzero while a snapshot signal waits for its safe point (atomic). */
extern int library_reports_snapshot_pending;

/* Writes the snapshot the signal asked for (named with -signal-N). */
void library_reports_signal_snapshot(const struct library_reports_allocators *serving);

/* The process exits: settles the pending frees of the `serving` allocators,
 * then writes the statistics (of each device `device_stats` fills; it
 * answers nonzero for a device without any), the traces and the snapshot
 * the configuration asks for. */
void library_reports_at_exit(const struct library_reports_allocators *serving,
                             int (*device_stats)(int device, struct gpucache_stats *stats));

/* The modes that bypass the cache (passthrough:True, backend:cudaMallocAsync)
 * record their allocations as events too (each driver allocation its own
 * segment), so their traces and charts compare with the cache's. */
void library_reports_bypassed_allocation(int device, uint64_t address, size_t size,
                                         uint64_t stream);
void library_reports_bypassed_free(int device, uint64_t address, size_t size, uint64_t stream);

#endif

/* The reports the configuration asks for (report, summary, trace,
 * trace_csv, snapshot, snapshot_signal): the event log the allocators write
 * into, pass-through counts, and writing the files at exit, at an OOM and
 * when the snapshot signal arrives. */
#ifndef GPUCACHE_INTERPOSE_LIBRARY_REPORTS_H
#define GPUCACHE_INTERPOSE_LIBRARY_REPORTS_H

#include "gpucache_allocator.h"
#include "gpucache_report.h"

/* A device's allocator was created: attaches the event log when a trace or
 * snapshot is configured. */
void library_reports_allocator_created(struct gpucache_allocator *allocator);

/* One call went to the driver untouched, for `reason`. */
void library_reports_count_passthrough(enum gpucache_passthrough_reason reason);

/* `allocator` answered out of memory for `size` bytes: prints the
 * oom_message line and writes a snapshot now (before the program frees
 * anything), named like the snapshot with -oom-N added. */
void library_reports_out_of_memory(struct gpucache_allocator *allocator, size_t size);

/* The snapshot signal arrived: the next safe point writes a snapshot.
 * Async-signal-safe (one atomic store). */
void library_reports_snapshot_requested(void);

/* Called by the hooks outside every lock: writes the snapshot the signal
 * asked for, if it did (named with -signal-N). Costs one load otherwise. */
void library_reports_safe_point(void);

/* Pass-through mode records its allocations as events too (each driver
 * allocation its own segment), so its trace and charts compare with the
 * cache's. */
void library_reports_passthrough_allocation(int device, uint64_t address, size_t size,
                                            uint64_t stream);
void library_reports_passthrough_free(int device, uint64_t address, size_t size,
                                      uint64_t stream);

#endif

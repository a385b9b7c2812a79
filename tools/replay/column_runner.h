/* Runs the replay of every configuration (and its smallest-device search)
 * on up to one thread per processor. Each configuration has its own
 * allocator and simulated device; they share only the trace, read-only, so
 * the results are those of running them one after the other. */
#ifndef GPUCACHE_REPLAY_COLUMN_RUNNER_H
#define GPUCACHE_REPLAY_COLUMN_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay_report.h"

struct gpucache_config;

struct column_run_options {
    uint64_t device_memory;
    bool min_device; /* also search the smallest device */
    bool timelines;  /* record the curves --svg draws */
    bool progress;   /* show progress on stderr (a terminal) */
    /* --snapshot FILE: each column's final state (FILE-N.ext for several) */
    const char *snapshot_path;
};

/* Fills columns[i] from configs[i] for every i < count. False only when host
 * memory ran out for some configuration's allocator or records. */
bool run_columns(const struct replay_trace *trace, const struct gpucache_config *configs,
                 struct replay_column *columns, size_t count,
                 const struct column_run_options *options);

/* The file --snapshot `path` names for column `index` of `count`: `path`
 * itself for one column, else path-N.ext. False when `out` is too small. */
bool column_snapshot_path(const char *path, size_t index, size_t count, char *out, size_t size);

#endif

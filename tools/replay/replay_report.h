/* What `gpucache replay` prints: a side-by-side table with a column per
 * configuration, or the same figures as JSON with PyTorch's stat names. */
#ifndef GPUCACHE_REPLAY_REPORT_H
#define GPUCACHE_REPLAY_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "replay_run.h"
#include "replay_trace.h"

/* One configuration's results. */
struct replay_column {
    const char *label;         /* the --conf string, or "default" */
    const char *configuration; /* the --conf string, or "" for the defaults */
    struct replay_outcome outcome;
    bool searched;                   /* --min-device ran */
    uint64_t smallest_device;        /* its answer; 0 when nothing up to 1 PiB fits */
    struct replay_timeline timeline; /* filled only for --svg */
};

struct replay_report {
    const char *trace_path;
    const struct replay_trace *trace;
    uint64_t device_memory;
    const struct replay_column *columns;
    size_t column_count;
};

/* Writes the human-readable table, then one line per configuration that ran
 * out of memory naming the request and the state at that moment. */
void replay_print_table(FILE *out, const struct replay_report *report);

/* Writes the report as one JSON object. */
void replay_print_json(FILE *out, const struct replay_report *report);

/* `bytes` with a binary unit and two decimals ("128.00 MiB"). Returns `buffer`. */
const char *replay_format_bytes(uint64_t bytes, char *buffer, size_t size);

#endif

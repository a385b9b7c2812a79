/* The library's own trace (`trace:` in the configuration) as a replay
 * input. Kept out of the trace readers, which stand alone: this one needs
 * report/'s reader. */
#ifndef GPUCACHE_COMPACT_TRACE_H
#define GPUCACHE_COMPACT_TRACE_H

#include <stdbool.h>

#include "replay_trace.h"

/* True when the file at `path` starts as the library's trace does. */
bool compact_trace_file(const char *path);

/* Loads the events of `device` (or of the only device there is, when
 * `device` is negative) by way of the RMM CSV its `trace_csv:` twin would
 * hold, so both files of one run replay alike; false with `error`
 * otherwise. */
bool compact_trace_load(const char *path, int device, struct replay_trace *trace,
                        struct read_error *error);

#endif

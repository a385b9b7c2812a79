/* Reads RMM's replay log (logging_resource_adaptor): a header
 * `Thread,Time,Action,Pointer,Size,Stream` then one row per allocate, free
 * (or deallocate) and allocate failure. */
#ifndef GPUCACHE_REPLAY_RMM_CSV_READER_H
#define GPUCACHE_REPLAY_RMM_CSV_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "replay_trace.h"

#define RMM_CSV_HEADER "Thread,Time,Action,Pointer,Size,Stream"

/* Parses `length` bytes of CSV text into `trace`. On failure the trace is
 * empty and `error` holds "line N: <problem>". */
bool rmm_csv_read(const char *text, size_t length, struct replay_trace *trace,
                  struct read_error *error);

#endif

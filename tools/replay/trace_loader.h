/* Opens a trace file and reads it with the reader its content calls for: a
 * pickle (first byte 0x80) or a JSON object is a PyTorch snapshot, anything
 * else RMM's CSV. */
#ifndef GPUCACHE_REPLAY_TRACE_LOADER_H
#define GPUCACHE_REPLAY_TRACE_LOADER_H

#include <stdbool.h>

#include "replay_trace.h"

/* The whole file in one buffer (the snapshot readers' strings point into
 * it), followed by a NUL not counted in `length`; false with the system's
 * reason in `error`. */
bool trace_read_file(const char *path, uint8_t **data, size_t *length, struct read_error *error);

/* Reads `path` into `trace`; `device` picks a snapshot's device
 * (SNAPSHOT_ANY_DEVICE for the first with entries). On failure `error` holds
 * "<position>: <problem>" or, when the file cannot be read, the system's
 * reason. */
bool trace_load(const char *path, int device, struct replay_trace *trace,
                struct read_error *error);

#endif

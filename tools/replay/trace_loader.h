/* Opens a trace file and reads it with the reader its content calls for: a
 * pickle (first byte 0x80) or a JSON object is a PyTorch snapshot, anything
 * else RMM's CSV. */
#ifndef GPUCACHE_REPLAY_TRACE_LOADER_H
#define GPUCACHE_REPLAY_TRACE_LOADER_H

#include <stdbool.h>

#include "replay_trace.h"

/* Reads `path` into `trace`; `device` picks a snapshot's device
 * (SNAPSHOT_ANY_DEVICE for the first with entries). On failure `error` holds
 * "<position>: <problem>" or, when the file cannot be read, the system's
 * reason. */
bool trace_load(const char *path, int device, struct replay_trace *trace,
                struct replay_error *error);

#endif

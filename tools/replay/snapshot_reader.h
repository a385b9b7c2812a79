/* Reads a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) into a
 * replay trace: the alloc and free entries of one device's trace, plus the
 * allocations its final state shows alive that the trace never made.
 *
 * Which entry is the free: free_completed, the moment PyTorch's allocator
 * got the block back (after the events of other streams that used it), since
 * the replay has no record of those other streams and must not hand the
 * block out earlier than PyTorch could. A trace recorded without
 * free_completed entries (skip_actions) falls back to free_requested. */
#ifndef GPUCACHE_REPLAY_SNAPSHOT_READER_H
#define GPUCACHE_REPLAY_SNAPSHOT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay_trace.h"

/* Any device: the lowest-numbered one whose trace has entries. */
#define SNAPSHOT_ANY_DEVICE (-1)

/* True when `data` looks like a snapshot: a pickle (first byte 0x80) or a
 * JSON object (first byte '{' after any byte-order mark and white space). */
bool snapshot_recognised(const uint8_t *data, size_t length);

/* Decodes the snapshot in `data` (a pickle, or JSON of the same structure)
 * and builds the trace of `device`. On failure `error` holds
 * "<position>: <problem>" (a byte offset for decoding errors, a
 * path such as device_traces[0][12] for content errors). */
bool snapshot_read(const uint8_t *data, size_t length, int device, struct replay_trace *trace,
                   struct read_error *error);

#endif

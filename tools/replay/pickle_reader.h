/* A reader for the data subset of Python's pickle format (protocols 2 to 5):
 * dicts, lists, tuples, integers of any size (those beyond 64 bits kept as
 * too wide), floats, strings, bytes,
 * booleans and None, with the memo. It never imports or calls anything:
 * every opcode that would (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
 * NEWOBJ, ...) is refused, so third-party snapshot files are safe to read. */
#ifndef GPUCACHE_REPLAY_PICKLE_READER_H
#define GPUCACHE_REPLAY_PICKLE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data_tree.h"
#include "replay_trace.h"

/* Reads the pickle in `data`. On failure `error` holds "byte N: <problem>"
 * and the document is empty. */
bool pickle_read(const uint8_t *data, size_t length, struct data_document *document,
                 struct read_error *error);

#define PICKLE_MAX_SKIPPED_KEYS 8

/* pickle_read for a caller that never reads the values stored in dicts under
 * any of `skipped_keys` (at most PICKLE_MAX_SKIPPED_KEYS strings): such a
 * value may be left as an empty container of its kind, shared with other
 * skipped values, instead of being built (a snapshot's stack frames are most
 * of its opcodes). The file is still checked opcode by opcode as
 * pickle_read checks it, with the same errors, and every other value in the
 * document is what pickle_read gives. */
bool pickle_read_skipping(const uint8_t *data, size_t length, const char *const *skipped_keys,
                          size_t skipped_key_count, struct data_document *document,
                          struct read_error *error);

#endif

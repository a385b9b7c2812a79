/* A JSON reader (RFC 8259) into the value tree, for snapshots written as JSON
 * (the form current memory_viz builds read, and the one gpucache writes).
 * Integers that fit in 64 bits become ints, other numbers floats. */
#ifndef GPUCACHE_JSON_READER_H
#define GPUCACHE_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "data_tree.h"
#include "read_error.h"

/* Reads the JSON text in `text`. On failure `error` holds "byte N: <problem>"
 * and the document is empty. */
bool json_read(const char *text, size_t length, struct data_document *document,
               struct read_error *error);

#endif

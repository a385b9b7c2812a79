/* A reader for the data subset of Python's pickle format (protocols 2 to 5):
 * dicts, lists, tuples, integers up to 64 bits, floats, strings, bytes,
 * booleans and None, with the memo. It never imports or calls anything:
 * every opcode that would (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
 * NEWOBJ, ...) is refused, so third-party snapshot files are safe to read. */
#ifndef GPUCACHE_REPLAY_PICKLE_READER_H
#define GPUCACHE_REPLAY_PICKLE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay_trace.h"

enum pickle_kind {
    PICKLE_NONE,
    PICKLE_BOOL,
    PICKLE_INT,
    PICKLE_FLOAT,
    PICKLE_STRING,
    PICKLE_BYTES,
    PICKLE_LIST,
    PICKLE_TUPLE,
    PICKLE_DICT,
};

struct pickle_value {
    enum pickle_kind kind;
    union {
        bool boolean;
        int64_t integer;
        double real;
        struct {
            const char *bytes; /* points into the input, not NUL-terminated */
            size_t length;
        } text;
        struct {
            /* Lists and tuples: `count` items. Dicts: `count` pairs, stored
             * as key, value, key, value... */
            struct pickle_value **items;
            size_t count;
            size_t capacity;
        } sequence;
    };
};

struct pickle_chunk;

/* The value tree of one pickle; strings point into the input buffer, which
 * must outlive the document. */
struct pickle_document {
    struct pickle_value *root;
    struct pickle_chunk *chunks;
};

/* Reads the pickle in `data`. On failure `error` holds "byte N: <problem>"
 * and the document is empty. */
bool pickle_read(const uint8_t *data, size_t length, struct pickle_document *document,
                 struct replay_error *error);

/* Frees every value of the document. */
void pickle_document_destroy(struct pickle_document *document);

/* The value stored under the string key `key` in `dict` (the last one, as
 * Python keeps), or NULL when absent or when `dict` is not a dict. */
const struct pickle_value *pickle_dict_get(const struct pickle_value *dict, const char *key);

/* True when `value` is a string equal to `text`. */
bool pickle_string_is(const struct pickle_value *value, const char *text);

/* The Python type name of the value's kind ("dict", "int", ...), for messages. */
const char *pickle_kind_name(enum pickle_kind kind);

#endif

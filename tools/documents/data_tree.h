/* The value tree a snapshot file decodes to, whichever its encoding (pickle
 * or JSON): Python's data types, nothing executable. Values live in a
 * document and are freed with it. */
#ifndef GPUCACHE_DATA_TREE_H
#define GPUCACHE_DATA_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum data_kind {
    DATA_NONE,
    DATA_BOOL,
    DATA_INT,
    DATA_FLOAT,
    DATA_STRING,
    DATA_BYTES,
    DATA_LIST,
    DATA_TUPLE,
    DATA_DICT,
};

struct data_value {
    enum data_kind kind;
    /* DATA_INT outside the int64_t range (pickles and JSON hold integers of
     * any size, e.g. a frame's line 2^64 - 1): `integer` then holds no value,
     * and readers refuse it only in the fields they use. */
    bool too_wide;
    union {
        bool boolean;
        int64_t integer;
        double real;
        struct {
            const char *bytes; /* not NUL-terminated; in the input or the document */
            size_t length;
        } text;
        struct {
            /* Lists and tuples: `count` items. Dicts: `count` pairs, stored
             * as key, value, key, value... */
            struct data_value **items;
            size_t count;
            size_t capacity;
        } sequence;
    };
};

struct data_chunk;
struct data_text_chunk;
struct data_item_chunk;

/* A decoded file. Strings may point into the input buffer, which must then
 * outlive the document. */
struct data_document {
    struct data_value *root;
    struct data_chunk *chunks;
    struct data_text_chunk *texts;
    struct data_item_chunk *items; /* the containers' item arrays */
};

/* A new zeroed value of `kind`, owned by the document; NULL when host memory
 * runs out. */
struct data_value *data_new(struct data_document *document, enum data_kind kind);

/* Appends `count` items to a list or tuple of the document, or count / 2
 * pairs to a dict. False when host memory runs out. */
bool data_append(struct data_document *document, struct data_value *container,
                 struct data_value *const *items, size_t count);

/* A copy of `length` bytes owned by the document (for decoded text that is
 * not in the input as is); NULL when host memory runs out. */
char *data_store_text(struct data_document *document, const char *bytes, size_t length);

/* Frees every value of the document and empties it. */
void data_document_destroy(struct data_document *document);

/* The value stored under the string key `key` in `dict` (the last one, as
 * Python keeps), or NULL when absent or when `dict` is not a dict. */
const struct data_value *data_dict_get(const struct data_value *dict, const char *key);

/* True when `value` is a string equal to `text`. */
bool data_string_is(const struct data_value *value, const char *text);

/* The Python type name of the value's kind ("dict", "int", ...), for messages. */
const char *data_kind_name(enum data_kind kind);

#endif

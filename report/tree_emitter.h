/* One description of a nested value (dicts, lists, strings, numbers), two
 * encodings: JSON and pickle. The snapshot writer walks its data once and
 * calls an emitter; which encoding comes out depends on the emitter. */
#ifndef GPUCACHE_TREE_EMITTER_H
#define GPUCACHE_TREE_EMITTER_H

#include <stdbool.h>
#include <stdint.h>

#include "report_output.h"

#define TREE_EMITTER_MAX_DEPTH 16

struct tree_emitter {
    const struct tree_emitter_encoding *encoding;
    struct report_output *output;
    int depth;
    bool first[TREE_EMITTER_MAX_DEPTH]; /* JSON: no comma before the first item */
    bool after_key;                     /* JSON: the next value completes a dict item */
};

struct tree_emitter_encoding {
    void (*begin_dict)(struct tree_emitter *emitter);
    void (*end_dict)(struct tree_emitter *emitter);
    void (*begin_list)(struct tree_emitter *emitter);
    void (*end_list)(struct tree_emitter *emitter);
    void (*key)(struct tree_emitter *emitter, const char *key); /* before each dict value */
    void (*signed_integer)(struct tree_emitter *emitter, int64_t value);
    void (*unsigned_integer)(struct tree_emitter *emitter, uint64_t value);
    void (*real)(struct tree_emitter *emitter, double value);
    void (*string)(struct tree_emitter *emitter, const char *value);
    void (*boolean)(struct tree_emitter *emitter, bool value);
};

/* JSON (RFC 8259) and pickle protocol 2 limited to memory_viz's opcodes. */
extern const struct tree_emitter_encoding tree_emitter_json;
extern const struct tree_emitter_encoding tree_emitter_pickle;

/* Starts a document (the pickle's PROTO header). */
void tree_emitter_begin(struct tree_emitter *emitter, const struct tree_emitter_encoding *encoding,
                        struct report_output *output);

/* Ends the document (the pickle's STOP, JSON's final newline). */
void tree_emitter_end(struct tree_emitter *emitter);

#endif

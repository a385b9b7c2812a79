#include "data_tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_VALUES 4096

struct data_chunk {
    struct data_chunk *next;
    size_t used;
    struct data_value values[CHUNK_VALUES];
};

struct data_text_chunk {
    struct data_text_chunk *next;
    char bytes[]; /* one stored text */
};

/* Item arrays come from chunks the document frees at once: a snapshot
 * builds a container per frame and per entry, and a malloc and free each
 * cost more than the decoding around them. A container that outgrows its
 * array moves to a larger one and leaves the old one unused, at most
 * doubling what the items take. */
#define CHUNK_ITEMS 8192

struct data_item_chunk {
    struct data_item_chunk *next;
    size_t used;
    size_t capacity;
    struct data_value *items[];
};

static struct data_value **items_new(struct data_document *document, size_t count)
{
    struct data_item_chunk *chunk = document->items;
    if (chunk && chunk->capacity - chunk->used >= count) {
        struct data_value **items = chunk->items + chunk->used;
        chunk->used += count;
        return items;
    }
    /* Large arrays get a chunk of their own behind the current one, which
     * keeps serving small ones. */
    bool own = count > CHUNK_ITEMS / 4;
    size_t capacity = own ? count : CHUNK_ITEMS;
    if (capacity > (SIZE_MAX - sizeof *chunk) / sizeof chunk->items[0])
        return NULL;
    struct data_item_chunk *fresh = malloc(sizeof *fresh + capacity * sizeof fresh->items[0]);
    if (!fresh)
        return NULL;
    fresh->used = count;
    fresh->capacity = capacity;
    if (own && chunk) {
        fresh->next = chunk->next;
        chunk->next = fresh;
    } else {
        fresh->next = chunk;
        document->items = fresh;
    }
    return fresh->items;
}

/* Out of line: data_new, once per value of a document, then saves no
 * registers for the call. */
static __attribute__((noinline)) struct data_chunk *chunk_new(struct data_document *document)
{
    struct data_chunk *chunk = malloc(sizeof *chunk);
    if (!chunk)
        return NULL;
    chunk->next = document->chunks;
    chunk->used = 0;
    document->chunks = chunk;
    return chunk;
}

struct data_value *data_new(struct data_document *document, enum data_kind kind)
{
    struct data_chunk *chunk = document->chunks;
    if (__builtin_expect(!chunk || chunk->used == CHUNK_VALUES, 0) &&
        !(chunk = chunk_new(document)))
        return NULL;
    struct data_value *value = &chunk->values[chunk->used++];
    memset(value, 0, sizeof *value);
    value->kind = kind;
    return value;
}

bool data_append(struct data_document *document, struct data_value *container,
                 struct data_value *const *items, size_t count)
{
    bool dict = container->kind == DATA_DICT;
    size_t stored = dict ? container->sequence.count * 2 : container->sequence.count;
    if (count > SIZE_MAX / 4 - stored)
        return false;
    size_t needed = stored + count;
    if (needed > container->sequence.capacity) {
        size_t capacity = container->sequence.capacity * 2;
        if (capacity < needed)
            capacity = needed;
        struct data_value **grown = items_new(document, capacity);
        if (!grown)
            return false;
        if (stored > 0)
            memcpy(grown, container->sequence.items, stored * sizeof *grown);
        container->sequence.items = grown;
        container->sequence.capacity = capacity;
    }
    if (count > 0)
        memcpy(container->sequence.items + stored, items, count * sizeof *items);
    container->sequence.count += dict ? count / 2 : count;
    return true;
}

char *data_store_text(struct data_document *document, const char *bytes, size_t length)
{
    struct data_text_chunk *text = malloc(sizeof *text + length + 1);
    if (!text)
        return NULL;
    memcpy(text->bytes, bytes, length);
    text->bytes[length] = '\0';
    text->next = document->texts;
    document->texts = text;
    return text->bytes;
}

void data_document_destroy(struct data_document *document)
{
    struct data_chunk *chunk = document->chunks;
    while (chunk) {
        struct data_chunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    struct data_item_chunk *items = document->items;
    while (items) {
        struct data_item_chunk *next = items->next;
        free(items);
        items = next;
    }
    struct data_text_chunk *text = document->texts;
    while (text) {
        struct data_text_chunk *next = text->next;
        free(text);
        text = next;
    }
    *document = (struct data_document){0};
}

/* Whether `value` is the string `text` of `length` bytes; most comparisons
 * fail at the length or the first byte. */
static inline bool string_equals(const struct data_value *value, const char *text, size_t length)
{
    return value && value->kind == DATA_STRING && value->text.length == length &&
           (length == 0 || value->text.bytes[0] == text[0]) &&
           memcmp(value->text.bytes, text, length) == 0;
}

const struct data_value *data_dict_get(const struct data_value *dict, const char *key)
{
    if (!dict || dict->kind != DATA_DICT)
        return NULL;
    /* Snapshot dicts hold a handful of keys: a scan with the key's length
     * taken once beats hashing them. */
    size_t length = strlen(key);
    for (size_t pair = dict->sequence.count; pair-- > 0;)
        if (string_equals(dict->sequence.items[2 * pair], key, length))
            return dict->sequence.items[2 * pair + 1];
    return NULL;
}

bool data_string_is(const struct data_value *value, const char *text)
{
    /* The first byte decides most comparisons: no strlen for those. */
    if (value && value->kind == DATA_STRING && value->text.length > 0 &&
        value->text.bytes[0] != text[0])
        return false;
    return string_equals(value, text, strlen(text));
}

const char *data_kind_name(enum data_kind kind)
{
    static const char *const names[] = {
        [DATA_NONE] = "None",   [DATA_BOOL] = "bool",   [DATA_INT] = "int",
        [DATA_FLOAT] = "float", [DATA_STRING] = "str",  [DATA_BYTES] = "bytes",
        [DATA_LIST] = "list",   [DATA_TUPLE] = "tuple", [DATA_DICT] = "dict",
    };
    return names[kind];
}

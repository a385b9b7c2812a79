#include "data_tree.h"

#include <stdlib.h>
#include <string.h>

#include "growable_array.h"

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

struct data_value *data_new(struct data_document *document, enum data_kind kind)
{
    struct data_chunk *chunk = document->chunks;
    if (!chunk || chunk->used == CHUNK_VALUES) {
        chunk = malloc(sizeof *chunk);
        if (!chunk)
            return NULL;
        chunk->next = document->chunks;
        chunk->used = 0;
        document->chunks = chunk;
    }
    struct data_value *value = &chunk->values[chunk->used++];
    memset(value, 0, sizeof *value);
    value->kind = kind;
    return value;
}

bool data_append(struct data_value *container, struct data_value *const *items, size_t count)
{
    bool dict = container->kind == DATA_DICT;
    size_t stored = dict ? container->sequence.count * 2 : container->sequence.count;
    if (!growable_array_reserve((void **)&container->sequence.items, &container->sequence.capacity,
                                stored + count, sizeof *container->sequence.items))
        return false;
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
        for (size_t index = 0; index < chunk->used; index++) {
            enum data_kind kind = chunk->values[index].kind;
            if (kind == DATA_LIST || kind == DATA_TUPLE || kind == DATA_DICT)
                free(chunk->values[index].sequence.items);
        }
        free(chunk);
        chunk = next;
    }
    struct data_text_chunk *text = document->texts;
    while (text) {
        struct data_text_chunk *next = text->next;
        free(text);
        text = next;
    }
    *document = (struct data_document){0};
}

const struct data_value *data_dict_get(const struct data_value *dict, const char *key)
{
    if (!dict || dict->kind != DATA_DICT)
        return NULL;
    /* Snapshot dicts hold a handful of keys: a scan that compares lengths
     * first beats hashing them. */
    size_t length = strlen(key);
    for (size_t pair = dict->sequence.count; pair-- > 0;) {
        const struct data_value *name = dict->sequence.items[2 * pair];
        if (name->kind == DATA_STRING && name->text.length == length &&
            memcmp(name->text.bytes, key, length) == 0)
            return dict->sequence.items[2 * pair + 1];
    }
    return NULL;
}

bool data_string_is(const struct data_value *value, const char *text)
{
    return value && value->kind == DATA_STRING && value->text.length == strlen(text) &&
           memcmp(value->text.bytes, text, value->text.length) == 0;
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

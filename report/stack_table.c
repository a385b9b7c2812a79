/* The stack table: every distinct stack stored once, in chunks that are
 * never moved (so the frames a lookup returns stay valid), found through an
 * open-addressing table of ids. Growth allocates; a stack seen before does
 * not. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_stacks.h"

/* Frames per storage chunk: 512 KiB, a few thousand stacks. */
#define CHUNK_FRAMES 65536

struct chunk {
    struct chunk *next;
    size_t used;
    uintptr_t frames[CHUNK_FRAMES];
};

struct stack {
    const uintptr_t *frames;
    uint32_t depth;
    uint64_t hash;
};

struct gpucache_stack_table {
    pthread_mutex_t mutex;
    struct chunk *chunks; /* newest first */
    struct stack *stacks; /* index: id - 1 */
    size_t count;
    size_t capacity;
    uint32_t *slots; /* open addressing; 0: empty */
    size_t slot_count; /* a power of two, at least twice count */
};

struct gpucache_stack_table *gpucache_stack_table_create(void)
{
    struct gpucache_stack_table *table = calloc(1, sizeof *table);
    if (table)
        pthread_mutex_init(&table->mutex, NULL);
    return table;
}

void gpucache_stack_table_destroy(struct gpucache_stack_table *table)
{
    if (!table)
        return;
    while (table->chunks) {
        struct chunk *next = table->chunks->next;
        free(table->chunks);
        table->chunks = next;
    }
    free(table->stacks);
    free(table->slots);
    pthread_mutex_destroy(&table->mutex);
    free(table);
}

/* One multiply-xorshift round per frame: return addresses differ in their
 * low bits, which the multiply carries up into the bits the table uses. */
static uint64_t hash_frames(const uintptr_t *frames, size_t depth)
{
    uint64_t hash = depth;
    for (size_t index = 0; index < depth; index++) {
        hash = (hash ^ frames[index]) * UINT64_C(0x9e3779b97f4a7c15);
        hash ^= hash >> 29;
    }
    return hash;
}

static bool same_stack(const struct stack *stack, uint64_t hash, const uintptr_t *frames,
                       size_t depth)
{
    return stack->hash == hash && stack->depth == depth &&
           memcmp(stack->frames, frames, depth * sizeof *frames) == 0;
}

static bool grow_slots(struct gpucache_stack_table *table)
{
    size_t slot_count = table->slot_count ? table->slot_count * 2 : 1024;
    uint32_t *slots = calloc(slot_count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t index = 0; index < table->count; index++) {
        size_t slot = (size_t)table->stacks[index].hash & (slot_count - 1);
        while (slots[slot] != 0)
            slot = (slot + 1) & (slot_count - 1);
        slots[slot] = (uint32_t)(index + 1);
    }
    free(table->slots);
    table->slots = slots;
    table->slot_count = slot_count;
    return true;
}

static const uintptr_t *store_frames(struct gpucache_stack_table *table, const uintptr_t *frames,
                                     size_t depth)
{
    struct chunk *chunk = table->chunks;
    if (!chunk || chunk->used + depth > CHUNK_FRAMES) {
        chunk = malloc(sizeof *chunk);
        if (!chunk)
            return NULL;
        chunk->used = 0;
        chunk->next = table->chunks;
        table->chunks = chunk;
    }
    uintptr_t *stored = chunk->frames + chunk->used;
    memcpy(stored, frames, depth * sizeof *frames);
    chunk->used += depth;
    return stored;
}

static uint32_t add_stack(struct gpucache_stack_table *table, uint64_t hash,
                          const uintptr_t *frames, size_t depth, size_t slot)
{
    if (table->count == UINT32_MAX - 1)
        return 0;
    if (table->count == table->capacity) {
        size_t capacity = table->capacity ? table->capacity * 2 : 256;
        struct stack *stacks = realloc(table->stacks, capacity * sizeof *stacks);
        if (!stacks)
            return 0;
        table->stacks = stacks;
        table->capacity = capacity;
    }
    const uintptr_t *stored = store_frames(table, frames, depth);
    if (!stored)
        return 0;
    table->stacks[table->count] = (struct stack){stored, (uint32_t)depth, hash};
    uint32_t id = (uint32_t)++table->count;
    table->slots[slot] = id;
    return id;
}

uint32_t gpucache_stack_table_intern(struct gpucache_stack_table *table, const uintptr_t *frames,
                                     size_t depth)
{
    if (!table || depth == 0)
        return 0;
    if (depth > GPUCACHE_STACK_MAX_FRAMES)
        depth = GPUCACHE_STACK_MAX_FRAMES;
    uint64_t hash = hash_frames(frames, depth);
    pthread_mutex_lock(&table->mutex);
    uint32_t id = 0;
    if (2 * (table->count + 1) > table->slot_count && !grow_slots(table))
        goto done;
    size_t mask = table->slot_count - 1;
    for (size_t slot = (size_t)hash & mask;; slot = (slot + 1) & mask) {
        uint32_t found = table->slots[slot];
        if (found == 0) {
            id = add_stack(table, hash, frames, depth, slot);
            break;
        }
        if (same_stack(&table->stacks[found - 1], hash, frames, depth)) {
            id = found;
            break;
        }
    }
done:
    pthread_mutex_unlock(&table->mutex);
    return id;
}

size_t gpucache_stack_table_get(struct gpucache_stack_table *table, uint32_t id,
                                const uintptr_t **frames)
{
    *frames = NULL;
    if (!table || id == 0)
        return 0;
    pthread_mutex_lock(&table->mutex);
    size_t depth = 0;
    if (id <= table->count) {
        *frames = table->stacks[id - 1].frames;
        depth = table->stacks[id - 1].depth;
    }
    pthread_mutex_unlock(&table->mutex);
    return depth;
}

size_t gpucache_stack_table_count(struct gpucache_stack_table *table)
{
    pthread_mutex_lock(&table->mutex);
    size_t count = table->count;
    pthread_mutex_unlock(&table->mutex);
    return count;
}

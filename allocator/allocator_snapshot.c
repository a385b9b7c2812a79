/* gpucache_allocator_visit_segments: the segments and blocks a memory
 * snapshot lists. Every block is in exactly one collection (address map,
 * free trees, epochs, retained list); the first block of each segment chain
 * leads to the rest. */
#include <stdlib.h>

#include "allocator_internal.h"

struct heads {
    struct block **items;
    size_t count;
    size_t capacity;
    bool out_of_memory;
};

static void add_if_head(struct heads *heads, struct block *block)
{
    if (block->prev != NULL || heads->out_of_memory)
        return;
    if (heads->count == heads->capacity) {
        size_t capacity = heads->capacity ? heads->capacity * 2 : 64;
        struct block **items = realloc(heads->items, capacity * sizeof *items);
        if (items == NULL) {
            heads->out_of_memory = true;
            return;
        }
        heads->items = items;
        heads->capacity = capacity;
    }
    heads->items[heads->count++] = block;
}

static void add_list(struct heads *heads, struct block *list)
{
    for (struct block *block = list; block != NULL; block = block->list_next)
        add_if_head(heads, block);
}

static void add_stream_state(struct heads *heads, const struct stream_state *state)
{
    add_list(heads, state->open.first);
    for (const struct epoch *epoch = state->oldest; epoch != NULL; epoch = epoch->next)
        add_list(heads, epoch->first);
}

static int compare_addresses(const void *a, const void *b)
{
    uint64_t x = (*(struct block *const *)a)->address;
    uint64_t y = (*(struct block *const *)b)->address;
    return (x > y) - (x < y);
}

static enum gpucache_block_state snapshot_state(const struct block *block)
{
    switch (block->state) {
    case BLOCK_ALLOCATED: return GPUCACHE_BLOCK_ACTIVE_ALLOCATED;
    case BLOCK_PENDING: return GPUCACHE_BLOCK_ACTIVE_PENDING_FREE;
    default: return GPUCACHE_BLOCK_INACTIVE;
    }
}

/* Fills `info` for the segment that `head` starts; `blocks` has room for
 * every block of the chain. */
static void describe_segment(const struct block *head, struct gpucache_block_info *blocks,
                             struct gpucache_segment_info *info)
{
    *info = (struct gpucache_segment_info){
        .address = head->segment->base,
        .stream = head->segment->stream,
        .small_pool = head->segment->pool == POOL_SMALL,
        .expandable = head->segment->kind == SEGMENT_EXPANDABLE,
        .blocks = blocks,
    };
    for (const struct block *block = head; block != NULL; block = block->next) {
        struct gpucache_block_info *out = &blocks[info->block_count++];
        *out = (struct gpucache_block_info){block->address, block->size, block->requested_size,
                                            snapshot_state(block)};
        info->total_size += block->size;
        if (out->state != GPUCACHE_BLOCK_INACTIVE) {
            info->active_size += block->size;
            info->requested_size += block->requested_size;
        }
        if (out->state == GPUCACHE_BLOCK_ACTIVE_ALLOCATED)
            info->allocated_size += block->size;
    }
}

bool gpucache_allocator_visit_segments(struct gpucache_allocator *allocator,
                                       void (*visit)(void *context,
                                                     const struct gpucache_segment_info *segment),
                                       void *context)
{
    pthread_mutex_lock(&allocator->mutex);
    struct heads heads = {0};
    const struct block_map *map = &allocator->allocated;
    for (size_t i = 0; i < map->capacity; i++)
        if (map->slots[i].address != 0)
            add_if_head(&heads, map->slots[i].block);
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks)
            add_if_head(&heads, block);
    }
    add_stream_state(&heads, &allocator->all_streams);
    for (size_t i = 0; i < allocator->stream_count; i++)
        add_stream_state(&heads, allocator->streams[i]);
    add_list(&heads, allocator->retained);

    struct gpucache_block_info *blocks = NULL;
    if (!heads.out_of_memory)
        blocks = malloc((allocator->store.total_blocks + 1) * sizeof *blocks);
    bool ok = !heads.out_of_memory && blocks != NULL;
    if (ok) {
        if (heads.count > 1)
            qsort(heads.items, heads.count, sizeof heads.items[0], compare_addresses);
        for (size_t i = 0; i < heads.count; i++) {
            struct gpucache_segment_info info;
            describe_segment(heads.items[i], blocks, &info);
            visit(context, &info);
        }
    }
    free(blocks);
    free(heads.items);
    pthread_mutex_unlock(&allocator->mutex);
    return ok;
}

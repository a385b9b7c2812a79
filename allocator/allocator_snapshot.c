/* gpucache_allocator_visit_segments: the segments and blocks a memory
 * snapshot lists. Every block is in exactly one collection (address map,
 * free trees, epochs, retained list); the first block of each segment chain
 * leads to the rest. */
#include <stdlib.h>

#include "allocator_internal.h"
#include "expandable_segments.h"

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

/* Fills `info` with the blocks from `first` on, up to the end of the
 * segment or, in an expandable segment, of its mapped range: a snapshot
 * lists each mapped range as a segment, as PyTorch does. Returns the block
 * after it (NULL at the end of the chain). */
static const struct block *describe_segment(const struct block *first,
                                            struct gpucache_block_info *blocks,
                                            struct gpucache_segment_info *info)
{
    *info = (struct gpucache_segment_info){
        .address = first->address,
        .stream = first->segment->stream,
        .small_pool = first->segment->pool == POOL_SMALL,
        .expandable = first->segment->kind == SEGMENT_EXPANDABLE,
        .blocks = blocks,
    };
    const struct block *block = first;
    for (; block != NULL && block->state != BLOCK_UNMAPPED; block = block->next) {
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
    return block;
}

/* Calls `visit` for each mapped range of the chain that `head` starts. */
static void visit_chain(const struct block *head, struct gpucache_block_info *blocks,
                        void (*visit)(void *context, const struct gpucache_segment_info *segment),
                        void *context)
{
    const struct block *block = head;
    while (block != NULL) {
        if (block->state == BLOCK_UNMAPPED) {
            block = block->next;
            continue;
        }
        struct gpucache_segment_info info;
        block = describe_segment(block, blocks, &info);
        visit(context, &info);
    }
}

/* The first block of every segment, sorted by address; NULL when host
 * memory ran out. Called with the lock held. */
static struct block **segment_heads(struct gpucache_allocator *allocator, size_t *count)
{
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
    /* An expandable segment may begin with unmapped space. */
    struct segment *segment;
    RB_FOREACH(segment, segment_tree, &allocator->segments)
        for (struct block *block = expandable_first_unmapped(segment); block != NULL;
             block = expandable_next_unmapped(block))
            add_if_head(&heads, block);
    if (heads.out_of_memory) {
        free(heads.items);
        return NULL;
    }
    if (heads.count > 1)
        qsort(heads.items, heads.count, sizeof heads.items[0], compare_addresses);
    *count = heads.count;
    return heads.items != NULL ? heads.items : malloc(1);
}

bool gpucache_allocator_visit_segments(struct gpucache_allocator *allocator,
                                       void (*visit)(void *context,
                                                     const struct gpucache_segment_info *segment),
                                       void *context)
{
    return gpucache_allocator_visit_segments_then(allocator, visit, NULL, context);
}

bool gpucache_allocator_visit_segments_then(
    struct gpucache_allocator *allocator,
    void (*visit)(void *context, const struct gpucache_segment_info *segment),
    void (*finished)(void *context), void *context)
{
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    size_t count = 0;
    struct block **heads = segment_heads(allocator, &count);
    struct gpucache_block_info *blocks =
        heads != NULL ? malloc((allocator->store.total_blocks + 1) * sizeof *blocks) : NULL;
    bool ok = heads != NULL && blocks != NULL;
    for (size_t i = 0; ok && i < count; i++)
        visit_chain(heads[i], blocks, visit, context);
    if (ok && finished != NULL)
        finished(context);
    free(blocks);
    free(heads);
    pthread_mutex_unlock(&allocator->mutex);
    return ok;
}

/* allocator_report_forgotten's visitor: the blocks freed, then the memory. */
static void report_segment_gone(void *context, const struct gpucache_segment_info *segment)
{
    struct gpucache_allocator *allocator = context;
    for (size_t i = 0; i < segment->block_count; i++) {
        const struct gpucache_block_info *block = &segment->blocks[i];
        if (block->state == GPUCACHE_BLOCK_ACTIVE_ALLOCATED)
            emit_block_event(allocator, GPUCACHE_EVENT_FREE_REQUESTED, block->address,
                             block->requested_size, block->size, segment->stream);
        if (block->state != GPUCACHE_BLOCK_INACTIVE)
            emit_event(allocator, GPUCACHE_EVENT_FREE_COMPLETED, block->address,
                       block->requested_size, segment->stream);
    }
    emit_event(allocator,
               segment->expandable ? GPUCACHE_EVENT_SEGMENT_UNMAP : GPUCACHE_EVENT_SEGMENT_FREE,
               segment->address, segment->total_size, segment->stream);
}

void allocator_report_forgotten(struct gpucache_allocator *allocator)
{
    if (allocator->observer == NULL)
        return;
    size_t count = 0;
    struct block **heads = segment_heads(allocator, &count);
    struct gpucache_block_info *blocks =
        heads != NULL ? malloc((allocator->store.total_blocks + 1) * sizeof *blocks) : NULL;
    for (size_t i = 0; blocks != NULL && i < count; i++)
        visit_chain(heads[i], blocks, report_segment_gone, allocator);
    free(blocks);
    free(heads);
}

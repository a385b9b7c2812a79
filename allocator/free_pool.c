/* The free trees of the two pools: best fit on (stream, size, address) in
 * O(log n), and the cross-stream fallback. */
#include "allocator_internal.h"
#include "expandable_pool.h"

static int compare_keys(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

static int free_tree_compare(const struct block *a, const struct block *b)
{
    int order = compare_keys(a->stream, b->stream);
    if (order == 0)
        order = compare_keys(a->size, b->size);
    if (order == 0)
        order = compare_keys(a->address, b->address);
    return order;
}

RB_GENERATE(free_tree, block, tree_link, free_tree_compare)

void free_pool_insert(struct gpucache_allocator *allocator, struct block *block)
{
    struct pool *pool = &allocator->pools[block->pool];
    block->state = BLOCK_FREE;
    block->gc_count_base = pool->gc_clock;
    RB_INSERT(free_tree, &pool->free_blocks, block);
}

void free_pool_resize(struct gpucache_allocator *allocator, struct block *block,
                      uint64_t address, uint64_t size)
{
    struct pool *pool = &allocator->pools[block->pool];
    struct block key = {.stream = block->stream, .size = size, .address = address};
    bool grows = free_tree_compare(&key, block) > 0;
    struct block *neighbour = grows ? RB_NEXT(free_tree, &pool->free_blocks, block)
                                    : RB_PREV(free_tree, &pool->free_blocks, block);
    bool order_kept = neighbour == NULL || (grows ? free_tree_compare(&key, neighbour) < 0
                                                  : free_tree_compare(neighbour, &key) < 0);
    if (!order_kept)
        RB_REMOVE(free_tree, &pool->free_blocks, block);
    block->address = address;
    block->size = size;
    if (!order_kept)
        RB_INSERT(free_tree, &pool->free_blocks, block);
    block->gc_count_base = pool->gc_clock;
}

void free_pool_remove(struct gpucache_allocator *allocator, struct block *block)
{
    RB_REMOVE(free_tree, &allocator->pools[block->pool].free_blocks, block);
}

bool block_oversize_rules_accept(const struct gpucache_allocator *allocator, size_t request,
                                 size_t candidate)
{
    uint64_t max_split = allocator->config->max_split_size;
    /* Expandable blocks merge back across pages, so cutting a large one
     * strands nothing; refusing it only made PyTorch grow without bound. */
    if (allocator->config->expandable_segments)
        return true;
    /* Oversize blocks are never cut up for normal requests ... */
    if (request < max_split && candidate >= max_split)
        return false;
    /* ... and serve oversize requests only when little would be wasted. */
    if (request >= max_split && candidate - request >= allocator->config->max_non_split_rounding)
        return false;
    return true;
}

static struct block *lower_bound(struct pool *pool, gpucache_stream stream, size_t size)
{
    struct block key = {.stream = stream, .size = size, .address = 0};
    return RB_NFIND(free_tree, &pool->free_blocks, &key);
}

struct block *free_pool_lower_bound(struct gpucache_allocator *allocator, enum pool_kind pool,
                                    gpucache_stream stream, size_t size)
{
    struct block *found = lower_bound(&allocator->pools[pool], stream, size);
    return found != NULL && found->stream == stream ? found : NULL;
}

struct block *free_pool_best_fit(struct gpucache_allocator *allocator, enum pool_kind pool_kind,
                                 gpucache_stream stream, size_t size)
{
    struct pool *pool = &allocator->pools[pool_kind];
    if (allocator->gc_enabled)
        pool->gc_clock++;
    struct block *found = lower_bound(pool, stream, size);
    if (found == NULL || found->stream != stream)
        return NULL;
    found = expandable_pool_choose_free_block(allocator, found, size);
    /* The set is size-ordered, so when the smallest fitting block breaks the
     * oversize rules no acceptable block exists. */
    if (!block_oversize_rules_accept(allocator, size, found->size))
        return NULL;
    return found;
}

struct block *free_pool_cross_stream_fit(struct gpucache_allocator *allocator,
                                         enum pool_kind pool_kind, gpucache_stream stream,
                                         size_t size)
{
    struct pool *pool = &allocator->pools[pool_kind];
    struct block *best = NULL;
    for (size_t i = 0; i < allocator->stream_count; i++) {
        const struct stream_state *state = allocator->streams[i];
        if (state->stream == stream)
            continue;
        uint64_t cleared = stream_state_cleared_tick(allocator, state);
        struct block *candidate = lower_bound(pool, state->stream, size);
        for (int steps = 0; candidate != NULL && candidate->stream == state->stream &&
                            steps < CROSS_STREAM_SCAN_LIMIT;
             steps++, candidate = RB_NEXT(free_tree, &pool->free_blocks, candidate)) {
            if (best != NULL && candidate->size > best->size)
                break;
            if (candidate->free_tick > cleared)
                continue;
            /* An expandable segment grows for its own stream only, as in
             * PyTorch: another stream's block inside it would, once freed and
             * not yet cleared, cut the runs that the owner grows into. */
            if (candidate->segment->kind == SEGMENT_EXPANDABLE)
                continue;
            if (block_oversize_rules_accept(allocator, size, candidate->size) &&
                (best == NULL || candidate->size < best->size ||
                 (candidate->size == best->size && candidate->address < best->address)))
                best = candidate;
            break;
        }
    }
    return best;
}

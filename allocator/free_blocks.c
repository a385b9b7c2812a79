/* The free trees of the two pools: best fit on (stream, size, address) in
 * O(log n), and the cross-stream fallback. */
#include "allocator_internal.h"
#include "expandable_segments.h"

static int compare_keys(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* The order of the free trees on (stream, size, address), for a key that
 * is not a block in the tree. */
static int compare_key_to_block(gpucache_stream stream, uint64_t size, uint64_t address,
                                const struct block *block)
{
    int order = compare_keys(stream, block->stream);
    if (order == 0)
        order = compare_keys(size, block->size);
    if (order == 0)
        order = compare_keys(address, block->address);
    return order;
}

static int free_tree_compare(const struct block *a, const struct block *b)
{
    return compare_key_to_block(a->stream, a->size, a->address, b);
}

/* A search key: only the three fields the order reads are set, since
 * zeroing a whole block struct cost more than the search on the hot path. */
static struct block *search_key(struct block *key, gpucache_stream stream, uint64_t size,
                                uint64_t address)
{
    key->stream = stream;
    key->size = size;
    key->address = address;
    return key;
}

RB_GENERATE(free_tree, block, tree_link, free_tree_compare)

void free_blocks_insert(struct gpucache_allocator *allocator, struct block *block)
{
    struct pool *pool = &allocator->pools[block->pool];
    block->state = BLOCK_FREE;
    block->gc_count_base = pool->gc_clock;
    RB_INSERT(free_tree, &pool->free_blocks, block);
}

void free_blocks_resize(struct gpucache_allocator *allocator, struct block *block,
                      uint64_t address, uint64_t size)
{
    struct pool *pool = &allocator->pools[block->pool];
    gpucache_stream stream = block->stream;
    bool grows = compare_key_to_block(stream, size, address, block) > 0;
    struct block *neighbour = grows ? RB_NEXT(free_tree, &pool->free_blocks, block)
                                    : RB_PREV(free_tree, &pool->free_blocks, block);
    bool order_kept = neighbour == NULL ||
                      (grows ? compare_key_to_block(stream, size, address, neighbour) < 0
                             : compare_key_to_block(stream, size, address, neighbour) > 0);
    if (!order_kept)
        RB_REMOVE(free_tree, &pool->free_blocks, block);
    block->address = address;
    block->size = size;
    if (!order_kept)
        RB_INSERT(free_tree, &pool->free_blocks, block);
    block->gc_count_base = pool->gc_clock;
}

void free_blocks_cut_lower_bound(struct gpucache_allocator *allocator, struct block *block,
                               uint64_t address, uint64_t size, uint64_t bound)
{
    /* Blocks of the stream before it are smaller than `bound`, so smaller
     * than the new size; those after it are larger than its old key. */
    if (size < bound) {
        free_blocks_resize(allocator, block, address, size);
        return;
    }
    block->address = address;
    block->size = size;
    block->gc_count_base = allocator->pools[block->pool].gc_clock;
}

void free_blocks_remove(struct gpucache_allocator *allocator, struct block *block)
{
    RB_REMOVE(free_tree, &allocator->pools[block->pool].free_blocks, block);
}

static bool oversize_rules_accept(const struct gpucache_allocator *allocator, size_t request,
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
    struct block key;
    return RB_NFIND(free_tree, &pool->free_blocks, search_key(&key, stream, size, 0));
}

struct block *free_blocks_lower_bound(struct gpucache_allocator *allocator, enum pool_kind pool,
                                    gpucache_stream stream, size_t size)
{
    struct block *found = lower_bound(&allocator->pools[pool], stream, size);
    return found != NULL && found->stream == stream ? found : NULL;
}

static struct block *best_fit(struct gpucache_allocator *allocator, struct pool *pool,
                              gpucache_stream stream, size_t size, bool other_class)
{
    struct block *found = lower_bound(pool, stream, size);
    if (found == NULL || found->stream != stream)
        return NULL;
    /* The call, across files, costs more than the test on the hot path. */
    if (found->segment->kind == SEGMENT_EXPANDABLE &&
        (found = expandable_choose_free_block(allocator, found, size, other_class)) == NULL)
        return NULL;
    /* The set is size-ordered, so when the smallest fitting block breaks the
     * oversize rules no acceptable block exists. */
    if (!oversize_rules_accept(allocator, size, found->size))
        return NULL;
    return found;
}

struct block *free_blocks_best_fit(struct gpucache_allocator *allocator, enum pool_kind pool_kind,
                                 gpucache_stream stream, size_t size)
{
    struct pool *pool = &allocator->pools[pool_kind];
    if (allocator->gc_enabled)
        pool->gc_clock++;
    return best_fit(allocator, pool, stream, size, false);
}

struct block *free_blocks_best_fit_other_class(struct gpucache_allocator *allocator,
                                             enum pool_kind pool_kind, gpucache_stream stream,
                                             size_t size)
{
    return best_fit(allocator, &allocator->pools[pool_kind], stream, size, true);
}

struct block *free_blocks_cross_stream_fit(struct gpucache_allocator *allocator,
                                         enum pool_kind pool_kind, gpucache_stream stream,
                                         size_t size)
{
    struct pool *pool = &allocator->pools[pool_kind];
    struct block *best = NULL;
    for (size_t i = 0; i < allocator->stream_count; i++) {
        const struct stream_state *state = allocator->streams[i];
        if (state->stream == stream)
            continue;
        struct block *candidate = lower_bound(pool, state->stream, size);
        for (int steps = 0; candidate != NULL && candidate->stream == state->stream &&
                            steps < CROSS_STREAM_SCAN_LIMIT;
             steps++, candidate = RB_NEXT(free_tree, &pool->free_blocks, candidate)) {
            if (best != NULL && candidate->size > best->size)
                break;
            if (!block_cleared_in(allocator, state, candidate))
                continue;
            /* An expandable segment grows for its own stream only, as in
             * PyTorch: another stream's block inside it would, once freed and
             * not yet cleared, cut the runs that the owner grows into. */
            if (candidate->segment->kind == SEGMENT_EXPANDABLE)
                continue;
            if (oversize_rules_accept(allocator, size, candidate->size) &&
                (best == NULL || candidate->size < best->size ||
                 (candidate->size == best->size && candidate->address < best->address)))
                best = candidate;
            break;
        }
    }
    return best;
}

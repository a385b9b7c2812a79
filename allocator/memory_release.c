/* Giving cached memory back to the driver: garbage collection, freeing just
 * enough oversize blocks, and releasing every idle segment. */
#include "expandable_segments.h"
#include "segment_source.h"

void garbage_collect_cached_blocks(struct gpucache_allocator *allocator)
{
    struct pool *pool = &allocator->pools[POOL_LARGE];
    uint64_t threshold = (uint64_t)(allocator->config->garbage_collection_threshold *
                                    (double)allocator->allowed_memory_maximum);
    uint64_t reserved = (uint64_t)allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    if (reserved <= threshold)
        return;
    uint64_t target = reserved - threshold;

    /* Age = pool lookups since the block became free; only whole segments
     * of the large pool are collected, oldest half first, round by round. */
    uint64_t total_age = 0;
    uint64_t candidates = 0;
    struct block *block;
    RB_FOREACH(block, free_tree, &pool->free_blocks) {
        if (segment_source_releasable(block)) {
            total_age += pool->gc_clock - block->gc_count_base;
            candidates++;
        }
    }
    uint64_t reclaimed = 0;
    bool freed_any = true;
    while (reclaimed < target && freed_any && candidates > 0) {
        uint64_t age_threshold = total_age / candidates;
        freed_any = false;
        struct block *next;
        RB_FOREACH_SAFE(block, free_tree, &pool->free_blocks, next) {
            if (!segment_source_releasable(block))
                continue;
            uint64_t age = pool->gc_clock - block->gc_count_base;
            if (age < age_threshold)
                continue;
            size_t size = block->size;
            if (!segment_source_release(allocator, block))
                continue;
            freed_any = true;
            reclaimed += size;
            total_age -= age;
            candidates--;
        }
    }
    if (reclaimed < target)
        expandable_garbage_collect(allocator, target - reclaimed);
}

bool release_available_cached_blocks(struct gpucache_allocator *allocator, enum pool_kind pool,
                                     gpucache_stream stream, size_t size)
{
    uint64_t max_split = allocator->config->max_split_size;
    if (max_split == UINT64_MAX)
        return false;
    size_t key = size < max_split ? (size_t)max_split : size;
    struct free_tree *tree = &allocator->pools[pool].free_blocks;
    struct block *found = free_blocks_lower_bound(allocator, pool, stream, key);
    if (found != NULL && segment_source_releasable(found))
        return segment_source_release(allocator, found);

    /* No single block is large enough: free oversize blocks of this stream
     * from the largest down until together they are. */
    struct block probe = {.stream = stream, .size = key, .address = 0};
    struct block *current = RB_NFIND(free_tree, tree, &probe);
    current = current != NULL ? RB_PREV(free_tree, tree, current) : RB_MAX(free_tree, tree);
    size_t released = 0;
    while (current != NULL && released < key && current->stream == stream &&
           current->size >= max_split) {
        struct block *smaller = RB_PREV(free_tree, tree, current);
        size_t current_size = current->size;
        if (segment_source_releasable(current) && segment_source_release(allocator, current))
            released += current_size;
        current = smaller;
    }
    return released >= key;
}

void release_cached_blocks(struct gpucache_allocator *allocator)
{
    coalesce_free_blocks(allocator);
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        struct block *next;
        RB_FOREACH_SAFE(block, free_tree, &allocator->pools[pool].free_blocks, next)
            if (segment_source_releasable(block))
                segment_source_release(allocator, block);
    }
    expandable_release_free_pages(allocator);
}

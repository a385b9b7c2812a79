/* Segment acquisition and release: the seam between the caching logic and
 * the driver's memory. */
#include <stdlib.h>

#include "expandable_segments.h"
#include "segment_source.h"

static int segment_tree_compare(const struct segment *a, const struct segment *b)
{
    return (a->base > b->base) - (a->base < b->base);
}

RB_GENERATE(segment_tree, segment, link, segment_tree_compare)

static void count_segment(struct gpucache_allocator *allocator, const struct segment *segment,
                          int64_t sign)
{
    struct gpucache_stats *stats = &allocator->stats;
    stat_array_change(stats->segment, segment->pool, sign);
    stat_array_change(stats->reserved_bytes, segment->pool, sign * (int64_t)segment->size);
    if (segment->size >= allocator->config->max_split_size)
        stat_change(&stats->oversize_segments, sign);
    if (sign > 0)
        stats->num_device_alloc++;
    else
        stats->num_device_free++;
    emit_event(allocator, sign > 0 ? GPUCACHE_EVENT_SEGMENT_ALLOC : GPUCACHE_EVENT_SEGMENT_FREE,
               segment->base, segment->size, segment->stream);
}

/* Errors of the context itself, which the program's own cuMemAlloc would
 * return too (CUresult numbers): not initialized, deinitialized, invalid or
 * destroyed context, and the sticky errors a faulting kernel leaves. */
static bool context_error(gpucache_result result)
{
    return result == 3 || result == 4 || result == 201 || result == 709 || result == 700 ||
           (result >= 714 && result <= 719);
}

/* An expandable growth makes calls the program never made (granularity and
 * memory queries, access grants): one that fails is tried once more, and a
 * failure that persists becomes out of memory, the only error the
 * program's cudaMalloc gives for memory it cannot have, so the retry chain
 * goes on and the program never sees an error of a call it did not make. */
static gpucache_result acquire_expandable(struct gpucache_allocator *allocator,
                                          enum pool_kind pool, gpucache_stream stream,
                                          size_t rounded_size, struct block **out)
{
    gpucache_result result = expandable_acquire(allocator, pool, stream, rounded_size, out);
    if (result == GPUCACHE_SUCCESS || result == GPUCACHE_ERROR_OUT_OF_MEMORY ||
        context_error(result))
        return result;
    result = expandable_acquire(allocator, pool, stream, rounded_size, out);
    if (result == GPUCACHE_SUCCESS || context_error(result))
        return result;
    return GPUCACHE_ERROR_OUT_OF_MEMORY;
}

gpucache_result segment_source_acquire(struct gpucache_allocator *allocator,
                                       enum pool_kind pool, gpucache_stream stream,
                                       size_t rounded_size, size_t segment_size,
                                       struct block **out)
{
    if (allocator->config->expandable_segments)
        return acquire_expandable(allocator, pool, stream, rounded_size, out);
    struct segment *segment = calloc(1, sizeof *segment);
    struct block *block = block_store_take(allocator);
    if (segment == NULL || block == NULL) {
        free(segment);
        if (block != NULL)
            block_store_give(allocator, block);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    uint64_t address = 0;
    gpucache_result result;
    DRIVER_CALL(allocator, result, device_alloc, allocator->device, segment_size, &address);
    if (result != GPUCACHE_SUCCESS) {
        free(segment);
        block_store_give(allocator, block);
        return result;
    }
    segment->base = address;
    segment->size = segment_size;
    segment->kind = SEGMENT_PLAIN;
    segment->pool = pool;
    segment->stream = stream;
    RB_INSERT(segment_tree, &allocator->segments, segment);
    count_segment(allocator, segment, +1);

    block->address = address;
    block->size = segment_size;
    block->stream = stream;
    block->segment = segment;
    block->pool = (uint8_t)pool;
    block->mapped = true;
    *out = block;
    return GPUCACHE_SUCCESS;
}

bool segment_source_releasable(const struct block *block)
{
    return block->prev == NULL && block->next == NULL && block->segment->kind == SEGMENT_PLAIN &&
           !block->segment->pinned;
}

bool segment_source_release(struct gpucache_allocator *allocator, struct block *block)
{
    struct segment *segment = block->segment;
    gpucache_result result;
    DRIVER_CALL(allocator, result, device_free, allocator->device, segment->base);
    if (result != GPUCACHE_SUCCESS)
        return false;
    free_blocks_remove(allocator, block);
    RB_REMOVE(segment_tree, &allocator->segments, segment);
    count_segment(allocator, segment, -1);
    free(segment);
    block_store_give(allocator, block);
    return true;
}

struct segment *segment_source_find(struct gpucache_allocator *allocator, uint64_t address)
{
    /* The segment with the greatest base not above `address`. */
    struct segment *node = RB_ROOT(&allocator->segments);
    struct segment *below = NULL;
    while (node != NULL) {
        if (node->base <= address) {
            below = node;
            node = RB_RIGHT(node, link);
        } else {
            node = RB_LEFT(node, link);
        }
    }
    if (below != NULL && address - below->base < below->size)
        return below;
    return NULL;
}

void segment_source_drop_all(struct gpucache_allocator *allocator, bool context_alive)
{
    struct segment *segment;
    struct segment *next;
    RB_FOREACH_SAFE(segment, segment_tree, &allocator->segments, next) {
        if (segment->kind == SEGMENT_EXPANDABLE) {
            expandable_drop_segment(allocator, segment, context_alive);
        } else if (context_alive) {
            gpucache_result result;
            DRIVER_CALL(allocator, result, device_free, allocator->device, segment->base);
            (void)result; /* nothing more can be done for it at teardown */
            count_segment(allocator, segment, -1);
        }
        RB_REMOVE(segment_tree, &allocator->segments, segment);
        free(segment);
    }
}

/* What the three files of expandable segments share (expandable_lifecycle.c,
 * expandable_growth.c, expandable_release.c): the state behind
 * segment->expandable, its tree of unmapped blocks, and the small block
 * helpers all three use. Private to those files; the rest of the allocator
 * uses expandable_segments.h. */
#ifndef GPUCACHE_EXPANDABLE_INTERNAL_H
#define GPUCACHE_EXPANDABLE_INTERNAL_H

#include "expandable_segments.h"
#include "gpucache_expandable_segment.h"

RB_HEAD(unmapped_tree, block);
RB_PROTOTYPE(unmapped_tree, block, tree_link, unmapped_compare)

/* What segment->expandable points to. */
struct expandable_state {
    struct gpucache_expandable_segment *pages;
    /* The least a growth maps (gpucache_expandable_growth_size). */
    size_t growth_size;
    /* The segment's BLOCK_UNMAPPED blocks by address; they reuse the
     * tree_link of struct block, unused while a block is in no free tree. */
    struct unmapped_tree unmapped;
    /* Under expandable_segments_size_class_mb: the segment serves the
     * large-pool requests of at least that size (otherwise the others). */
    bool serves_size_class;
};

static inline struct expandable_state *state_of(const struct segment *segment)
{
    return segment->expandable;
}

static inline bool in_expandable_segment(const struct block *block)
{
    return block->segment->kind == SEGMENT_EXPANDABLE;
}

static inline uint64_t block_end(const struct block *block)
{
    return block->address + block->size;
}

/* Whether a request belongs to the size class of
 * expandable_segments_size_class_mb: large requests that grow segments of
 * their own, so that smaller ones never settle in the slots they free. */
static inline bool in_size_class(const struct gpucache_allocator *allocator,
                                 enum pool_kind pool, size_t rounded_size)
{
    uint64_t threshold = allocator->config->expandable_segments_size_class;
    return threshold != 0 && pool == POOL_LARGE && rounded_size >= threshold;
}

/* Adds (sign 1) or removes (sign -1) a free block's share of the
 * inactive-split statistics, around changes the allocator does not see. */
static inline void count_split(struct gpucache_allocator *allocator, const struct block *block,
                               int sign)
{
    if (block == NULL || block->state != BLOCK_FREE || !block_is_split(block))
        return;
    stat_array_change(allocator->stats.inactive_split, block->pool, sign);
    stat_array_change(allocator->stats.inactive_split_bytes, block->pool,
                      sign * (int64_t)block->size);
}

/* `block` takes over the bytes of the block after it, whose struct goes
 * back to the store. */
static inline void absorb_next(struct gpucache_allocator *allocator, struct block *block)
{
    struct block *next = block->next;
    block->size += next->size;
    block->next = next->next;
    if (next->next != NULL)
        next->next->prev = block;
    block_store_give(allocator, next);
}

/* Turns the whole pages [hole_start, hole_end) of the free block `block`,
 * no longer mapped in vmm/, into an unmapped block, merged with unmapped
 * neighbours; what lies before and after stays free. Counts the pages out
 * of reserved memory and reports a segment_unmap; a segment left with no
 * mapped page is given back. `middle` and `tail` are spare structs it
 * consumes (expandable_release.c). */
void expandable_punch_hole(struct gpucache_allocator *allocator, struct block *block,
                           uint64_t hole_start, uint64_t hole_end, struct block *middle,
                           struct block *tail);

/* A new segment for (pool, stream) able to hold `size` bytes: its whole
 * reservation one unmapped block (expandable_lifecycle.c). OUT_OF_MEMORY
 * when the request is larger than a reservation. */
gpucache_result expandable_create_segment(struct gpucache_allocator *allocator,
                                          enum pool_kind pool, gpucache_stream stream,
                                          size_t size, struct segment **out);

/* Gives a segment with no mapped page back: its address range and structs
 * (expandable_lifecycle.c). False when the driver refused. */
bool expandable_destroy_segment(struct gpucache_allocator *allocator, struct segment *segment);

#endif

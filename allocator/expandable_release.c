/* Giving expandable memory back: the whole handles inside free blocks are
 * unmapped, after the work of the block's stream that may still touch them
 * is done (empty_cache, the retry chain), or, for garbage collection, only
 * from idle blocks that end a mapped run and never with a wait. A segment
 * left with no mapped page is destroyed. */
#include <stdlib.h>

#include "expandable_internal.h"

/* Merges the unmapped block `block` with unmapped neighbours; returns the
 * block that holds the range afterwards. */
static struct block *merge_unmapped(struct gpucache_allocator *allocator,
                                    struct expandable_state *state, struct block *block)
{
    if (block->next != NULL && block->next->state == BLOCK_UNMAPPED) {
        RB_REMOVE(unmapped_tree, &state->unmapped, block->next);
        absorb_next(allocator, block);
    }
    if (block->prev != NULL && block->prev->state == BLOCK_UNMAPPED) {
        struct block *prev = block->prev;
        RB_REMOVE(unmapped_tree, &state->unmapped, block);
        absorb_next(allocator, prev);
        return prev;
    }
    return block;
}

void expandable_punch_hole(struct gpucache_allocator *allocator, struct block *block,
                           uint64_t hole_start, uint64_t hole_end, struct block *middle,
                           struct block *tail)
{
    struct segment *segment = block->segment;
    struct expandable_state *state = state_of(segment);
    uint64_t end = block_end(block);
    uint64_t gc_count_base = block->gc_count_base;
    /* Only the block and its free neighbours can change split state; free
     * neighbours are never merged below (only unmapped ones are). */
    struct block *before = block->prev;
    struct block *after = block->next;
    count_split(allocator, before, -1);
    count_split(allocator, after, -1);
    count_split(allocator, block, -1);
    free_blocks_remove(allocator, block);

    /* [block | middle | tail]: the partial page before the hole stays in
     * `block`, the hole becomes `middle`, the rest after it `tail`. */
    if (block->address == hole_start) {
        block_store_give(allocator, middle);
        middle = block;
        block = NULL;
    } else {
        *middle = *block;
        middle->prev = block;
        if (block->next != NULL)
            block->next->prev = middle;
        block->next = middle;
        block->size = hole_start - block->address;
    }
    middle->address = hole_start;
    middle->size = hole_end - hole_start;
    middle->state = BLOCK_UNMAPPED;
    middle->mapped = false;
    middle->free_tick = 0;
    if (hole_end < end) {
        *tail = *middle;
        tail->address = hole_end;
        tail->size = end - hole_end;
        tail->state = BLOCK_FREE;
        tail->mapped = true;
        tail->prev = middle;
        if (middle->next != NULL)
            middle->next->prev = tail;
        middle->next = tail;
        free_blocks_insert(allocator, tail);
        tail->gc_count_base = gc_count_base;
        count_split(allocator, tail, 1);
    } else {
        block_store_give(allocator, tail);
    }
    RB_INSERT(unmapped_tree, &state->unmapped, middle);
    middle = merge_unmapped(allocator, state, middle);
    if (block != NULL) {
        free_blocks_insert(allocator, block);
        block->gc_count_base = gc_count_base;
        count_split(allocator, block, 1);
    }
    count_split(allocator, before, 1);
    count_split(allocator, after, 1);

    stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                      -(int64_t)(hole_end - hole_start));
    emit_event(allocator, GPUCACHE_EVENT_SEGMENT_UNMAP, hole_start, hole_end - hole_start,
               segment->stream);
    if (middle->address == segment->base && middle->size == segment->size)
        expandable_destroy_segment(allocator, segment);
}

/* Unmaps the whole handles inside the free block `block`. Returns the bytes of
 * physical memory released. */
static size_t release_block_pages(struct gpucache_allocator *allocator, struct block *block)
{
    struct segment *segment = block->segment;
    struct expandable_state *state = state_of(segment);
    struct gpucache_expandable_segment *pages = state->pages;
    size_t page_size = pages->page_size;
    size_t span_offset = 0, span_length = 0;
    if (!gpucache_expandable_segment_releasable_span(pages, block->address - segment->base,
                                                     block->size, &span_offset, &span_length))
        return 0;
    size_t first = span_offset / page_size;
    size_t stop = (span_offset + span_length) / page_size;
    struct block *middle = block_store_take(allocator);
    struct block *tail = block_store_take(allocator);
    if (middle == NULL || tail == NULL) {
        if (middle != NULL)
            block_store_give(allocator, middle);
        if (tail != NULL)
            block_store_give(allocator, tail);
        return 0;
    }
    struct gpucache_expandable_change change;
    DRIVER_TIMED(allocator,
                 gpucache_expandable_segment_unmap(pages, span_offset, span_length, &change));
    size_t released = change.released_bytes;
    /* Handles go in address order and stop at the first failure, so what
     * was unmapped is a prefix of the span. */
    size_t unmapped_pages = 0;
    while (first + unmapped_pages < stop &&
           !gpucache_expandable_segment_page_mapped(pages, first + unmapped_pages))
        unmapped_pages++;
    if (unmapped_pages == 0) {
        block_store_give(allocator, middle);
        block_store_give(allocator, tail);
        return released;
    }
    uint64_t hole_start = segment->base + first * page_size;
    uint64_t hole_end = hole_start + unmapped_pages * page_size;
    allocator->stats.num_device_free += change.handles_released;
    expandable_punch_hole(allocator, block, hole_start, hole_end, middle, tail);
    return released;
}

/* Work on `stream` may still touch its free blocks (stream-ordered frees):
 * wait for it, as PyTorch synchronizes the segment's stream before unmapping,
 * because unmapping does not wait for work in flight. */
static void wait_for_stream(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    if (stream != STREAM_RETIRED) {
        struct gpucache_fence *fence = NULL;
        gpucache_result result;
        /* Read before the fence: a lane's free after it is not covered. */
        struct gpucache_sync_point since = epochs_now(allocator);
        DRIVER_TIMED(allocator, result = driver_fence_stream(allocator, stream, &fence));
        if (result == GPUCACHE_SUCCESS) {
            DRIVER_CALL(allocator, result, fence_wait, fence);
            allocator->stats.num_fence_waits++;
            driver_fence_release(allocator, fence);
            if (result == GPUCACHE_SUCCESS) {
                epochs_stream_work_done(allocator, stream, since);
                return;
            }
        }
    }
    synchronize_device_for_reuse(allocator);
}

/* The first free expandable block whose stream may still be using it. */
static struct block *first_busy_free_block(struct gpucache_allocator *allocator)
{
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks)
            if (in_expandable_segment(block) && !block_cleared(allocator, block))
                return block;
    }
    return NULL;
}

static bool has_whole_handle(const struct block *block)
{
    const struct gpucache_expandable_segment *pages = state_of(block->segment)->pages;
    return gpucache_expandable_segment_releasable_bytes(
               pages, block->address - block->segment->base, block->size) != 0;
}

size_t expandable_release_free_pages(struct gpucache_allocator *allocator)
{
    /* Waiting completes epochs, which frees and merges blocks: done before
     * the candidates are collected so that none of them goes stale. */
    bool waited = false;
    for (struct block *busy; (busy = first_busy_free_block(allocator)) != NULL;) {
        gpucache_stream stream = busy->stream;
        uint64_t free_tick = busy->free_tick;
        wait_for_stream(allocator, stream);
        waited = true;
        if (busy->state == BLOCK_FREE && busy->free_tick == free_tick &&
            first_busy_free_block(allocator) == busy)
            busy->free_tick = 0; /* the wait could not clear it: do not spin */
    }
    /* Blocks freed on different streams may sit side by side unmerged; a
     * page they share is wholly free only once they are joined. */
    if (waited)
        coalesce_free_blocks(allocator);
    size_t count = 0;
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks)
            count += in_expandable_segment(block) && has_whole_handle(block);
    }
    if (count == 0)
        return 0;
    struct block **candidates = malloc(count * sizeof *candidates);
    if (candidates == NULL)
        return 0;
    size_t filled = 0;
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks)
            if (in_expandable_segment(block) && has_whole_handle(block))
                candidates[filled++] = block;
    }
    /* Releasing one free block changes only it and its unmapped neighbours
     * (free neighbours are merged by now), so the other candidates stay
     * valid. */
    size_t released = 0;
    for (size_t i = 0; i < filled; i++)
        released += release_block_pages(allocator, candidates[i]);
    free(candidates);
    return released;
}

/* A free block garbage collection may shrink once it is idle: in the large
 * pool (as PyTorch collects), followed by unmapped space or the
 * reservation's end (so that mapped space only shrinks from the end of a
 * run), and holding a whole handle. */
static bool collectable_when_idle(const struct block *block)
{
    bool ends_run = block->next == NULL || block->next->state == BLOCK_UNMAPPED;
    return in_expandable_segment(block) && ends_run && has_whole_handle(block);
}

/* Collection never waits for a stream. */
static bool collectable(struct gpucache_allocator *allocator, const struct block *block)
{
    return collectable_when_idle(block) && block_cleared(allocator, block);
}

/* Collection never waits, but free blocks whose stream may still use them
 * would never become collectable if nobody asked: one fence per such stream
 * (none while one is already in flight) lets the next collection take them
 * once the stream's work has passed it. */
static void request_fences_for_busy_blocks(struct gpucache_allocator *allocator)
{
    /* There an epoch closes with a device synchronize: a wait. */
    if (allocator->config->reuse == GPUCACHE_REUSE_CONSERVATIVE)
        return;
    struct block *block;
    RB_FOREACH(block, free_tree, &allocator->pools[POOL_LARGE].free_blocks) {
        if (block->stream == STREAM_RETIRED || !collectable_when_idle(block) ||
            block_cleared(allocator, block))
            continue;
        struct stream_state *state = stream_state_find(allocator, block->stream, true);
        if (state != NULL && state->oldest == NULL && state->fenced_tick < block->free_tick)
            epoch_close(allocator, state);
    }
}

void expandable_request_stitch_fences(struct gpucache_allocator *allocator)
{
    if (allocator->config->reuse == GPUCACHE_REUSE_CONSERVATIVE)
        return;
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks) {
            if (block->stream == STREAM_RETIRED || !in_expandable_segment(block) ||
                block_cleared(allocator, block) || !has_whole_handle(block))
                continue;
            struct stream_state *state = stream_state_find(allocator, block->stream, true);
            if (state != NULL && state->oldest == NULL && state->fenced_tick < block->free_tick)
                epoch_close(allocator, state);
        }
    }
    epochs_process_completed(allocator);
}

size_t expandable_garbage_collect(struct gpucache_allocator *allocator, size_t target)
{
    struct pool *pool = &allocator->pools[POOL_LARGE];
    request_fences_for_busy_blocks(allocator);
    int64_t reserved_before = allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    size_t reclaimed = 0;
    bool progress = true;
    /* PyTorch's rounds: blocks at least as old as the mean age go first. */
    while (reclaimed < target && progress) {
        uint64_t total_age = 0;
        size_t count = 0;
        struct block *block;
        RB_FOREACH(block, free_tree, &pool->free_blocks) {
            if (collectable(allocator, block)) {
                total_age += pool->gc_clock - block->gc_count_base;
                count++;
            }
        }
        if (count == 0)
            break;
        uint64_t age_threshold = total_age / count;
        struct block **candidates = malloc(count * sizeof *candidates);
        if (candidates == NULL)
            break;
        size_t filled = 0;
        RB_FOREACH(block, free_tree, &pool->free_blocks)
            if (collectable(allocator, block) &&
                pool->gc_clock - block->gc_count_base >= age_threshold)
                candidates[filled++] = block;
        progress = false;
        for (size_t i = 0; i < filled && reclaimed < target; i++) {
            release_block_pages(allocator, candidates[i]);
            size_t now = (size_t)(reserved_before -
                                  allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current);
            progress |= now > reclaimed;
            reclaimed = now;
        }
        free(candidates);
    }
    return reclaimed;
}

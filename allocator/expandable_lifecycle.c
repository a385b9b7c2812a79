/* Expandable segments' life cycle (PyTorch's expandable_segments:True): a
 * segment is created for a (pool, stream) as one vmm/ reservation whose
 * whole range is an unmapped block, destroyed once it has no mapped page,
 * dropped at teardown; peers get access to its pages; its mapped ranges are
 * reported and checked. Growth into a segment is expandable_growth.c,
 * giving its pages back expandable_release.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "expandable_internal.h"

_Static_assert(GPUCACHE_ALLOCATOR_MAX_PEERS <= GPUCACHE_EXPANDABLE_MAX_PEERS,
              "every peer of the allocator must fit each segment's list");

static int unmapped_compare(const struct block *a, const struct block *b)
{
    return (a->address > b->address) - (a->address < b->address);
}

RB_GENERATE(unmapped_tree, block, tree_link, unmapped_compare)

static void write_too_large_message(struct gpucache_allocator *allocator, size_t size,
                                    size_t reserve_size)
{
    /* Once per process: a program retrying the same request should not
     * flood stderr. */
    static atomic_flag written = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&written))
        return;
    char line[512];
    size_t length = gpucache_expandable_too_large_message(line, sizeof line - 1,
                                                          allocator->device, size, reserve_size);
    if (length > sizeof line - 2)
        length = sizeof line - 2;
    line[length++] = '\n';
    ssize_t written_bytes = write(STDERR_FILENO, line, length);
    (void)written_bytes; /* nothing better to do when stderr is gone */
}

gpucache_result expandable_create_segment(struct gpucache_allocator *allocator,
                                          enum pool_kind pool, gpucache_stream stream,
                                          size_t size, struct segment **out)
{
    size_t page_size = 0, growth_size = 0, reserve_size = 0;
    gpucache_result result;
    DRIVER_TIMED(allocator, result = gpucache_expandable_geometry(
                                allocator->driver, allocator->config, allocator->device,
                                pool == POOL_SMALL, &page_size, &growth_size, &reserve_size));
    if (result != GPUCACHE_SUCCESS)
        return result;
    if (!gpucache_expandable_fits(reserve_size, size)) {
        write_too_large_message(allocator, size, reserve_size);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    struct segment *segment = calloc(1, sizeof *segment);
    struct expandable_state *state = calloc(1, sizeof *state);
    struct block *unmapped = block_store_take(allocator);
    if (segment == NULL || state == NULL || unmapped == NULL) {
        result = GPUCACHE_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    DRIVER_TIMED(allocator, result = gpucache_expandable_segment_create(
                                allocator->driver, allocator->device, stream, page_size,
                                reserve_size, allocator->peers, allocator->peer_count,
                                &state->pages));
    if (result != GPUCACHE_SUCCESS)
        goto fail;
    RB_INIT(&state->unmapped);
    state->growth_size = growth_size;
    switch (allocator->config->expandable_segments_handles) {
    case GPUCACHE_HANDLES_GROWTH:
        break;
    case GPUCACHE_HANDLES_DOUBLING:
        gpucache_expandable_segment_set_handle_plan(state->pages, growth_size / page_size, true);
        break;
    case GPUCACHE_HANDLES_PAGE:
        gpucache_expandable_segment_set_handle_plan(state->pages, 1, false);
        break;
    }
    state->serves_size_class = in_size_class(allocator, pool, size);
    segment->base = state->pages->base;
    segment->size = reserve_size;
    segment->kind = SEGMENT_EXPANDABLE;
    segment->pool = pool;
    segment->stream = stream;
    segment->expandable = state;
    RB_INSERT(segment_tree, &allocator->segments, segment);
    unmapped->address = segment->base;
    unmapped->size = reserve_size;
    unmapped->stream = stream;
    unmapped->segment = segment;
    unmapped->pool = (uint8_t)pool;
    unmapped->mapped = false;
    unmapped->state = BLOCK_UNMAPPED;
    RB_INSERT(unmapped_tree, &state->unmapped, unmapped);
    *out = segment;
    return GPUCACHE_SUCCESS;
fail:
    if (unmapped != NULL)
        block_store_give(allocator, unmapped);
    free(state);
    free(segment);
    return result;
}

/* Gives a segment with no mapped page back: its address range and structs. */
bool expandable_destroy_segment(struct gpucache_allocator *allocator, struct segment *segment)
{
    struct expandable_state *state = state_of(segment);
    /* Normally none: only handles a refused release left behind. */
    size_t handles_left = state->pages->stats.handles;
    gpucache_result result;
    DRIVER_TIMED(allocator, result = gpucache_expandable_segment_destroy(state->pages));
    if (result != GPUCACHE_SUCCESS)
        return false;
    allocator->stats.num_device_free += handles_left;
    struct block *block;
    struct block *next;
    RB_FOREACH_SAFE(block, unmapped_tree, &state->unmapped, next) {
        RB_REMOVE(unmapped_tree, &state->unmapped, block);
        block_store_give(allocator, block);
    }
    RB_REMOVE(segment_tree, &allocator->segments, segment);
    free(state);
    free(segment);
    return true;
}

void expandable_report_unmapping(struct gpucache_allocator *allocator,
                                      const struct segment *segment)
{
    if (allocator->observer == NULL)
        return;
    const struct gpucache_expandable_segment *pages = state_of(segment)->pages;
    size_t page = 0;
    while (page < pages->page_count) {
        if (!gpucache_expandable_segment_page_mapped(pages, page)) {
            page++;
            continue;
        }
        size_t first = page;
        while (page < pages->page_count && gpucache_expandable_segment_page_mapped(pages, page))
            page++;
        emit_event(allocator, GPUCACHE_EVENT_SEGMENT_UNMAP, segment->base + first * pages->page_size,
                   (page - first) * pages->page_size, segment->stream);
    }
}

void expandable_drop_segment(struct gpucache_allocator *allocator,
                                  struct segment *segment, bool context_alive)
{
    struct expandable_state *state = state_of(segment);
    if (context_alive) {
        expandable_report_unmapping(allocator, segment);
        stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                          -(int64_t)state->pages->stats.mapped_bytes);
    }
    gpucache_result result;
    DRIVER_TIMED(allocator, result = gpucache_expandable_segment_destroy(state->pages));
    if (result != GPUCACHE_SUCCESS)
        gpucache_expandable_segment_abandon(state->pages);
    free(state);
    segment->expandable = NULL;
}

gpucache_result gpucache_allocator_add_peer(struct gpucache_allocator *allocator, int peer)
{
    pthread_mutex_lock(&allocator->mutex);
    gpucache_result result = GPUCACHE_SUCCESS;
    bool known = peer == allocator->device;
    for (size_t i = 0; i < allocator->peer_count && !known; i++)
        known = allocator->peers[i] == peer;
    if (!known && allocator->peer_count == GPUCACHE_ALLOCATOR_MAX_PEERS)
        result = GPUCACHE_ERROR_INVALID_VALUE;
    struct segment *segment;
    if (!known && result == GPUCACHE_SUCCESS) {
        RB_FOREACH(segment, segment_tree, &allocator->segments) {
            if (segment->kind != SEGMENT_EXPANDABLE)
                continue;
            DRIVER_TIMED(allocator, result = gpucache_expandable_segment_add_peer(
                                        state_of(segment)->pages, peer));
            if (result != GPUCACHE_SUCCESS)
                break;
        }
        /* Recorded only when every segment took it, so a retry covers all;
         * segments that did take it ignore the repeat. */
        if (result == GPUCACHE_SUCCESS)
            allocator->peers[allocator->peer_count++] = peer;
    }
    pthread_mutex_unlock(&allocator->mutex);
    return result;
}

/* block_is_split for a block of an expandable segment: its unmapped
 * neighbours do not count. */
bool expandable_block_is_split(const struct block *block)
{
    return (block->prev != NULL && block->prev->state != BLOCK_UNMAPPED) ||
           (block->next != NULL && block->next->state != BLOCK_UNMAPPED);
}

struct block *expandable_first_unmapped(const struct segment *segment)
{
    if (segment->kind != SEGMENT_EXPANDABLE)
        return NULL;
    return RB_MIN(unmapped_tree, &state_of(segment)->unmapped);
}

struct block *expandable_next_unmapped(struct block *block)
{
    return RB_NEXT(unmapped_tree, &state_of(block->segment)->unmapped, block);
}

bool expandable_check_segment(const struct segment *segment, size_t *mapped_bytes,
                                   char *why, size_t why_size)
{
    struct expandable_state *state = state_of(segment);
    const struct gpucache_expandable_segment *pages = state->pages;
    size_t page_size = pages->page_size;
    size_t unmapped_bytes = 0;
    struct block *block;
    RB_FOREACH(block, unmapped_tree, &state->unmapped) {
        size_t offset = block->address - segment->base;
        const char *problem = NULL;
        if (block->state != BLOCK_UNMAPPED || block->mapped)
            problem = "is listed as unmapped but is not";
        else if (offset % page_size != 0 || block->size % page_size != 0)
            problem = "is not whole pages";
        else if (gpucache_expandable_segment_unmapped_pages(pages, offset, block->size) !=
                 block->size / page_size)
            problem = "covers mapped pages";
        else if (block->next != NULL && block->next->state == BLOCK_UNMAPPED)
            problem = "was not merged with the unmapped block after it";
        if (problem != NULL) {
            snprintf(why, why_size, "expandable segment 0x%llx: unmapped block 0x%llx %s",
                     (unsigned long long)segment->base, (unsigned long long)block->address,
                     problem);
            return false;
        }
        unmapped_bytes += block->size;
    }
    /* Every byte not in an unmapped block must be mapped. */
    if (pages->stats.mapped_bytes != segment->size - unmapped_bytes) {
        snprintf(why, why_size,
                 "expandable segment 0x%llx: %zu bytes mapped, but its blocks need %zu",
                 (unsigned long long)segment->base, pages->stats.mapped_bytes,
                 segment->size - unmapped_bytes);
        return false;
    }
    *mapped_bytes = pages->stats.mapped_bytes;
    return true;
}

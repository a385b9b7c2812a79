/* Growth and placement in expandable segments (PyTorch's
 * expandable_segments:True): a miss grows the lowest run of free and
 * unmapped space in the stream's segments that fits, mapping the pages it
 * lacks (with slack up to the segment's growth size), or a new segment; a
 * hit's best fit among expandable blocks prefers blocks that cannot grow,
 * keeping growable tails for requests that need them. */
#include <stdlib.h>

#include "expandable_internal.h"

/* Whether growth for a request of (pool, stream, size) may use `segment`. */
static bool segment_serves(const struct gpucache_allocator *allocator,
                           const struct segment *segment, enum pool_kind pool,
                           gpucache_stream stream, size_t rounded_size)
{
    return segment->kind == SEGMENT_EXPANDABLE && segment->pool == pool &&
           segment->stream == stream &&
           state_of(segment)->serves_size_class == in_size_class(allocator, pool, rounded_size);
}

/* A free block may join a run for `stream` when no work of another stream
 * can still be using it. */
static bool free_for_stream(struct gpucache_allocator *allocator, const struct block *block,
                            gpucache_stream stream)
{
    return block != NULL && block->state == BLOCK_FREE &&
           block_reusable_by(allocator, block, stream);
}

static bool usable_for_growth(struct gpucache_allocator *allocator, const struct block *block,
                              gpucache_stream stream)
{
    return block->state == BLOCK_UNMAPPED || free_for_stream(allocator, block, stream);
}

/* PyTorch's find_expandable_block: for each unmapped range in address order
 * (lowest segment first), the run of free and unmapped blocks starting at it
 * (or at the free block just before it); the first run of `size` bytes. */
static struct block *find_run(struct gpucache_allocator *allocator, enum pool_kind pool,
                              gpucache_stream stream, size_t size)
{
    struct segment *segment;
    RB_FOREACH(segment, segment_tree, &allocator->segments) {
        if (!segment_serves(allocator, segment, pool, stream, size))
            continue;
        struct block *unmapped;
        RB_FOREACH(unmapped, unmapped_tree, &state_of(segment)->unmapped) {
            struct block *start = unmapped;
            if (free_for_stream(allocator, start->prev, stream))
                start = start->prev;
            size_t run = 0;
            for (struct block *block = start;
                 block != NULL && run < size && usable_for_growth(allocator, block, stream);
                 block = block->next)
                run += block->size;
            if (run >= size)
                return start;
        }
    }
    return NULL;
}

/* Cuts an unmapped range at the page boundary `at`: `block` keeps what lies
 * before it, `rest` (a spare struct) becomes the unmapped range from `at`
 * on and enters the segment's tree. */
static void split_unmapped(struct expandable_state *state, struct block *block, uint64_t at,
                           struct block *rest)
{
    *rest = *block;
    rest->address = at;
    rest->size = block_end(block) - at;
    rest->prev = block;
    if (block->next != NULL)
        block->next->prev = rest;
    block->next = rest;
    block->size = at - block->address;
    RB_INSERT(unmapped_tree, &state->unmapped, rest);
}

/* Takes `block` out of its tree as part of a growing block; an unmapped
 * block reaching past `map_end` keeps its tail unmapped in `spare`. */
static void detach_for_growth(struct gpucache_allocator *allocator,
                              struct expandable_state *state, struct block *block,
                              uint64_t map_end, struct block **spare)
{
    if (block->state == BLOCK_FREE) {
        free_blocks_remove(allocator, block);
        return;
    }
    RB_REMOVE(unmapped_tree, &state->unmapped, block);
    if (block_end(block) > map_end) {
        split_unmapped(state, block, map_end, *spare);
        *spare = NULL;
    }
    block->state = BLOCK_FREE;
    block->mapped = true;
    block->free_tick = 0;
}

/* The whole handles a growth may move in instead of creating handles
 * (gpucache_expandable_segment_map_stitched), with the free block holding
 * each and the spare structs that turning its pages into a hole takes. */
struct stitch {
    struct gpucache_expandable_source *sources;
    struct block **owners;
    struct block **spares; /* two per source */
    size_t count;
};

static bool grow_stitch(struct stitch *stitch, size_t capacity)
{
    struct gpucache_expandable_source *sources =
        reallocarray(stitch->sources, capacity, sizeof *sources);
    if (sources == NULL)
        return false;
    stitch->sources = sources;
    struct block **owners = reallocarray(stitch->owners, capacity, sizeof *owners);
    if (owners == NULL)
        return false;
    stitch->owners = owners;
    struct block **spares = reallocarray(stitch->spares, 2 * capacity, sizeof *spares);
    if (spares == NULL)
        return false;
    stitch->spares = spares;
    return true;
}

static void free_stitch(struct stitch *stitch)
{
    free(stitch->sources);
    free(stitch->owners);
    free(stitch->spares);
}

/* After the map, whether it succeeded or not: each source whose pages are
 * no longer mapped (moved, or released by a failed return) becomes a hole
 * in its free block. Sources of one block were collected in address order
 * and are punched from the highest, so the block's struct still holds the
 * lower ones. */
static void finish_stitch(struct gpucache_allocator *allocator, struct stitch *stitch)
{
    for (size_t i = stitch->count; i-- > 0;) {
        struct gpucache_expandable_source *source = &stitch->sources[i];
        struct block *middle = stitch->spares[2 * i], *tail = stitch->spares[2 * i + 1];
        if (gpucache_expandable_segment_page_mapped(source->segment, source->first_page)) {
            block_store_give(allocator, middle);
            block_store_give(allocator, tail);
            continue;
        }
        struct block *owner = stitch->owners[i];
        uint64_t hole_start = source->segment->base + source->first_page * source->segment->page_size;
        uint64_t hole_end = hole_start + source->pages * source->segment->page_size;
        expandable_punch_hole(allocator, owner, hole_start, hole_end, middle, tail);
    }
    free_stitch(stitch);
}

static bool stitching_enabled(const struct gpucache_allocator *allocator)
{
    return allocator->config->expandable_segments_stitch;
}

/* Whether `block` lies in the growth's own run or next to it: those are
 * what the growth joins, so none of their pages may move. */
static bool near_run(const struct block *block, const struct block *start, uint64_t zone_end)
{
    if (block->segment != start->segment)
        return false;
    uint64_t zone_start = start->prev != NULL ? start->prev->address : start->address;
    return block->address < zone_end && block_end(block) > zone_start;
}

/* Collects the sources for a growth of [start, start + size): the whole
 * handles, no larger than the pages the growth lacks, of idle free blocks
 * of the pool's expandable segments (no work of any stream can touch them,
 * so moving them cannot race), in the free tree's order (by stream, then
 * smallest first), until they cover what the growth lacks. The other pool
 * is left alone: taking its pages made it grow back at once, and each move
 * cut the blocks on both sides (BENCHMARKS.md). Host memory is taken here, before any driver
 * call; without it the growth simply creates handles. */
static void prepare_stitch(struct gpucache_allocator *allocator, const struct block *start,
                           size_t size, struct stitch *stitch)
{
    *stitch = (struct stitch){0};
    if (!stitching_enabled(allocator))
        return;
    const struct segment *segment = start->segment;
    const struct gpucache_expandable_segment *target = state_of(segment)->pages;
    size_t wanted = gpucache_expandable_segment_unmapped_pages(
        target, start->address - segment->base, size);
    if (wanted == 0)
        return;
    const struct block *last = start;
    while (block_end(last) < start->address + size)
        last = last->next;
    uint64_t zone_end = last->next != NULL ? block_end(last->next) : block_end(last);
    size_t found = 0, count = 0;
    {
        struct block *block;
        RB_FOREACH(block, free_tree, &allocator->pools[segment->pool].free_blocks) {
            if (found >= wanted)
                break;
            if (!in_expandable_segment(block) || near_run(block, start, zone_end))
                continue;
#ifndef GPUCACHE_TEST_MUTATION_STITCH_BUSY
            if (!block_cleared(allocator, block))
                continue;
#endif
            struct gpucache_expandable_segment *pages = state_of(block->segment)->pages;
            size_t offset = block->address - block->segment->base;
            size_t first = 0, length = 0;
            for (size_t from = 0; found < wanted &&
                                  gpucache_expandable_segment_whole_handle(
                                      pages, offset, block->size, from, &first, &length);
                 from = first + length) {
                if (length > wanted - found)
                    continue;
                if (count % 16 == 0 && !grow_stitch(stitch, count + 16)) {
                    free_stitch(stitch);
                    *stitch = (struct stitch){0};
                    return;
                }
                stitch->sources[count] = (struct gpucache_expandable_source){
                    .segment = pages, .first_page = first, .pages = length};
                stitch->owners[count] = block;
                count++;
                found += length;
            }
        }
    }
    for (size_t i = 0; i < 2 * count; i++) {
        stitch->spares[i] = block_store_take(allocator);
        if (stitch->spares[i] == NULL) {
            for (size_t j = 0; j < i; j++)
                block_store_give(allocator, stitch->spares[j]);
            free_stitch(stitch);
            *stitch = (struct stitch){0};
            return;
        }
    }
    stitch->count = count;
}

/* segment_map events for what grow_run just mapped: the unmapped blocks of
 * the run (still marked so), cut to the pages touched, [.., map_end). */
static void report_new_mappings(struct gpucache_allocator *allocator, const struct block *start,
                                uint64_t target_end, uint64_t map_end)
{
    const struct segment *segment = start->segment;
    size_t page_size = state_of(segment)->pages->page_size;
    uint64_t map_start = segment->base + (start->address - segment->base) / page_size * page_size;
    for (const struct block *block = start; block != NULL && block->address < target_end;
         block = block->next) {
        if (block->state != BLOCK_UNMAPPED)
            continue;
        uint64_t from = block->address > map_start ? block->address : map_start;
        uint64_t to = block_end(block) < map_end ? block_end(block) : map_end;
        if (to > from)
            emit_event(allocator, GPUCACHE_EVENT_SEGMENT_MAP, from, to - from, segment->stream);
    }
}

/* Maps what [start, start + size) lacks and turns the run into one free
 * mapped block starting at `start`. */
static gpucache_result grow_run(struct gpucache_allocator *allocator, struct block *start,
                                gpucache_stream stream, size_t size, struct block **out)
{
    struct segment *segment = start->segment;
    struct expandable_state *state = state_of(segment);
    struct gpucache_expandable_segment *pages = state->pages;
    /* Taken before mapping so that no host allocation can fail after the
     * driver's state changed. */
    struct block *spare = block_store_take(allocator);
    if (spare == NULL)
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    size_t offset = start->address - segment->base;
    struct stitch stitch;
    prepare_stitch(allocator, start, size, &stitch);
    struct gpucache_expandable_change change;
    gpucache_result result;
    DRIVER_TIMED(allocator, result = gpucache_expandable_segment_map_stitched(
                                pages, offset, size, stitch.sources, stitch.count, &change));
    /* A map first retries handles a refused release left behind, and gives
     * back a moved handle it could not return to its source. */
    allocator->stats.num_device_free += change.handles_released;
    finish_stitch(allocator, &stitch);
    if (result != GPUCACHE_SUCCESS) {
        block_store_give(allocator, spare);
        return result;
    }
    uint64_t target_end = start->address + size;
    uint64_t map_end = segment->base + (offset + size + pages->page_size - 1) /
                                           pages->page_size * pages->page_size;
    if (change.mapped_bytes != 0)
        report_new_mappings(allocator, start, target_end, map_end);
    /* The free blocks whose split state can change: the run's own and its
     * two outer neighbours. */
    struct block *last = start;
    while (block_end(last) < target_end)
        last = last->next;
    /* Free neighbours merge, so a free block right after the grown one
     * joins it, unless unmapped space remains in between. */
    struct block *trailing = NULL;
    bool unmapped_remains = last->state == BLOCK_UNMAPPED && block_end(last) > map_end;
    if (!unmapped_remains && free_for_stream(allocator, last->next, stream))
        last = trailing = last->next;
    struct block *before = start->prev;
    struct block *after = last->next;
    count_split(allocator, before, -1);
    count_split(allocator, after, -1);
    /* The grown block belongs to the requesting stream. Its own earlier
     * stream-ordered frees may still be in flight there (fine for it, but
     * the tick must stay so no other stream takes that memory early);
     * blocks of other streams joined only because they are cleared. */
    uint64_t own_free_tick = 0;
    for (struct block *block = start; block != after; block = block->next) {
        count_split(allocator, block, -1);
        if (block->state == BLOCK_FREE && block->stream == stream &&
            block->free_tick > own_free_tick)
            own_free_tick = block->free_tick;
    }

    struct block *grown = start;
    detach_for_growth(allocator, state, grown, map_end, &spare);
    while (block_end(grown) < target_end) {
        detach_for_growth(allocator, state, grown->next, map_end, &spare);
        absorb_next(allocator, grown);
    }
    if (trailing != NULL) {
        free_blocks_remove(allocator, trailing);
        absorb_next(allocator, grown);
    }
    grown->stream = stream;
    grown->free_tick = own_free_tick;
    /* Counted as a free block, as the allocator expects of what it splits. */
    count_split(allocator, grown, 1);
    count_split(allocator, before, 1);
    count_split(allocator, after, 1);
    if (spare != NULL)
        block_store_give(allocator, spare);
    if (change.mapped_bytes != 0) {
        stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                          (int64_t)change.mapped_bytes);
        /* One per physical handle: a growth over holes creates several. */
        allocator->stats.num_device_alloc += change.handles_created;
    }
    *out = grown;
    return GPUCACHE_SUCCESS;
}

/* The run from `start` must map at least the segment's growth size when it
 * maps anything: one driver allocation then serves several requests, as a
 * plain segment of large_segment_size_mb would. The slack extends the run
 * into the unmapped range it ends in, within the memory fraction, and is
 * left as a free block after the request. */
static size_t growth_with_slack(struct gpucache_allocator *allocator, const struct block *start,
                                size_t size)
{
    const struct segment *segment = start->segment;
    const struct expandable_state *state = state_of(segment);
    const struct gpucache_expandable_segment *pages = state->pages;
    uint64_t end = start->address + size;
    const struct block *last = start;
    while (block_end(last) < end)
        last = last->next;
    if (last->state != BLOCK_UNMAPPED)
        return size;
    size_t new_bytes = gpucache_expandable_segment_unmapped_pages(
                           pages, start->address - segment->base, size) *
                       pages->page_size;
    if (new_bytes == 0 || new_bytes >= state->growth_size)
        return size;
    uint64_t page_end = segment->base + (end - segment->base + pages->page_size - 1) /
                                            pages->page_size * pages->page_size;
    uint64_t slack_end = page_end + (state->growth_size - new_bytes);
    if (slack_end > block_end(last))
        slack_end = block_end(last);
    /* Within the memory fraction, the slack shrinks to whole pages that fit. */
    uint64_t reserved = (uint64_t)allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    uint64_t maximum = allocator->allowed_memory_maximum;
    if (maximum != UINT64_MAX) {
        uint64_t room = maximum > reserved + new_bytes ? maximum - reserved - new_bytes : 0;
        room = room / pages->page_size * pages->page_size;
        if (slack_end - page_end > room)
            slack_end = page_end + room;
    }
    return slack_end > end ? (size_t)(slack_end - start->address) : size;
}

gpucache_result expandable_acquire(struct gpucache_allocator *allocator,
                                        enum pool_kind pool, gpucache_stream stream,
                                        size_t rounded_size, struct block **out)
{
    if (stitching_enabled(allocator))
        expandable_request_stitch_fences(allocator);
    struct block *start = find_run(allocator, pool, stream, rounded_size);
    struct segment *created = NULL;
    if (start == NULL) {
        gpucache_result result = expandable_create_segment(allocator, pool, stream, rounded_size, &created);
        if (result != GPUCACHE_SUCCESS)
            return result;
        start = RB_MIN(unmapped_tree, &state_of(created)->unmapped);
    }
    size_t grow_size = growth_with_slack(allocator, start, rounded_size);
    gpucache_result result = grow_run(allocator, start, stream, grow_size, out);
    /* The slack is an economy of driver calls, never a reason to fail. */
    if (result == GPUCACHE_ERROR_OUT_OF_MEMORY && grow_size != rounded_size)
        result = grow_run(allocator, start, stream, rounded_size, out);
    /* A segment made for this request and still empty is not kept. */
    if (result != GPUCACHE_SUCCESS && created != NULL)
        expandable_destroy_segment(allocator, created);
    return result;
}

/* What a free block could grow to without moving: itself and the unmapped
 * range after it. */
static size_t growable_size(const struct block *block)
{
    bool unmapped_after = block->next != NULL && block->next->state == BLOCK_UNMAPPED;
    return block->size + (unmapped_after ? block->next->size : 0);
}

/* Whether `block` is in a segment of the size class of a request of
 * `size` bytes (always, without expandable_segments_size_class_mb). */
static bool in_class_of_request(const struct gpucache_allocator *allocator,
                                const struct block *block, size_t size)
{
    return state_of(block->segment)->serves_size_class ==
           in_size_class(allocator, block->pool, size);
}

/* PyTorch's walk from the smallest fitting block `found`: the next larger
 * blocks of the stream (of the request's size class) are taken while each
 * could grow to less than the one before. */
static struct block *prefer_fixed_blocks(const struct gpucache_allocator *allocator,
                                         struct block *found, size_t size)
{
    for (struct block *next = RB_NEXT(free_tree, NULL, found);
         next != NULL && next->stream == found->stream && in_expandable_segment(next);
         next = RB_NEXT(free_tree, NULL, next)) {
        if (!in_class_of_request(allocator, next, size))
            continue;
        if (growable_size(next) >= growable_size(found))
            break;
        found = next;
    }
    return found;
}

struct block *expandable_choose_free_block(const struct gpucache_allocator *allocator,
                                               struct block *found, size_t size,
                                               bool other_class)
{
    if (!in_expandable_segment(found))
        return found; /* plain segments: no walk on the hot path */
    if (in_class_of_request(allocator, found, size))
        return prefer_fixed_blocks(allocator, found, size);
    struct block *fitting = RB_NEXT(free_tree, NULL, found);
    while (fitting != NULL && fitting->stream == found->stream &&
           in_expandable_segment(fitting) && !in_class_of_request(allocator, fitting, size))
        fitting = RB_NEXT(free_tree, NULL, fitting);
    if (fitting != NULL && fitting->stream == found->stream && in_expandable_segment(fitting))
        return prefer_fixed_blocks(allocator, fitting, size);
    /* Nothing free in the request's class: the miss chain grows that class
     * rather than cut a block of the other; when growth fails, the other
     * class's block serves, so the key never turns a fitting free block
     * into an OOM. */
    return other_class ? prefer_fixed_blocks(allocator, found, size) : NULL;
}

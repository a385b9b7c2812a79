/* Expandable segments in the allocator (PyTorch's expandable_segments:True,
 * research notes §3.4-3.8): growth into the lowest free-and-unmapped run of
 * the stream's segments, and unmapping of wholly free pages. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "expandable_pool.h"
#include "gpucache_expandable_segment.h"
#include "size_policy.h"

_Static_assert(GPUCACHE_ALLOCATOR_MAX_PEERS <= GPUCACHE_EXPANDABLE_MAX_PEERS,
              "every peer of the allocator must fit each segment's list");

RB_HEAD(unmapped_tree, block);

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

static int unmapped_compare(const struct block *a, const struct block *b)
{
    return (a->address > b->address) - (a->address < b->address);
}

RB_PROTOTYPE(unmapped_tree, block, tree_link, unmapped_compare)
RB_GENERATE(unmapped_tree, block, tree_link, unmapped_compare)

static struct expandable_state *state_of(const struct segment *segment)
{
    return segment->expandable;
}

/* Whether a request belongs to the size class of
 * expandable_segments_size_class_mb: large requests that grow segments of
 * their own, so that smaller ones never settle in the slots they free. */
static bool in_size_class(const struct gpucache_allocator *allocator, enum pool_kind pool,
                          size_t rounded_size)
{
    uint64_t threshold = allocator->config->expandable_segments_size_class;
    return threshold != 0 && pool == POOL_LARGE && rounded_size >= threshold;
}

/* Whether growth for a request of (pool, stream, size) may use `segment`. */
static bool segment_serves(const struct gpucache_allocator *allocator,
                           const struct segment *segment, enum pool_kind pool,
                           gpucache_stream stream, size_t rounded_size)
{
    return segment->kind == SEGMENT_EXPANDABLE && segment->pool == pool &&
           segment->stream == stream &&
           state_of(segment)->serves_size_class == in_size_class(allocator, pool, rounded_size);
}

static uint64_t block_end(const struct block *block)
{
    return block->address + block->size;
}

/* The driver's time spent inside vmm/ counts like every other driver call. */
struct driver_timer {
    int64_t start;
};

static struct driver_timer timer_start(void)
{
    return (struct driver_timer){monotonic_nanoseconds()};
}

static void timer_stop(struct gpucache_allocator *allocator, struct driver_timer timer)
{
    allocator->stats.driver_nanoseconds += monotonic_nanoseconds() - timer.start;
}

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

static gpucache_result create_segment(struct gpucache_allocator *allocator,
                                      enum pool_kind pool, gpucache_stream stream, size_t size,
                                      struct segment **out)
{
    size_t page_size = 0, growth_size = 0, reserve_size = 0;
    struct driver_timer timer = timer_start();
    gpucache_result result = gpucache_expandable_geometry(
        allocator->driver, allocator->config, allocator->device, pool == POOL_SMALL, &page_size,
        &growth_size, &reserve_size);
    timer_stop(allocator, timer);
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
    timer = timer_start();
    result = gpucache_expandable_segment_create(allocator->driver, allocator->device, stream,
                                                page_size, reserve_size, allocator->peers,
                                                allocator->peer_count, &state->pages);
    timer_stop(allocator, timer);
    if (result != GPUCACHE_SUCCESS)
        goto fail;
    RB_INIT(&state->unmapped);
    state->growth_size = growth_size;
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
static bool destroy_segment(struct gpucache_allocator *allocator, struct segment *segment)
{
    struct expandable_state *state = state_of(segment);
    /* Normally none: only handles a refused release left behind. */
    size_t handles_left = state->pages->stats.handles;
    struct driver_timer timer = timer_start();
    gpucache_result result = gpucache_expandable_segment_destroy(state->pages);
    timer_stop(allocator, timer);
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

/* Adds (sign 1) or removes (sign -1) a free block's share of the
 * inactive-split statistics, around changes the allocator does not see. */
static void count_split(struct gpucache_allocator *allocator, const struct block *block,
                        int sign)
{
    if (block == NULL || block->state != BLOCK_FREE || !expandable_pool_block_is_split(block))
        return;
    stat_array_change(allocator->stats.inactive_split, block->pool, sign);
    stat_array_change(allocator->stats.inactive_split_bytes, block->pool,
                      sign * (int64_t)block->size);
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
        free_pool_remove(allocator, block);
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

static void absorb_next(struct gpucache_allocator *allocator, struct block *block)
{
    struct block *next = block->next;
    block->size += next->size;
    block->next = next->next;
    if (next->next != NULL)
        next->next->prev = block;
    block_store_give(allocator, next);
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
    size_t newly_mapped = 0;
    uint64_t handles_before = pages->stats.driver_maps;
    uint64_t released_before = pages->stats.handles_released;
    struct driver_timer timer = timer_start();
    gpucache_result result = gpucache_expandable_segment_map(pages, offset, size, &newly_mapped);
    timer_stop(allocator, timer);
    /* A map first retries handles a refused release left behind. */
    allocator->stats.num_device_free += pages->stats.handles_released - released_before;
    if (result != GPUCACHE_SUCCESS) {
        block_store_give(allocator, spare);
        return result;
    }
    uint64_t target_end = start->address + size;
    uint64_t map_end = segment->base + (offset + size + pages->page_size - 1) /
                                           pages->page_size * pages->page_size;
    if (newly_mapped != 0)
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
        free_pool_remove(allocator, trailing);
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
    if (newly_mapped != 0) {
        stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                          (int64_t)newly_mapped);
        /* One per physical handle: a growth over holes creates several. */
        allocator->stats.num_device_alloc += pages->stats.driver_maps - handles_before;
    }
    *out = grown;
    return GPUCACHE_SUCCESS;
}

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

gpucache_result expandable_pool_acquire(struct gpucache_allocator *allocator,
                                        enum pool_kind pool, gpucache_stream stream,
                                        size_t rounded_size, struct block **out)
{
    struct block *start = find_run(allocator, pool, stream, rounded_size);
    struct segment *created = NULL;
    if (start == NULL) {
        gpucache_result result = create_segment(allocator, pool, stream, rounded_size, &created);
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
        destroy_segment(allocator, created);
    return result;
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
    size_t released = 0;
    uint64_t released_before = pages->stats.handles_released;
    struct driver_timer timer = timer_start();
    gpucache_expandable_segment_unmap(pages, span_offset, span_length, &released);
    timer_stop(allocator, timer);
    uint64_t handles_released = pages->stats.handles_released - released_before;
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
    uint64_t end = block_end(block);
    uint64_t gc_count_base = block->gc_count_base;
    /* Only the block and its free neighbours can change split state; free
     * neighbours are never merged below (only unmapped ones are). */
    struct block *before = block->prev;
    struct block *after = block->next;
    count_split(allocator, before, -1);
    count_split(allocator, after, -1);
    count_split(allocator, block, -1);
    free_pool_remove(allocator, block);

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
        free_pool_insert(allocator, tail);
        tail->gc_count_base = gc_count_base;
        count_split(allocator, tail, 1);
    } else {
        block_store_give(allocator, tail);
    }
    RB_INSERT(unmapped_tree, &state->unmapped, middle);
    middle = merge_unmapped(allocator, state, middle);
    if (block != NULL) {
        free_pool_insert(allocator, block);
        block->gc_count_base = gc_count_base;
        count_split(allocator, block, 1);
    }
    count_split(allocator, before, 1);
    count_split(allocator, after, 1);

    stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                      -(int64_t)(hole_end - hole_start));
    allocator->stats.num_device_free += handles_released;
    emit_event(allocator, GPUCACHE_EVENT_SEGMENT_UNMAP, hole_start, hole_end - hole_start,
               segment->stream);
    if (middle->address == segment->base && middle->size == segment->size)
        destroy_segment(allocator, segment);
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
        int64_t timer = driver_timer_start();
        result = driver_fence_stream(allocator, stream, &fence);
        driver_timer_stop(allocator, timer);
        if (result == GPUCACHE_SUCCESS) {
            DRIVER_CALL(allocator, result, fence_wait, fence);
            allocator->stats.num_fence_waits++;
            driver_fence_release(allocator, fence);
            if (result == GPUCACHE_SUCCESS) {
                epochs_stream_work_done(allocator, stream, epochs_now(allocator));
                return;
            }
        }
    }
    synchronize_device_for_reuse(allocator);
}

static bool in_expandable_segment(const struct block *block)
{
    return block->segment->kind == SEGMENT_EXPANDABLE;
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

struct block *expandable_pool_choose_free_block(const struct gpucache_allocator *allocator,
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

size_t expandable_pool_release_free_pages(struct gpucache_allocator *allocator)
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

size_t expandable_pool_garbage_collect(struct gpucache_allocator *allocator, size_t target)
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

void expandable_pool_report_unmapping(struct gpucache_allocator *allocator,
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

void expandable_pool_drop_segment(struct gpucache_allocator *allocator,
                                  struct segment *segment, bool context_alive)
{
    struct expandable_state *state = state_of(segment);
    if (context_alive) {
        expandable_pool_report_unmapping(allocator, segment);
        stat_array_change(allocator->stats.reserved_bytes, segment->pool,
                          -(int64_t)state->pages->stats.mapped_bytes);
    }
    struct driver_timer timer = timer_start();
    gpucache_result result = gpucache_expandable_segment_destroy(state->pages);
    timer_stop(allocator, timer);
    if (result != GPUCACHE_SUCCESS)
        gpucache_expandable_segment_abandon(state->pages);
    free(state);
    segment->expandable = NULL;
}

bool expandable_pool_block_is_split(const struct block *block)
{
    if (!in_expandable_segment(block))
        return block->prev != NULL || block->next != NULL;
    return (block->prev != NULL && block->prev->state != BLOCK_UNMAPPED) ||
           (block->next != NULL && block->next->state != BLOCK_UNMAPPED);
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
            struct driver_timer timer = timer_start();
            result = gpucache_expandable_segment_add_peer(state_of(segment)->pages, peer);
            timer_stop(allocator, timer);
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

struct block *expandable_pool_first_unmapped(const struct segment *segment)
{
    if (segment->kind != SEGMENT_EXPANDABLE)
        return NULL;
    return RB_MIN(unmapped_tree, &state_of(segment)->unmapped);
}

struct block *expandable_pool_next_unmapped(struct block *block)
{
    return RB_NEXT(unmapped_tree, &state_of(block->segment)->unmapped, block);
}

bool expandable_pool_check_segment(const struct segment *segment, size_t *mapped_bytes,
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

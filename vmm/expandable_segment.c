/* The page manager of one expandable segment: reserve the address range,
 * back runs of pages with physical handles, grant access, unmap and release
 * whole handles, destroy. Every driver failure leaves the bitmaps equal to
 * what the driver really holds, so nothing leaks and a retry is safe. */
#include <stdlib.h>
#include <string.h>

#include <bitstring.h>

#include "gpucache_expandable_segment.h"

static bool page_mapped(const struct gpucache_expandable_segment *segment, size_t page)
{
    return bit_test(segment->mapped, page) != 0;
}

static bool page_held(const struct gpucache_expandable_segment *segment, size_t page)
{
    return bit_test(segment->held, page) != 0;
}

static bool handle_starts(const struct gpucache_expandable_segment *segment, size_t page)
{
    return bit_test(segment->handle_start, page) != 0;
}

/* Set at a handle's first page when the driver refused to unmap it during a
 * rollback: its pages count as unmapped, but the mapping is still there. */
static bool stale_mapping(const struct gpucache_expandable_segment *segment, size_t first)
{
    return bit_test(segment->stale_mapping, first) != 0;
}

static uint64_t page_address(const struct gpucache_expandable_segment *segment, size_t page)
{
    return segment->base + (uint64_t)page * segment->page_size;
}

static void free_tables(struct gpucache_expandable_segment *segment)
{
    free(segment->mapped);
    free(segment->held);
    free(segment->handle_start);
    free(segment->stale_mapping);
    free(segment->handles);
    free(segment->handle_pages);
}

gpucache_result gpucache_expandable_segment_create(const struct gpucache_driver *driver,
                                                   int device, gpucache_stream stream,
                                                   size_t page_size, size_t reserve_size,
                                                   const int *peers, size_t peer_count,
                                                   struct gpucache_expandable_segment **segment)
{
    *segment = NULL;
    if (page_size == 0 || reserve_size == 0 || reserve_size % page_size != 0 ||
        peer_count > GPUCACHE_EXPANDABLE_MAX_PEERS)
        return GPUCACHE_ERROR_INVALID_VALUE;
    struct gpucache_expandable_segment *created = calloc(1, sizeof *created);
    if (created == NULL)
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    created->driver = driver;
    created->device = device;
    created->stream = stream;
    created->page_size = page_size;
    created->page_count = reserve_size / page_size;
    created->reserve_size = reserve_size;
    created->mapped = bit_alloc(created->page_count);
    created->held = bit_alloc(created->page_count);
    created->handle_start = bit_alloc(created->page_count);
    created->stale_mapping = bit_alloc(created->page_count);
    if (created->mapped == NULL || created->held == NULL || created->handle_start == NULL ||
        created->stale_mapping == NULL) {
        free_tables(created);
        free(created);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < peer_count; i++)
        if (peers[i] != device)
            created->peers[created->peer_count++] = peers[i];
    gpucache_result result =
        driver->address_reserve(driver->context, device, reserve_size, &created->base);
    if (result != GPUCACHE_SUCCESS) {
        free_tables(created);
        free(created);
        return result;
    }
    *segment = created;
    return GPUCACHE_SUCCESS;
}

gpucache_result gpucache_expandable_segment_destroy(struct gpucache_expandable_segment *segment)
{
    if (segment == NULL)
        return GPUCACHE_SUCCESS;
    gpucache_result result =
        gpucache_expandable_segment_unmap(segment, 0, segment->reserve_size, NULL);
    if (result != GPUCACHE_SUCCESS)
        return result;
    const struct gpucache_driver *driver = segment->driver;
    result = driver->address_free(driver->context, segment->device, segment->base,
                                  segment->reserve_size);
    if (result != GPUCACHE_SUCCESS)
        return result;
    gpucache_expandable_segment_abandon(segment);
    return GPUCACHE_SUCCESS;
}

void gpucache_expandable_segment_abandon(struct gpucache_expandable_segment *segment)
{
    if (segment == NULL)
        return;
    free_tables(segment);
    free(segment);
}

/* Handle tables are kept only up to the highest page used, so a segment
 * that maps little costs little host memory whatever its reservation. */
static bool track_pages(struct gpucache_expandable_segment *segment, size_t pages)
{
    if (pages <= segment->tracked_pages)
        return true;
    size_t capacity = segment->tracked_pages ? segment->tracked_pages : 16;
    while (capacity < pages)
        capacity *= 2;
    if (capacity > segment->page_count)
        capacity = segment->page_count;
    gpucache_page_handle *handles = reallocarray(segment->handles, capacity, sizeof *handles);
    if (handles == NULL)
        return false;
    segment->handles = handles;
    size_t *handle_pages = reallocarray(segment->handle_pages, capacity, sizeof *handle_pages);
    if (handle_pages == NULL)
        return false;
    segment->handle_pages = handle_pages;
    segment->tracked_pages = capacity;
    return true;
}

static void page_range(const struct gpucache_expandable_segment *segment, size_t offset,
                       size_t length, size_t *first, size_t *stop)
{
    *first = offset / segment->page_size;
    *stop = (offset + length + segment->page_size - 1) / segment->page_size;
}

static bool range_valid(const struct gpucache_expandable_segment *segment, size_t offset,
                        size_t length)
{
    return offset <= segment->reserve_size && length <= segment->reserve_size - offset;
}

/* The first page of the handle holding `page` (which must be held). */
static size_t handle_first_page(const struct gpucache_expandable_segment *segment, size_t page)
{
    while (!handle_starts(segment, page))
        page--;
    return page;
}

static gpucache_result grant_access(struct gpucache_expandable_segment *segment, size_t first,
                                    size_t stop)
{
    const struct gpucache_driver *driver = segment->driver;
    segment->stats.driver_set_access++;
    return driver->set_access(driver->context, segment->device, page_address(segment, first),
                              (stop - first) * segment->page_size, segment->peers,
                              segment->peer_count);
}

/* Gives back the handle starting at `first`, whose pages count as unmapped:
 * its leftover mapping first (if a rollback could not remove it), then the
 * handle itself. */
static gpucache_result retire_handle(struct gpucache_expandable_segment *segment, size_t first,
                                     struct gpucache_expandable_change *change)
{
    const struct gpucache_driver *driver = segment->driver;
    size_t pages = segment->handle_pages[first];
    if (stale_mapping(segment, first)) {
        segment->stats.driver_unmaps++;
        gpucache_result result = driver->page_unmap(
            driver->context, segment->device, page_address(segment, first),
            pages * segment->page_size);
        if (result != GPUCACHE_SUCCESS)
            return result;
        bit_clear(segment->stale_mapping, first);
    }
    gpucache_result result =
        driver->page_release(driver->context, segment->device, segment->handles[first]);
    if (result != GPUCACHE_SUCCESS)
        return result;
    bit_nclear(segment->held, first, first + pages - 1);
    bit_clear(segment->handle_start, first);
    segment->stats.unreleased_handles--;
    segment->stats.handles--;
    segment->stats.handles_released++;
    change->handles_released++;
    change->released_bytes += pages * segment->page_size;
    return GPUCACHE_SUCCESS;
}

/* Records a handle of pages [first, first + pages) that a failed map could
 * not give back (the driver refused the unmap or the release): it stays
 * held, its pages unmapped, and the next map or unmap over it or destroy
 * retries, so no handle is ever forgotten. */
static void keep_failed_handle(struct gpucache_expandable_segment *segment, size_t first,
                               size_t pages, gpucache_page_handle handle, bool still_mapped)
{
    segment->handles[first] = handle;
    segment->handle_pages[first] = pages;
    bit_nset(segment->held, first, first + pages - 1);
    bit_set(segment->handle_start, first);
    if (still_mapped)
        bit_set(segment->stale_mapping, first);
    segment->stats.handles++;
    segment->stats.unreleased_handles++;
}

/* A handle the driver refused to release earlier and that overlaps
 * [first, stop) is released now: new handles cannot be mapped over it, and
 * one reaching outside the range could not be mapped again as a whole. */
static gpucache_result release_stale_handles(struct gpucache_expandable_segment *segment,
                                             size_t first, size_t stop,
                                             struct gpucache_expandable_change *change)
{
    if (segment->stats.unreleased_handles == 0)
        return GPUCACHE_SUCCESS;
    size_t limit = stop < segment->tracked_pages ? stop : segment->tracked_pages;
    for (size_t page = first; page < limit;) {
        if (page_mapped(segment, page) || !page_held(segment, page)) {
            page++;
            continue;
        }
        size_t start = handle_first_page(segment, page);
        size_t pages = segment->handle_pages[start];
        gpucache_result result = retire_handle(segment, start, change);
        if (result != GPUCACHE_SUCCESS)
            return result;
        page = start + pages;
    }
    return GPUCACHE_SUCCESS;
}

/* Pages [first, first + pages) are unmapped: one new handle for them,
 * mapped in one call. Recorded in the tables only by the caller. */
static gpucache_result map_new_handle(struct gpucache_expandable_segment *segment, size_t first,
                                      size_t pages)
{
    const struct gpucache_driver *driver = segment->driver;
    size_t bytes = pages * segment->page_size;
    gpucache_page_handle handle;
    gpucache_result result = driver->page_create(driver->context, segment->device, bytes,
                                                 &handle);
    if (result != GPUCACHE_SUCCESS)
        return result;
    result = driver->page_map(driver->context, segment->device, page_address(segment, first),
                              bytes, handle);
    if (result != GPUCACHE_SUCCESS) {
        if (driver->page_release(driver->context, segment->device, handle) != GPUCACHE_SUCCESS)
            keep_failed_handle(segment, first, pages, handle, false);
        return result;
    }
    segment->stats.driver_maps++;
    segment->handles[first] = handle;
    segment->handle_pages[first] = pages;
    return GPUCACHE_SUCCESS;
}

void gpucache_expandable_segment_set_handle_plan(struct gpucache_expandable_segment *segment,
                                                 size_t first_pages, bool doubling)
{
    segment->plan_first_pages = first_pages;
    segment->plan_doubling = doubling;
}

/* Pages of the next handle of a run with `done` pages already backed and
 * `left` still to back, by the segment's plan. */
static size_t next_handle_pages(const struct gpucache_expandable_segment *segment, size_t done,
                                size_t left)
{
    size_t first = segment->plan_first_pages;
    if (first == 0)
        return left;
    size_t pages = segment->plan_doubling && done > first ? done : first;
    if (pages >= left)
        return left;
    size_t after = segment->plan_doubling && done + pages > first ? done + pages : first;
    return left - pages < after ? left : pages;
}

/* Backs the run of unmapped pages [first, stop) with new handles cut by the
 * plan. On failure *reached is the first page not backed: the handles
 * before it are the caller's to roll back. */
static gpucache_result map_run(struct gpucache_expandable_segment *segment, size_t first,
                               size_t stop, size_t *reached)
{
    for (size_t page = first; page < stop;) {
        size_t pages = next_handle_pages(segment, page - first, stop - page);
        gpucache_result result = map_new_handle(segment, page, pages);
        if (result != GPUCACHE_SUCCESS) {
            *reached = page;
            return result;
        }
        page += pages;
    }
    *reached = stop;
    return GPUCACHE_SUCCESS;
}

/* The source whose handle the stitched map under way moved to `page` of
 * its target, or NULL. */
static struct gpucache_expandable_source *moved_to(size_t page,
                                                   struct gpucache_expandable_source *sources,
                                                   size_t source_count)
{
    for (size_t i = 0; i < source_count; i++)
        if (sources[i].moved && sources[i].target_page == page)
            return &sources[i];
    return NULL;
}

/* Gives up the handle at `first` of its segment, just unmapped, to move it. */
static void forget_moved_handle(struct gpucache_expandable_segment *segment, size_t first,
                                size_t pages)
{
    bit_nclear(segment->mapped, first, first + pages - 1);
    bit_nclear(segment->held, first, first + pages - 1);
    bit_clear(segment->handle_start, first);
    segment->stats.mapped_pages -= pages;
    segment->stats.mapped_bytes -= pages * segment->page_size;
    segment->stats.handles--;
    segment->stats.handles_moved_out++;
}

/* Puts a moved handle, mapped nowhere now, back at pages [first, first +
 * pages) of the segment it came from. When the driver refuses, the pages
 * were free anyway: the handle is released (in *change), or, if even that
 * is refused, kept by the segment as a handle to release later. */
static void return_moved_handle(struct gpucache_expandable_segment *segment, size_t first,
                                size_t pages, gpucache_page_handle handle,
                                struct gpucache_expandable_change *change)
{
    const struct gpucache_driver *driver = segment->driver;
    size_t bytes = pages * segment->page_size;
    bool mapped = driver->page_map(driver->context, segment->device,
                                   page_address(segment, first), bytes,
                                   handle) == GPUCACHE_SUCCESS;
    if (mapped && grant_access(segment, first, first + pages) == GPUCACHE_SUCCESS) {
        segment->handles[first] = handle;
        segment->handle_pages[first] = pages;
        bit_nset(segment->mapped, first, first + pages - 1);
        bit_nset(segment->held, first, first + pages - 1);
        bit_set(segment->handle_start, first);
        segment->stats.mapped_pages += pages;
        segment->stats.mapped_bytes += bytes;
        segment->stats.handles++;
        segment->stats.handles_moved_out--;
        return;
    }
    if (mapped) {
        segment->stats.driver_unmaps++;
        if (driver->page_unmap(driver->context, segment->device, page_address(segment, first),
                               bytes) != GPUCACHE_SUCCESS) {
            keep_failed_handle(segment, first, pages, handle, true);
            return;
        }
    }
    if (driver->page_release(driver->context, segment->device, handle) != GPUCACHE_SUCCESS) {
        keep_failed_handle(segment, first, pages, handle, false);
        return;
    }
    segment->stats.handles_released++;
    change->handles_released++;
    change->released_bytes += bytes;
}

/* Whether `source` is, right now, a whole mapped handle of a segment of the
 * same device and page size, outside pages [first, stop) of `segment`. */
static bool source_movable(const struct gpucache_expandable_segment *segment, size_t first,
                           size_t stop, const struct gpucache_expandable_source *source)
{
    const struct gpucache_expandable_segment *from = source->segment;
    size_t page = source->first_page;
    if (from == NULL || source->moved || source->pages == 0 || page >= from->tracked_pages ||
        from->device != segment->device || from->page_size != segment->page_size)
        return false;
    if (!handle_starts(from, page) || !page_mapped(from, page) || stale_mapping(from, page) ||
        from->handle_pages[page] != source->pages)
        return false;
    return from != segment || page >= stop || page + source->pages <= first;
}

/* Unmaps the handle of `source` where it is and maps it at pages [page,
 * page + source->pages) of `segment`, recorded in the tables there (bits
 * only by the caller's commit). On failure the handle went back to its
 * source or was given up as return_moved_handle says. */
static gpucache_result move_handle(struct gpucache_expandable_segment *segment, size_t page,
                                   struct gpucache_expandable_source *source,
                                   struct gpucache_expandable_change *change)
{
    struct gpucache_expandable_segment *from = source->segment;
    const struct gpucache_driver *driver = from->driver;
    size_t first = source->first_page, pages = source->pages;
    gpucache_page_handle handle = from->handles[first];
    from->stats.driver_unmaps++;
    gpucache_result result = driver->page_unmap(driver->context, from->device,
                                                page_address(from, first),
                                                pages * from->page_size);
    if (result != GPUCACHE_SUCCESS)
        return result;
    forget_moved_handle(from, first, pages);
    result = segment->driver->page_map(segment->driver->context, segment->device,
                                       page_address(segment, page), pages * segment->page_size,
                                       handle);
    if (result != GPUCACHE_SUCCESS) {
        return_moved_handle(from, first, pages, handle, change);
        return result;
    }
    segment->handles[page] = handle;
    segment->handle_pages[page] = pages;
    source->moved = true;
    source->target_page = page;
    return GPUCACHE_SUCCESS;
}

/* Undoes the handles a failed map call mapped in [first, undo_stop) whose
 * pages are not yet marked mapped: new ones are unmapped and released,
 * moved ones go back to their sources. */
static void roll_back_runs(struct gpucache_expandable_segment *segment, size_t first,
                           size_t undo_stop, struct gpucache_expandable_source *sources,
                           size_t source_count, struct gpucache_expandable_change *change)
{
    const struct gpucache_driver *driver = segment->driver;
    for (size_t page = first; page < undo_stop;) {
        if (page_mapped(segment, page)) {
            page++;
            continue;
        }
        size_t pages = segment->handle_pages[page];
        gpucache_page_handle handle = segment->handles[page];
        struct gpucache_expandable_source *source =
            moved_to(page, sources, source_count);
        segment->stats.driver_unmaps++;
        bool unmapped = driver->page_unmap(driver->context, segment->device,
                                           page_address(segment, page),
                                           pages * segment->page_size) == GPUCACHE_SUCCESS;
        if (source != NULL) {
            source->moved = false;
            if (unmapped)
                return_moved_handle(source->segment, source->first_page, pages, handle, change);
            else /* it stays here, to be released with the next map over it */
                keep_failed_handle(segment, page, pages, handle, true);
        } else if (!unmapped) {
            keep_failed_handle(segment, page, pages, handle, true);
        } else if (driver->page_release(driver->context, segment->device, handle) !=
                   GPUCACHE_SUCCESS) {
            keep_failed_handle(segment, page, pages, handle, false);
        }
        page += pages;
    }
    segment->stats.rolled_back_maps++;
}

/* The first source, in order, that can move into a run with `room` pages
 * left: NULL when none fits. */
static struct gpucache_expandable_source *
fitting_source(const struct gpucache_expandable_segment *segment, size_t first, size_t stop,
               size_t room, struct gpucache_expandable_source *sources, size_t source_count)
{
    for (size_t i = 0; i < source_count; i++)
        if (sources[i].pages <= room && source_movable(segment, first, stop, &sources[i]))
            return &sources[i];
    return NULL;
}

/* Backs the run of unmapped pages [first, stop): moved handles while one
 * fits what is left, new handles for the rest. *reached as for map_run. */
static gpucache_result stitch_run(struct gpucache_expandable_segment *segment, size_t first,
                                  size_t stop, size_t range_first, size_t range_stop,
                                  struct gpucache_expandable_source *sources,
                                  size_t source_count, struct gpucache_expandable_change *change,
                                  size_t *reached)
{
    size_t page = first;
    for (struct gpucache_expandable_source *source;
         page < stop && (source = fitting_source(segment, range_first, range_stop, stop - page,
                                                 sources, source_count)) != NULL;) {
        gpucache_result result = move_handle(segment, page, source, change);
        if (result != GPUCACHE_SUCCESS) {
            *reached = page;
            return result;
        }
        page += source->pages;
    }
    return map_run(segment, page, stop, reached);
}

gpucache_result gpucache_expandable_segment_map(struct gpucache_expandable_segment *segment,
                                                size_t offset, size_t length,
                                                struct gpucache_expandable_change *change)
{
    return gpucache_expandable_segment_map_stitched(segment, offset, length, NULL, 0, change);
}

gpucache_result gpucache_expandable_segment_map_stitched(
    struct gpucache_expandable_segment *segment, size_t offset, size_t length,
    struct gpucache_expandable_source *sources, size_t source_count,
    struct gpucache_expandable_change *change)
{
    struct gpucache_expandable_change ignored;
    if (change == NULL)
        change = &ignored;
    *change = (struct gpucache_expandable_change){0};
    for (size_t i = 0; i < source_count; i++)
        sources[i].moved = false;
    if (!range_valid(segment, offset, length))
        return GPUCACHE_ERROR_INVALID_VALUE;
    if (length == 0)
        return GPUCACHE_SUCCESS;
    size_t first, stop;
    page_range(segment, offset, length, &first, &stop);
    if (!track_pages(segment, stop))
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    gpucache_result result = release_stale_handles(segment, first, stop, change);
    if (result != GPUCACHE_SUCCESS)
        return result;

    /* New state is committed to the bitmaps only at the end, so a failure
     * can tell what this call mapped from what was there before. */
    size_t first_new = SIZE_MAX, stop_new = 0;
    for (size_t page = first; page < stop;) {
        if (page_mapped(segment, page)) {
            page++;
            continue;
        }
        size_t run_stop = page + 1;
        while (run_stop < stop && !page_mapped(segment, run_stop))
            run_stop++;
        size_t reached = page;
        result = stitch_run(segment, page, run_stop, first, stop, sources, source_count, change,
                            &reached);
        if (result != GPUCACHE_SUCCESS) {
            size_t undo_first = first_new != SIZE_MAX ? first_new : page;
            if (reached > undo_first)
                roll_back_runs(segment, undo_first, reached, sources, source_count, change);
            else
                segment->stats.rolled_back_maps++;
            return result;
        }
        if (first_new == SIZE_MAX)
            first_new = page;
        stop_new = run_stop;
        page = run_stop;
    }
    if (first_new == SIZE_MAX)
        return GPUCACHE_SUCCESS;

    /* One call over the span of new runs: any old page inside it is already
     * accessible, and granting again is harmless and cheaper than a call per
     * run. */
    result = grant_access(segment, first_new, stop_new);
    if (result != GPUCACHE_SUCCESS) {
        roll_back_runs(segment, first_new, stop_new, sources, source_count, change);
        return result;
    }
    size_t mapped_now = 0, handles_now = 0, moved_now = 0, moved_pages = 0;
    for (size_t page = first_new; page < stop_new;) {
        if (page_mapped(segment, page)) {
            page++;
            continue;
        }
        size_t pages = segment->handle_pages[page];
        bit_nset(segment->mapped, page, page + pages - 1);
        bit_nset(segment->held, page, page + pages - 1);
        bit_set(segment->handle_start, page);
        segment->stats.handles++;
        if (moved_to(page, sources, source_count) != NULL) {
            moved_now++;
            moved_pages += pages;
        } else {
            handles_now++;
        }
        mapped_now += pages;
        page += pages;
    }
    struct gpucache_expandable_segment_stats *stats = &segment->stats;
    stats->mapped_pages += mapped_now;
    stats->mapped_bytes += mapped_now * segment->page_size;
    if (stats->mapped_bytes > stats->peak_mapped_bytes)
        stats->peak_mapped_bytes = stats->mapped_bytes;
    stats->map_operations++;
    stats->handles_moved_in += moved_now;
    change->mapped_bytes = mapped_now * segment->page_size;
    change->handles_created = handles_now;
    change->handles_moved = moved_now;
    change->moved_bytes = moved_pages * segment->page_size;
    return GPUCACHE_SUCCESS;
}

/* The first handle starting at or after `page` and below `stop`, or `stop`. */
static size_t next_handle_start(const struct gpucache_expandable_segment *segment, size_t page,
                                size_t stop)
{
    while (page < stop && !handle_starts(segment, page))
        page++;
    return page;
}

/* Whole handles inside [offset, offset + length), as the pages
 * [*first, *stop) from the first such handle to the end of the last. */
static void whole_handle_pages(const struct gpucache_expandable_segment *segment, size_t offset,
                               size_t length, size_t *first, size_t *stop)
{
    size_t page_size = segment->page_size;
    size_t limit = (offset + length) / page_size;
    if (limit > segment->tracked_pages) /* no page beyond was ever held */
        limit = segment->tracked_pages;
    size_t page = next_handle_start(segment, (offset + page_size - 1) / page_size, limit);
    *first = page;
    *stop = page;
    while (page < limit && page + segment->handle_pages[page] <= limit) {
        page += segment->handle_pages[page];
        *stop = page;
        page = next_handle_start(segment, page, limit);
    }
}

gpucache_result gpucache_expandable_segment_unmap(struct gpucache_expandable_segment *segment,
                                                  size_t offset, size_t length,
                                                  struct gpucache_expandable_change *change)
{
    struct gpucache_expandable_change ignored;
    if (change == NULL)
        change = &ignored;
    *change = (struct gpucache_expandable_change){0};
    if (!range_valid(segment, offset, length))
        return GPUCACHE_ERROR_INVALID_VALUE;
    size_t first, stop;
    whole_handle_pages(segment, offset, length, &first, &stop);
    const struct gpucache_driver *driver = segment->driver;
    struct gpucache_expandable_segment_stats *stats = &segment->stats;
    bool unmapped_any = false;
    gpucache_result result = GPUCACHE_SUCCESS;
    for (size_t page = next_handle_start(segment, first, stop); page < stop;
         page = next_handle_start(segment, page, stop)) {
        size_t pages = segment->handle_pages[page];
        if (page_mapped(segment, page)) {
            stats->driver_unmaps++;
            result = driver->page_unmap(driver->context, segment->device,
                                        page_address(segment, page), pages * segment->page_size);
            if (result != GPUCACHE_SUCCESS)
                break;
            bit_nclear(segment->mapped, page, page + pages - 1);
            stats->mapped_pages -= pages;
            stats->mapped_bytes -= pages * segment->page_size;
            stats->unreleased_handles++;
            unmapped_any = true;
        }
        result = retire_handle(segment, page, change);
        if (result != GPUCACHE_SUCCESS)
            break;
        page += pages;
    }
    if (unmapped_any)
        stats->unmap_operations++;
    return result;
}

bool gpucache_expandable_segment_page_mapped(const struct gpucache_expandable_segment *segment,
                                             size_t page_index)
{
    return page_index < segment->page_count && page_mapped(segment, page_index);
}

/* Mapped pages in [first, stop): 64 pages per step where it can, because
 * holes in a large reservation span thousands of pages. */
static size_t count_mapped(const struct gpucache_expandable_segment *segment, size_t first,
                           size_t stop)
{
    size_t count = 0;
    size_t page = first;
    for (; page < stop && page % 64 != 0; page++)
        count += page_mapped(segment, page);
    for (; page + 64 <= stop; page += 64) {
        uint64_t word;
        memcpy(&word, segment->mapped + page / 8, sizeof word);
        count += (size_t)__builtin_popcountll(word);
    }
    for (; page < stop; page++)
        count += page_mapped(segment, page);
    return count;
}

size_t gpucache_expandable_segment_unmapped_pages(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length)
{
    if (length == 0 || !range_valid(segment, offset, length))
        return 0;
    size_t first, stop;
    page_range(segment, offset, length, &first, &stop);
    return stop - first - count_mapped(segment, first, stop);
}

size_t gpucache_expandable_segment_releasable_bytes(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length)
{
    if (!range_valid(segment, offset, length))
        return 0;
    size_t first, stop;
    whole_handle_pages(segment, offset, length, &first, &stop);
    return first < stop ? count_mapped(segment, first, stop) * segment->page_size : 0;
}

bool gpucache_expandable_segment_releasable_span(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length,
    size_t *span_offset, size_t *span_length)
{
    *span_offset = 0;
    *span_length = 0;
    if (!range_valid(segment, offset, length))
        return false;
    size_t first, stop;
    whole_handle_pages(segment, offset, length, &first, &stop);
    if (first >= stop)
        return false;
    *span_offset = first * segment->page_size;
    *span_length = (stop - first) * segment->page_size;
    return true;
}

bool gpucache_expandable_segment_whole_handle(const struct gpucache_expandable_segment *segment,
                                              size_t offset, size_t length, size_t from_page,
                                              size_t *first_page, size_t *pages)
{
    *first_page = 0;
    *pages = 0;
    if (!range_valid(segment, offset, length))
        return false;
    size_t first, stop;
    whole_handle_pages(segment, offset, length, &first, &stop);
    for (size_t page = next_handle_start(segment, from_page > first ? from_page : first, stop);
         page < stop; page = next_handle_start(segment, page + 1, stop)) {
        if (page_mapped(segment, page) && !stale_mapping(segment, page)) {
            *first_page = page;
            *pages = segment->handle_pages[page];
            return true;
        }
    }
    return false;
}

bool gpucache_expandable_segment_contains(const struct gpucache_expandable_segment *segment,
                                          uint64_t address)
{
    return address >= segment->base && address - segment->base < segment->reserve_size;
}

gpucache_result gpucache_expandable_segment_add_peer(struct gpucache_expandable_segment *segment,
                                                     int peer)
{
    if (peer == segment->device)
        return GPUCACHE_SUCCESS;
    for (size_t i = 0; i < segment->peer_count; i++)
        if (segment->peers[i] == peer)
            return GPUCACHE_SUCCESS;
    if (segment->peer_count == GPUCACHE_EXPANDABLE_MAX_PEERS)
        return GPUCACHE_ERROR_INVALID_VALUE;
    segment->peers[segment->peer_count++] = peer;
    /* The driver wants mapped ranges, so access is granted run by run. Only
     * tracked pages can ever have been mapped. */
    size_t limit = segment->tracked_pages;
    for (size_t page = 0; page < limit;) {
        if (!page_mapped(segment, page)) {
            page++;
            continue;
        }
        size_t run_end = page;
        while (run_end < limit && page_mapped(segment, run_end))
            run_end++;
        gpucache_result result = grant_access(segment, page, run_end);
        if (result != GPUCACHE_SUCCESS) {
            /* Not recorded, so a later retry grants every run again. */
            segment->peer_count--;
            return result;
        }
        page = run_end;
    }
    return GPUCACHE_SUCCESS;
}

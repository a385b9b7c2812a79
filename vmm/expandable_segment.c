/* The page manager of one expandable segment: reserve, map and unmap pages,
 * grant access, destroy. Every driver failure leaves the page bitmaps equal
 * to what the driver really holds, so nothing leaks and a retry is safe. */
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

static uint64_t page_address(const struct gpucache_expandable_segment *segment, size_t page)
{
    return segment->base + (uint64_t)page * segment->page_size;
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
    if (created->mapped == NULL || created->held == NULL) {
        free(created->mapped);
        free(created->held);
        free(created);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < peer_count; i++)
        if (peers[i] != device)
            created->peers[created->peer_count++] = peers[i];
    gpucache_result result =
        driver->address_reserve(driver->context, device, reserve_size, &created->base);
    if (result != GPUCACHE_SUCCESS) {
        free(created->mapped);
        free(created->held);
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
    free(segment->mapped);
    free(segment->held);
    free(segment->handles);
    free(segment);
}

/* Handles are stored only up to the highest page used, so a segment that
 * maps little costs little host memory whatever its reservation. */
static bool reserve_handles(struct gpucache_expandable_segment *segment, size_t pages)
{
    if (pages <= segment->handle_capacity)
        return true;
    size_t capacity = segment->handle_capacity ? segment->handle_capacity : 16;
    while (capacity < pages)
        capacity *= 2;
    if (capacity > segment->page_count)
        capacity = segment->page_count;
    gpucache_page_handle *grown = reallocarray(segment->handles, capacity, sizeof *grown);
    if (grown == NULL)
        return false;
    segment->handles = grown;
    segment->handle_capacity = capacity;
    return true;
}

/* Undoes a partial map of pages [first, stop): pages mapped before the call
 * are untouched; pages mapped in it are unmapped; handles created in it are
 * released. `stop_mapped` says whether page stop - 1 got as far as mapped. */
static void roll_back_map(struct gpucache_expandable_segment *segment, size_t first, size_t stop,
                          bool stop_mapped)
{
    const struct gpucache_driver *driver = segment->driver;
    for (size_t page = first; page < stop; page++) {
        if (page_mapped(segment, page))
            continue;
        bool was_mapped = page + 1 < stop || stop_mapped;
        if (was_mapped) {
            driver->page_unmap(driver->context, segment->device, page_address(segment, page),
                               segment->page_size);
            segment->stats.driver_page_unmaps++;
        }
        if (!page_held(segment, page))
            driver->page_release(driver->context, segment->device, segment->handles[page]);
    }
    segment->stats.rolled_back_maps++;
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

static gpucache_result grant_access(struct gpucache_expandable_segment *segment, size_t first,
                                    size_t stop)
{
    const struct gpucache_driver *driver = segment->driver;
    segment->stats.driver_set_access++;
    return driver->set_access(driver->context, segment->device, page_address(segment, first),
                              (stop - first) * segment->page_size, segment->peers,
                              segment->peer_count);
}

gpucache_result gpucache_expandable_segment_map(struct gpucache_expandable_segment *segment,
                                                size_t offset, size_t length,
                                                size_t *newly_mapped)
{
    if (newly_mapped != NULL)
        *newly_mapped = 0;
    if (!range_valid(segment, offset, length))
        return GPUCACHE_ERROR_INVALID_VALUE;
    if (length == 0)
        return GPUCACHE_SUCCESS;
    size_t first, stop;
    page_range(segment, offset, length, &first, &stop);
    if (!reserve_handles(segment, stop))
        return GPUCACHE_ERROR_OUT_OF_MEMORY;

    /* New state is committed to the bitmaps only at the end, so a failure
     * can tell what this call created from what was there before. */
    const struct gpucache_driver *driver = segment->driver;
    size_t first_new = SIZE_MAX, last_new = 0;
    for (size_t page = first; page < stop; page++) {
        if (page_mapped(segment, page))
            continue;
        gpucache_result result = GPUCACHE_SUCCESS;
        if (!page_held(segment, page))
            result = driver->page_create(driver->context, segment->device, segment->page_size,
                                         &segment->handles[page]);
        if (result != GPUCACHE_SUCCESS) {
            roll_back_map(segment, first, page, true);
            return result;
        }
        segment->stats.driver_page_maps++;
        result = driver->page_map(driver->context, segment->device, page_address(segment, page),
                                  segment->page_size, segment->handles[page]);
        if (result != GPUCACHE_SUCCESS) {
            roll_back_map(segment, first, page + 1, false);
            return result;
        }
        if (first_new == SIZE_MAX)
            first_new = page;
        last_new = page;
    }
    if (first_new == SIZE_MAX)
        return GPUCACHE_SUCCESS;

    /* One call over the span of new pages: any old page inside it is already
     * accessible, and granting again is harmless and cheaper than a call per
     * run of new pages. */
    gpucache_result result = grant_access(segment, first_new, last_new + 1);
    if (result != GPUCACHE_SUCCESS) {
        roll_back_map(segment, first, stop, true);
        return result;
    }
    size_t mapped_now = 0;
    for (size_t page = first_new; page <= last_new; page++) {
        if (page_mapped(segment, page))
            continue;
        if (page_held(segment, page))
            segment->stats.unreleased_pages--;
        bit_set(segment->mapped, page);
        bit_set(segment->held, page);
        mapped_now++;
    }
    struct gpucache_expandable_segment_stats *stats = &segment->stats;
    stats->mapped_pages += mapped_now;
    stats->mapped_bytes += mapped_now * segment->page_size;
    if (stats->mapped_bytes > stats->peak_mapped_bytes)
        stats->peak_mapped_bytes = stats->mapped_bytes;
    stats->map_operations++;
    if (newly_mapped != NULL)
        *newly_mapped = mapped_now * segment->page_size;
    return GPUCACHE_SUCCESS;
}

gpucache_result gpucache_expandable_segment_unmap(struct gpucache_expandable_segment *segment,
                                                  size_t offset, size_t length,
                                                  size_t *released)
{
    if (released != NULL)
        *released = 0;
    if (!range_valid(segment, offset, length))
        return GPUCACHE_ERROR_INVALID_VALUE;
    size_t page_size = segment->page_size;
    size_t first = (offset + page_size - 1) / page_size;
    size_t stop = (offset + length) / page_size;
    if (stop > segment->handle_capacity) /* no page beyond was ever held */
        stop = segment->handle_capacity;
    const struct gpucache_driver *driver = segment->driver;
    struct gpucache_expandable_segment_stats *stats = &segment->stats;
    bool unmapped_any = false;
    gpucache_result result = GPUCACHE_SUCCESS;
    for (size_t page = first; page < stop; page++) {
        if (page_mapped(segment, page)) {
            stats->driver_page_unmaps++;
            result = driver->page_unmap(driver->context, segment->device,
                                        page_address(segment, page), page_size);
            if (result != GPUCACHE_SUCCESS)
                break;
            bit_clear(segment->mapped, page);
            stats->mapped_pages--;
            stats->mapped_bytes -= page_size;
            stats->unreleased_pages++;
            unmapped_any = true;
        }
        if (page_held(segment, page)) {
            result = driver->page_release(driver->context, segment->device,
                                          segment->handles[page]);
            if (result != GPUCACHE_SUCCESS)
                break;
            bit_clear(segment->held, page);
            stats->unreleased_pages--;
            if (released != NULL)
                *released += page_size;
        }
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
    size_t page_size = segment->page_size;
    size_t first = (offset + page_size - 1) / page_size;
    size_t stop = (offset + length) / page_size;
    return first < stop ? count_mapped(segment, first, stop) * page_size : 0;
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
     * pages below handle_capacity can ever have been mapped. */
    size_t limit = segment->handle_capacity;
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

/* Where in a segment a request should go, given the free ranges the
 * allocator knows about. */
#include "gpucache_expandable_segment.h"

/* Fewest new pages for a window of `size` bytes inside [start, end): tries
 * both ends and every page-aligned start in between, sliding the window one
 * page at a time so the count is kept up to date in O(1) per step. */
static size_t fewest_new_pages(const struct gpucache_expandable_segment *segment, size_t start,
                               size_t end, size_t size, size_t *offset)
{
    size_t best = gpucache_expandable_segment_unmapped_pages(segment, start, size);
    *offset = start;
    size_t at_end = gpucache_expandable_segment_unmapped_pages(segment, end - size, size);
    if (at_end < best) {
        best = at_end;
        *offset = end - size;
    }
    size_t page_size = segment->page_size;
    size_t page = (start + page_size - 1) / page_size;
    if (best == 0 || size == 0 || page * page_size > end - size)
        return best;
    size_t window_pages = (size + page_size - 1) / page_size;
    size_t count = gpucache_expandable_segment_unmapped_pages(segment, page * page_size, size);
    /* Beyond the highest page ever held everything is unmapped, so later
     * windows cannot do better than the one that first reaches there. */
    size_t last_page = (end - size) / page_size;
    size_t held_limit = segment->tracked_pages;
    for (;;) {
        if (count < best || (count == best && page * page_size < *offset)) {
            best = count;
            *offset = page * page_size;
        }
        if (best == 0 || page >= last_page || page >= held_limit)
            break;
        count -= !gpucache_expandable_segment_page_mapped(segment, page);
        count += !gpucache_expandable_segment_page_mapped(segment, page + window_pages);
        page++;
    }
    return best;
}

bool gpucache_expandable_segment_find_hole(const struct gpucache_expandable_segment *segment,
                                           const struct gpucache_free_range *free_ranges,
                                           size_t range_count, size_t size,
                                           enum gpucache_hole_policy policy, size_t *offset)
{
    bool found = false;
    size_t best_offset = 0, best_new_pages = SIZE_MAX;
    for (size_t i = 0; i < range_count;) {
        /* The allocator's chain alternates mapped and unmapped free blocks;
         * touching ranges form one hole. */
        size_t start = free_ranges[i].offset;
        size_t end = start + free_ranges[i].length;
        for (i++; i < range_count && free_ranges[i].offset == end; i++)
            end += free_ranges[i].length;
        if (end - start < size)
            continue;
        if (policy == GPUCACHE_HOLE_LOWEST) {
            *offset = start;
            return true;
        }
        size_t candidate = 0;
        size_t new_pages = fewest_new_pages(segment, start, end, size, &candidate);
        if (new_pages < best_new_pages) {
            best_new_pages = new_pages;
            best_offset = candidate;
            found = true;
        }
        if (best_new_pages == 0)
            break;
    }
    if (found)
        *offset = best_offset;
    return found;
}

/* How big an expandable segment's pages and reservation are, and the error
 * a request gets when it cannot fit one reservation. */
#include <math.h>
#include <stdio.h>

#include "gpucache_config.h"
#include "gpucache_expandable_segment.h"

static size_t round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

size_t gpucache_expandable_page_size(size_t granularity)
{
    if (granularity == 0)
        return GPUCACHE_EXPANDABLE_SMALL_PAGE_SIZE;
    return round_up(GPUCACHE_EXPANDABLE_SMALL_PAGE_SIZE, granularity);
}

size_t gpucache_expandable_growth_size(const struct gpucache_config *config, bool small_pool,
                                       size_t page_size)
{
    if (small_pool)
        return page_size;
    return round_up((size_t)config->large_segment_size, page_size);
}

/* Pages needed for `bytes`, at least one and at most `limit`. */
static size_t clamp_pages(double bytes, size_t page_size, size_t limit)
{
    if (!(bytes > 0)) /* also catches NaN */
        return 1;
    double pages = ceil(bytes / (double)page_size);
    if (pages >= (double)limit)
        return limit;
    return pages < 1 ? 1 : (size_t)pages;
}

size_t gpucache_expandable_reserve_size(const struct gpucache_reserve *reserve,
                                        size_t total_memory, size_t page_size)
{
    /* The extra eighth lets pages unmapped early in the range be mapped
     * again at the end without running out of address space. */
    size_t full_pages = (total_memory + total_memory / 8 + page_size - 1) / page_size;
    if (full_pages == 0)
        full_pages = 1;
    size_t pages = full_pages;
    if (reserve != NULL) {
        switch (reserve->kind) {
        case GPUCACHE_RESERVE_FRACTION:
            pages = clamp_pages(reserve->fraction * (double)total_memory, page_size, full_pages);
            break;
        case GPUCACHE_RESERVE_BYTES:
            pages = clamp_pages((double)reserve->bytes, page_size, full_pages);
            break;
        case GPUCACHE_RESERVE_DEFAULT:
            break;
        }
    }
    return pages * page_size;
}

gpucache_result gpucache_expandable_geometry(const struct gpucache_driver *driver,
                                             const struct gpucache_config *config, int device,
                                             bool small_pool, size_t *page_size,
                                             size_t *growth_size, size_t *reserve_size)
{
    size_t granularity = 0;
    gpucache_result result = driver->page_granularity(driver->context, device, &granularity);
    if (result != GPUCACHE_SUCCESS)
        return result;
    size_t free_bytes = 0, total_bytes = 0;
    result = driver->memory_info(driver->context, device, &free_bytes, &total_bytes);
    if (result != GPUCACHE_SUCCESS)
        return result;
    *page_size = gpucache_expandable_page_size(granularity);
    *growth_size = gpucache_expandable_growth_size(config, small_pool, *page_size);
    *reserve_size = gpucache_expandable_reserve_size(&config->expandable_segments_reserve,
                                                     total_bytes, *page_size);
    return GPUCACHE_SUCCESS;
}

bool gpucache_expandable_fits(size_t reserve_size, size_t size)
{
    return size <= reserve_size;
}

/* PyTorch's format_size wording, so messages read like the ones users know,
 * with TiB and PiB past 1024 GiB so an absurd request reads as one. */
static void format_size(char *out, size_t capacity, size_t bytes)
{
    if (bytes <= 1024)
        snprintf(out, capacity, "%zu bytes", bytes);
    else if (bytes <= ((size_t)1 << 20))
        snprintf(out, capacity, "%.2f KiB", (double)bytes / 1024.0);
    else if (bytes <= ((size_t)1 << 30))
        snprintf(out, capacity, "%.2f MiB", (double)bytes / 1048576.0);
    else if (bytes <= ((size_t)1 << 40))
        snprintf(out, capacity, "%.2f GiB", (double)bytes / 1073741824.0);
    else if (bytes <= ((size_t)1 << 50))
        snprintf(out, capacity, "%.2f TiB", (double)bytes / 1099511627776.0);
    else
        snprintf(out, capacity, "%.2f PiB", (double)bytes / 1125899906842624.0);
}

size_t gpucache_expandable_too_large_message(char *out, size_t capacity, int device,
                                             size_t request, size_t reserve_size)
{
    char request_text[32], reserve_text[32];
    format_size(request_text, sizeof request_text, request);
    format_size(reserve_text, sizeof reserve_text, reserve_size);
    int length = snprintf(out, capacity,
                          "gpucache: device %d: a request of %s does not fit one expandable "
                          "segment, whose address reservation is %s; raise "
                          "expandable_segments_reserve (%s, at most 9/8 of device memory) or "
                          "set expandable_segments:False",
                          device, request_text, reserve_text,
                          gpucache_config_key_expected(GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE));
    return length < 0 ? 0 : (size_t)length;
}

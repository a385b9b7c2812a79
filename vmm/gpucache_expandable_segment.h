/* Expandable segments: one virtual address reservation per (device, pool,
 * stream) whose pages are backed by physical memory on demand, through the
 * VMM calls of the driver interface. This layer only knows pages; which bytes
 * hold blocks is the allocator's business. Not thread-safe: the allocator's
 * per-device lock covers every call. */
#ifndef GPUCACHE_EXPANDABLE_SEGMENT_H
#define GPUCACHE_EXPANDABLE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_driver.h"

struct gpucache_config;
struct gpucache_reserve;

/* The page size of the small pool before rounding to the driver's
 * granularity (PyTorch's kSmallBuffer). */
#define GPUCACHE_EXPANDABLE_SMALL_PAGE_SIZE ((size_t)2 << 20)

/* Most peers a segment grants access to (peers are other devices). */
#define GPUCACHE_EXPANDABLE_MAX_PEERS 64

struct gpucache_expandable_segment_stats {
    size_t mapped_bytes;
    size_t mapped_pages;
    size_t peak_mapped_bytes;
    /* Pages unmapped whose handle the driver refused to release; they are
     * retried by the next unmap of their range and by destroy. */
    size_t unreleased_pages;
    uint64_t map_operations;   /* calls of ..._map that mapped a page */
    uint64_t unmap_operations; /* calls of ..._unmap that unmapped a page */
    uint64_t rolled_back_maps; /* calls of ..._map undone by a failure */
    uint64_t driver_page_maps;
    uint64_t driver_page_unmaps;
    uint64_t driver_set_access;
};

/* Fields are read-only outside vmm/. Per page it keeps two bits (mapped,
 * handle held) and, up to the highest page ever held, one handle. */
struct gpucache_expandable_segment {
    const struct gpucache_driver *driver;
    int device;
    gpucache_stream stream;
    uint64_t base;       /* first byte of the reservation */
    size_t page_size;    /* multiple of the driver's granularity */
    size_t page_count;   /* reservation = page_count * page_size */
    size_t reserve_size;
    unsigned char *mapped;      /* bit per page: mapped and accessible */
    unsigned char *held;        /* bit per page: a physical handle exists */
    gpucache_page_handle *handles; /* valid where `held` is set */
    size_t handle_capacity;
    int peers[GPUCACHE_EXPANDABLE_MAX_PEERS];
    size_t peer_count;
    struct gpucache_expandable_segment_stats stats;
};

/* Page size for the small pool (2 MiB) or the large pool
 * (config->large_segment_size), rounded up to `granularity`. */
size_t gpucache_expandable_page_size(const struct gpucache_config *config, bool small_pool,
                                     size_t granularity);

/* Reservation size for a device of `total_memory` bytes: 9/8 of it by
 * default, or what `reserve` asks for (fraction of total_memory, or bytes),
 * never more than the default; always whole pages, at least one page. */
size_t gpucache_expandable_reserve_size(const struct gpucache_reserve *reserve,
                                        size_t total_memory, size_t page_size);

/* Asks the driver for granularity and total memory of `device` and computes
 * the page and reservation sizes of a segment of the given pool. */
gpucache_result gpucache_expandable_geometry(const struct gpucache_driver *driver,
                                             const struct gpucache_config *config, int device,
                                             bool small_pool, size_t *page_size,
                                             size_t *reserve_size);

/* True when a request of `size` bytes can fit one segment of `reserve_size`. */
bool gpucache_expandable_fits(size_t reserve_size, size_t size);

/* Writes the one-line error for a request larger than a segment's
 * reservation (naming expandable_segments_reserve) into `out`; returns the
 * length it needed, as snprintf does. */
size_t gpucache_expandable_too_large_message(char *out, size_t capacity, int device,
                                             size_t request, size_t reserve_size);

/* Reserves `reserve_size` bytes (a multiple of `page_size`) of address space
 * for `stream` on `device`; access will be granted to the device and to
 * `peers`. On failure nothing is left reserved and *segment is NULL. */
gpucache_result gpucache_expandable_segment_create(const struct gpucache_driver *driver,
                                                   int device, gpucache_stream stream,
                                                   size_t page_size, size_t reserve_size,
                                                   const int *peers, size_t peer_count,
                                                   struct gpucache_expandable_segment **segment);

/* Unmaps and releases every page and frees the address range. On a driver
 * failure the segment stays valid (whatever could be undone is) and the
 * error is returned; calling destroy again retries. NULL is a no-op. */
gpucache_result gpucache_expandable_segment_destroy(struct gpucache_expandable_segment *segment);

/* Frees the host memory of a segment without calling the driver: for when
 * the context that owned its pages and addresses is already gone. */
void gpucache_expandable_segment_abandon(struct gpucache_expandable_segment *segment);

/* Backs every page touched by [offset, offset + length) with physical
 * memory and grants access. Either all those pages end up mapped, or (on a
 * failure) every page this call created is released again and the segment is
 * exactly as before. *newly_mapped (may be NULL) gets the bytes mapped. */
gpucache_result gpucache_expandable_segment_map(struct gpucache_expandable_segment *segment,
                                                size_t offset, size_t length,
                                                size_t *newly_mapped);

/* Unmaps and releases the pages lying wholly inside [offset, offset +
 * length); partial pages at either end stay. *released (may be NULL) gets
 * the bytes whose physical memory went back to the driver. */
gpucache_result gpucache_expandable_segment_unmap(struct gpucache_expandable_segment *segment,
                                                  size_t offset, size_t length,
                                                  size_t *released);

/* Whether page `page_index` is mapped (false beyond the reservation). */
bool gpucache_expandable_segment_page_mapped(const struct gpucache_expandable_segment *segment,
                                             size_t page_index);

/* How many pages touched by [offset, offset + length) are not mapped: the
 * pages a map of that range would create. */
size_t gpucache_expandable_segment_unmapped_pages(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length);

/* Bytes of [offset, offset + length) that lie in wholly covered pages which
 * are mapped: what an unmap of that range would give back. */
size_t gpucache_expandable_segment_releasable_bytes(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length);

/* True when `address` lies inside the reservation. */
bool gpucache_expandable_segment_contains(const struct gpucache_expandable_segment *segment,
                                          uint64_t address);

/* Grants `peer` access to every mapped page and to pages mapped later.
 * Adding the segment's own device or a peer already added does nothing. */
gpucache_result gpucache_expandable_segment_add_peer(struct gpucache_expandable_segment *segment,
                                                     int peer);

/* A free byte range inside a segment (mapped or not), as offsets. */
struct gpucache_free_range {
    size_t offset;
    size_t length;
};

enum gpucache_hole_policy {
    /* PyTorch: the lowest free range that fits (growth normally lands in
     * the free tail, so free space stays contiguous). */
    GPUCACHE_HOLE_LOWEST = 0,
    /* The placement in a fitting free range (at either end or at a page
     * boundary) that needs the fewest new pages; lowest offset on ties. */
    GPUCACHE_HOLE_FEWEST_NEW_PAGES,
};

/* Picks where `size` bytes go among `free_ranges` (sorted by offset, not
 * overlapping; touching ranges count as one). Returns false when none fits;
 * otherwise *offset is where the request starts. */
bool gpucache_expandable_segment_find_hole(const struct gpucache_expandable_segment *segment,
                                           const struct gpucache_free_range *free_ranges,
                                           size_t range_count, size_t size,
                                           enum gpucache_hole_policy policy, size_t *offset);

#endif

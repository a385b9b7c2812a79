/* Expandable segments: one virtual address reservation per (device, pool,
 * stream) whose pages are backed by physical memory on demand, through the
 * VMM calls of the driver interface. Pages (the driver's granularity,
 * normally 2 MiB) are the unit of mapping; each map call backs every run of
 * unmapped pages it covers with one physical handle, mapped in one driver
 * call, and a handle is unmapped and released only as a whole. This layer
 * only knows pages and handles; which bytes hold blocks, and how much to map
 * at a time, is the allocator's business. Not thread-safe: the allocator's
 * per-device lock covers every call. */
#ifndef GPUCACHE_EXPANDABLE_SEGMENT_H
#define GPUCACHE_EXPANDABLE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_driver.h"

struct gpucache_config;
struct gpucache_reserve;

/* The page size before rounding to the driver's granularity, and the
 * smallest growth of a small-pool segment (PyTorch's kSmallBuffer). */
#define GPUCACHE_EXPANDABLE_SMALL_PAGE_SIZE ((size_t)2 << 20)

/* Most peers a segment grants access to (peers are other devices). */
#define GPUCACHE_EXPANDABLE_MAX_PEERS 64

struct gpucache_expandable_segment_stats {
    size_t mapped_bytes;
    size_t mapped_pages;
    size_t peak_mapped_bytes;
    size_t handles; /* physical handles held, mapped or not */
    /* Handles whose pages count as unmapped but that the driver refused to
     * release (or, in a rollback, to unmap); they are retried by the next
     * unmap or map over their pages and by destroy. */
    size_t unreleased_handles;
    uint64_t map_operations;   /* calls of ..._map that mapped a page */
    uint64_t unmap_operations; /* calls of ..._unmap that unmapped a page */
    uint64_t rolled_back_maps; /* calls of ..._map undone by a failure */
    uint64_t driver_maps;      /* handles created and mapped */
    uint64_t handles_released; /* handles given back to the driver */
    uint64_t driver_unmaps;
    uint64_t driver_set_access;
    uint64_t handles_moved_in;  /* handles a stitched map took from elsewhere */
    uint64_t handles_moved_out; /* handles a stitched map took from here */
};

/* What one ..._map or ..._unmap call did to the driver's memory, filled in
 * also when the call fails part way, so that the caller counts driver
 * allocations and frees without diffing the statistics around the call. */
struct gpucache_expandable_change {
    size_t mapped_bytes;     /* map: bytes newly mapped (0 unless it succeeded) */
    size_t handles_created;  /* map: handles created and mapped (0 unless it succeeded) */
    /* Handles given back to the driver and their bytes: by an unmap, and by
     * a map that first releases handles a refused release left behind. */
    size_t handles_released;
    size_t released_bytes;
    /* Stitched map: handles moved in from sources, and their bytes (part of
     * mapped_bytes; 0 unless it succeeded). */
    size_t handles_moved;
    size_t moved_bytes;
};

/* A whole, mapped, free handle of some segment that a stitched map may move
 * into the pages it backs instead of creating a handle: pages [first_page,
 * first_page + pages) of `segment`. The map sets `moved` when it took it. */
struct gpucache_expandable_source {
    struct gpucache_expandable_segment *segment;
    size_t first_page;
    size_t pages;
    bool moved;
    size_t target_page; /* where the map put it, when moved */
};

/* Fields are read-only outside vmm/. Per page it keeps four bits (mapped,
 * held by a handle, first page of a handle, mapping left by a failed
 * rollback) and, up to the highest page
 * ever used, the handle and its length in pages at each handle's first
 * page. */
struct gpucache_expandable_segment {
    const struct gpucache_driver *driver;
    int device;
    gpucache_stream stream;
    uint64_t base;       /* first byte of the reservation */
    size_t page_size;    /* multiple of the driver's granularity */
    size_t page_count;   /* reservation = page_count * page_size */
    size_t reserve_size;
    unsigned char *mapped;       /* bit per page: mapped and accessible */
    unsigned char *held;         /* bit per page: a physical handle backs it */
    unsigned char *handle_start; /* bit per page: a handle begins here */
    /* bit per page, at a handle's first page: the handle's pages count as
     * unmapped but the driver refused to unmap it during a rollback */
    unsigned char *stale_mapping;
    gpucache_page_handle *handles; /* valid where `handle_start` is set */
    size_t *handle_pages;          /* valid where `handle_start` is set */
    size_t tracked_pages;          /* length of the two arrays above */
    int peers[GPUCACHE_EXPANDABLE_MAX_PEERS];
    size_t peer_count;
    /* How runs are cut into handles (..._set_handle_plan). */
    size_t plan_first_pages;
    bool plan_doubling;
    struct gpucache_expandable_segment_stats stats;
};

/* Page size of both pools: 2 MiB rounded up to `granularity`. */
size_t gpucache_expandable_page_size(size_t granularity);

/* The least a segment maps when it grows: one page for the small pool,
 * config->large_segment_size rounded up to whole pages for the large pool,
 * so a growth costs no more driver allocations than a plain segment. */
size_t gpucache_expandable_growth_size(const struct gpucache_config *config, bool small_pool,
                                       size_t page_size);

/* Reservation size for a device of `total_memory` bytes: 9/8 of it by
 * default, or what `reserve` asks for (fraction of total_memory, or bytes),
 * never more than the default; always whole pages, at least one page. */
size_t gpucache_expandable_reserve_size(const struct gpucache_reserve *reserve,
                                        size_t total_memory, size_t page_size);

/* Asks the driver for granularity and total memory of `device` and computes
 * the page, least-growth and reservation sizes of a segment of the given
 * pool. */
gpucache_result gpucache_expandable_geometry(const struct gpucache_driver *driver,
                                             const struct gpucache_config *config, int device,
                                             bool small_pool, size_t *page_size,
                                             size_t *growth_size, size_t *reserve_size);

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
 * memory (one handle per run of unmapped pages) and grants access. Either
 * all those pages end up mapped, or (on a failure) every handle this call
 * created is released again and the segment is as before. A handle left
 * unmapped by a refused release and overlapping the range is released
 * first. *change (may be NULL) gets the bytes mapped and the handles
 * created and released. */
gpucache_result gpucache_expandable_segment_map(struct gpucache_expandable_segment *segment,
                                                size_t offset, size_t length,
                                                struct gpucache_expandable_change *change);

/* How later maps cut a run of unmapped pages into handles: one handle per
 * run when `first_pages` is 0 (the default); else handles of `first_pages`
 * pages, or, when `doubling`, each as large as all before it in the run
 * together (first_pages, first_pages, 2 first_pages, ...); the last handle
 * of a run takes the remainder too small for another. */
void gpucache_expandable_segment_set_handle_plan(struct gpucache_expandable_segment *segment,
                                                 size_t first_pages, bool doubling);

/* As ..._map, but each run of unmapped pages is first filled with handles
 * moved from `sources` (in their order, each that fits what is left of the
 * run), unmapped there and mapped here, and only the rest is backed by new
 * handles. Sources must be whole mapped handles outside the range. On a
 * failure every moved handle goes back to its source, or, when the driver
 * refuses that, is released (in *change) or kept as a handle of the source
 * to release later; so a source's pages may end unmapped even on failure,
 * and the caller reads them back with ..._page_mapped. */
gpucache_result gpucache_expandable_segment_map_stitched(
    struct gpucache_expandable_segment *segment, size_t offset, size_t length,
    struct gpucache_expandable_source *sources, size_t source_count,
    struct gpucache_expandable_change *change);

/* The first mapped handle lying wholly inside [offset, offset + length)
 * that starts at page `from_page` or later: true with its first page and
 * length in pages, false when there is none. */
bool gpucache_expandable_segment_whole_handle(const struct gpucache_expandable_segment *segment,
                                              size_t offset, size_t length, size_t from_page,
                                              size_t *first_page, size_t *pages);

/* Unmaps and releases the handles lying wholly inside [offset, offset +
 * length), in address order, stopping at the first failure; a handle
 * reaching outside the range stays. *change (may be NULL) gets the handles
 * released and the bytes whose physical memory went back to the driver. */
gpucache_result gpucache_expandable_segment_unmap(struct gpucache_expandable_segment *segment,
                                                  size_t offset, size_t length,
                                                  struct gpucache_expandable_change *change);

/* Whether page `page_index` is mapped (false beyond the reservation). */
bool gpucache_expandable_segment_page_mapped(const struct gpucache_expandable_segment *segment,
                                             size_t page_index);

/* How many pages touched by [offset, offset + length) are not mapped: the
 * pages a map of that range would create. */
size_t gpucache_expandable_segment_unmapped_pages(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length);

/* Bytes of [offset, offset + length) that lie in wholly covered handles
 * which are mapped: what an unmap of that range would give back. */
size_t gpucache_expandable_segment_releasable_bytes(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length);

/* The range from the first handle lying wholly inside [offset, offset +
 * length) to the end of the last, as an offset and a length; false (and
 * zeros) when there is none. Inside a mapped range it is what an unmap of
 * [offset, offset + length) would unmap. */
bool gpucache_expandable_segment_releasable_span(
    const struct gpucache_expandable_segment *segment, size_t offset, size_t length,
    size_t *span_offset, size_t *span_length);

/* True when `address` lies inside the reservation. */
bool gpucache_expandable_segment_contains(const struct gpucache_expandable_segment *segment,
                                          uint64_t address);

/* Grants `peer` access to every mapped page and to pages mapped later.
 * Adding the segment's own device or a peer already added does nothing. */
gpucache_result gpucache_expandable_segment_add_peer(struct gpucache_expandable_segment *segment,
                                                     int peer);

#endif

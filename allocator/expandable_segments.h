/* Expandable segments inside the allocator: with expandable_segments:True
 * each (pool, stream) grows one vmm/ reservation instead of asking for new
 * plain segments. Its free mapped blocks live in the pool's free tree like
 * any other; its unmapped address ranges are blocks in state BLOCK_UNMAPPED,
 * kept per segment, so blocks merge across page boundaries and growth
 * extends the free tail. */
#ifndef GPUCACHE_EXPANDABLE_SEGMENTS_H
#define GPUCACHE_EXPANDABLE_SEGMENTS_H

#include "allocator_internal.h"

/* A free, mapped block of at least `rounded_size` bytes for (pool, stream):
 * the lowest run of free and unmapped space in the stream's segments that
 * fits, with the missing pages mapped, or a new segment when none fits. The
 * block is in no tree and its new pages are counted as reserved. Returns
 * OUT_OF_MEMORY when the pages cannot be mapped or the request is larger
 * than a reservation (then one line naming expandable_segments_reserve is
 * written to stderr, once per allocator). */
gpucache_result expandable_acquire(struct gpucache_allocator *allocator,
                                        enum pool_kind pool, gpucache_stream stream,
                                        size_t rounded_size, struct block **out);

/* The free block that serves a request of `size` bytes, from `found`, the
 * smallest fitting free block of the stream. PyTorch's best fit among
 * expandable blocks: a block followed by unmapped space is judged by what
 * it could grow to, so the next larger blocks of the same stream are taken
 * while each could grow to less than the one before, keeping growable
 * tails for requests that need them. With expandable_segments_size_class_mb
 * only blocks of the request's size class qualify (NULL when none is free:
 * the miss chain grows that class), unless `other_class`, which the miss
 * chain sets once growth has failed. `found` itself when it is not
 * expandable. Never maps memory. */
struct block *expandable_choose_free_block(const struct gpucache_allocator *allocator,
                                               struct block *found, size_t size,
                                               bool other_class);

/* Unmaps the whole pages of every free block of every expandable segment,
 * after the work of each segment's stream that may still touch them is done;
 * a segment left with no mapped page gives its address range back. Returns
 * the bytes of physical memory released. */
size_t expandable_release_free_pages(struct gpucache_allocator *allocator);

/* Garbage collection's share of expandable memory: unmaps the whole pages
 * of idle free large-pool blocks that end a mapped run, oldest first, until
 * `target` bytes are unmapped or none is left. Free blocks between live
 * blocks are left alone. Returns the bytes unmapped. */
size_t expandable_garbage_collect(struct gpucache_allocator *allocator, size_t target);

/* Before a growth that may move handles (expandable_segments_stitch): one
 * fence for each stream whose free blocks hold whole handles it may still
 * be using (none while one is in flight), and the completed fences
 * processed, so blocks the device is done with become movable without a
 * wait. Never waits; does nothing under reuse:conservative, where a fence
 * is a device synchronize. */
void expandable_request_stitch_fences(struct gpucache_allocator *allocator);

/* Reports a segment_unmap event for every mapped range of `segment`. */
void expandable_report_unmapping(struct gpucache_allocator *allocator,
                                      const struct segment *segment);

/* Gives an expandable segment's pages and address range back to the driver
 * and forgets it. Physical handles and reservations belong to the process,
 * not to a context, so they are given back even when the context died
 * (`context_alive` false: its events and statistics were already reported
 * as forgotten). The segment struct itself is the caller's. */
void expandable_drop_segment(struct gpucache_allocator *allocator,
                                  struct segment *segment, bool context_alive);

/* For gpucache_allocator_check: the unmapped blocks of a segment in
 * address order (none for a plain segment). */
struct block *expandable_first_unmapped(const struct segment *segment);
struct block *expandable_next_unmapped(struct block *block);

/* For gpucache_allocator_check: the segment's unmapped blocks are whole,
 * unmapped, merged pages and everything else is mapped. On success
 * *mapped_bytes is what the segment holds reserved. */
bool expandable_check_segment(const struct segment *segment, size_t *mapped_bytes,
                                   char *why, size_t why_size);

#endif

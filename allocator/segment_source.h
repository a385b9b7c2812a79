/* Where segments come from and go back to: the one place that asks the
 * driver for device memory. Plain segments are one device_alloc each.
 * Expandable segments (vmm/) plug in here: acquire may instead map pages of
 * a reservation and return a block of it, release may unmap whole pages. */
#ifndef GPUCACHE_SEGMENT_SOURCE_H
#define GPUCACHE_SEGMENT_SOURCE_H

#include "allocator_internal.h"

/* Memory for a rounded request that no cached block can serve: a new
 * segment of `segment_size` bytes for (pool, stream). On success `*out` is a
 * free block of at least `rounded_size` bytes, in no tree, already counted
 * as reserved. Otherwise the driver's result (OUT_OF_MEMORY when full). */
gpucache_result segment_source_acquire(struct gpucache_allocator *allocator,
                                       enum pool_kind pool, gpucache_stream stream,
                                       size_t rounded_size, size_t segment_size,
                                       struct block **out);

/* True when the free block `block` can be handed back on its own: a whole,
 * unpinned plain segment. */
bool segment_source_releasable(const struct block *block);

/* Gives the segment of the releasable free block `block` back to the driver
 * and forgets it. False (nothing changed) when the driver refused. */
bool segment_source_release(struct gpucache_allocator *allocator, struct block *block);

/* The segment that contains `address`, or NULL. */
struct segment *segment_source_find(struct gpucache_allocator *allocator, uint64_t address);

/* Forgets every segment. Plain segments go back to the driver only while
 * `context_alive` (a dead context took them); expandable ones always do. */
void segment_source_drop_all(struct gpucache_allocator *allocator, bool context_alive);

#endif

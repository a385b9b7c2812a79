/* Open-addressing hash map from a block's start address to the block: the
 * O(1) pointer lookup that every free needs. Linear probing with
 * backward-shift deletion, so there are no tombstones and lookups stay short.
 * It never grows inside insert: the owner reserves room on a slow path. */
#ifndef GPUCACHE_BLOCK_MAP_H
#define GPUCACHE_BLOCK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct block;

struct block_map_slot {
    uint64_t address; /* 0: empty (the driver never hands out address 0) */
    struct block *block;
};

struct block_map {
    struct block_map_slot *slots;
    size_t capacity; /* a power of two */
    size_t count;
};

/* Makes room for `entries` entries at a load of at most one half. Returns
 * false when host memory ran out (the map is then unchanged). */
bool block_map_reserve(struct block_map *map, size_t entries);

/* Adds an entry; the caller reserved room for it. */
void block_map_insert(struct block_map *map, uint64_t address, struct block *block);

/* The block starting at `address`, or NULL. */
struct block *block_map_find(const struct block_map *map, uint64_t address);

/* Removes and returns the block starting at `address`, or NULL. */
struct block *block_map_remove(struct block_map *map, uint64_t address);

void block_map_destroy(struct block_map *map);

#endif

/* An open-addressing hash map from a 64-bit device address to a 32-bit
 * index, used while a trace is read to pair each free with its allocation.
 * Readers see one lookup per event, so this is kept to plain arrays. */
#ifndef GPUCACHE_REPLAY_ADDRESS_MAP_H
#define GPUCACHE_REPLAY_ADDRESS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct address_map {
    uint64_t *keys;
    uint32_t *values;
    bool *used;
    size_t capacity; /* a power of two, or 0 before the first insertion */
    unsigned shift;  /* 64 - log2(capacity): keeps the hash's top bits */
    size_t count;
};

/* An empty map; it allocates on the first insertion. */
void address_map_init(struct address_map *map);

/* Frees the map's arrays; the map is empty and usable again. */
void address_map_destroy(struct address_map *map);

/* Sets the value of `key`, adding it if absent. False only when host memory
 * runs out. */
bool address_map_put(struct address_map *map, uint64_t key, uint32_t value);

/* The value of `key`, if present. */
bool address_map_get(const struct address_map *map, uint64_t key, uint32_t *value);

#endif

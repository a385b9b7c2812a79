#include "address_map.h"

#include <stdlib.h>

void address_map_init(struct address_map *map)
{
    *map = (struct address_map){0};
}

void address_map_destroy(struct address_map *map)
{
    free(map->keys);
    free(map->values);
    free(map->used);
    address_map_init(map);
}

/* Fibonacci hashing: the top bits of the product depend on every bit of the
 * key, so addresses with many low zero bits (every device address) still
 * spread over the whole table. */
static size_t slot_of(const struct address_map *map, uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> map->shift);
}

static bool insert_unchecked(struct address_map *map, uint64_t key, uint32_t value)
{
    size_t slot = slot_of(map, key);
    while (map->used[slot]) {
        if (map->keys[slot] == key) {
            map->values[slot] = value;
            return false;
        }
        slot = (slot + 1) & (map->capacity - 1);
    }
    map->used[slot] = true;
    map->keys[slot] = key;
    map->values[slot] = value;
    map->count++;
    return true;
}

static bool grow(struct address_map *map)
{
    size_t capacity = map->capacity ? map->capacity * 2 : 1024;
    unsigned shift = map->capacity ? map->shift - 1 : 64 - 10;
    struct address_map bigger = {
        .keys = malloc(capacity * sizeof *bigger.keys),
        .values = malloc(capacity * sizeof *bigger.values),
        .used = calloc(capacity, sizeof *bigger.used),
        .capacity = capacity,
        .shift = shift,
    };
    if (!bigger.keys || !bigger.values || !bigger.used) {
        address_map_destroy(&bigger);
        return false;
    }
    for (size_t slot = 0; slot < map->capacity; slot++)
        if (map->used[slot])
            insert_unchecked(&bigger, map->keys[slot], map->values[slot]);
    address_map_destroy(map);
    *map = bigger;
    return true;
}

bool address_map_put(struct address_map *map, uint64_t key, uint32_t value)
{
    /* Keep the load at most one half so probe runs stay short. */
    if ((map->count + 1) * 2 > map->capacity && !grow(map))
        return false;
    insert_unchecked(map, key, value);
    return true;
}

bool address_map_get(const struct address_map *map, uint64_t key, uint32_t *value)
{
    if (map->capacity == 0)
        return false;
    size_t slot = slot_of(map, key);
    while (map->used[slot]) {
        if (map->keys[slot] == key) {
            *value = map->values[slot];
            return true;
        }
        slot = (slot + 1) & (map->capacity - 1);
    }
    return false;
}

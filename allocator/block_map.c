/* The address -> block hash map used on every free. */
#include "block_map.h"

#include <stdlib.h>

static size_t slot_of(const struct block_map *map, uint64_t address)
{
    /* Block addresses are multiples of 512: drop those bits, then mix with
     * Fibonacci hashing so that neighbouring blocks spread over the table. */
    uint64_t mixed = (address >> 9) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(mixed >> 32) & (map->capacity - 1);
}

bool block_map_reserve(struct block_map *map, size_t entries)
{
    size_t wanted = 16;
    while (wanted < entries * 2)
        wanted *= 2;
    if (wanted <= map->capacity)
        return true;
    struct block_map_slot *slots = calloc(wanted, sizeof *slots);
    if (slots == NULL)
        return false;
    struct block_map bigger = {.slots = slots, .capacity = wanted, .count = 0};
    for (size_t i = 0; i < map->capacity; i++)
        if (map->slots[i].address != 0)
            block_map_insert(&bigger, map->slots[i].address, map->slots[i].block);
    free(map->slots);
    *map = bigger;
    return true;
}

void block_map_insert(struct block_map *map, uint64_t address, struct block *block)
{
    size_t mask = map->capacity - 1;
    size_t i = slot_of(map, address);
    while (map->slots[i].address != 0)
        i = (i + 1) & mask;
    map->slots[i].address = address;
    map->slots[i].block = block;
    map->count++;
}

static size_t find_slot(const struct block_map *map, uint64_t address)
{
    if (map->capacity == 0 || address == 0)
        return SIZE_MAX;
    size_t mask = map->capacity - 1;
    for (size_t i = slot_of(map, address);; i = (i + 1) & mask) {
        if (map->slots[i].address == address)
            return i;
        if (map->slots[i].address == 0)
            return SIZE_MAX;
    }
}

struct block *block_map_find(const struct block_map *map, uint64_t address)
{
    size_t i = find_slot(map, address);
    return i == SIZE_MAX ? NULL : map->slots[i].block;
}

struct block *block_map_remove(struct block_map *map, uint64_t address)
{
    size_t hole = find_slot(map, address);
    if (hole == SIZE_MAX)
        return NULL;
    struct block *found = map->slots[hole].block;
    size_t mask = map->capacity - 1;
    /* Backward shift: pull later entries of the probe run into the hole
     * unless that would move one before its home slot. */
    for (size_t next = (hole + 1) & mask; map->slots[next].address != 0;
         next = (next + 1) & mask) {
        size_t home = slot_of(map, map->slots[next].address);
        bool home_in_gap = hole <= next ? (home > hole && home <= next)
                                        : (home > hole || home <= next);
        if (home_in_gap)
            continue;
        map->slots[hole] = map->slots[next];
        hole = next;
    }
    map->slots[hole].address = 0;
    map->slots[hole].block = NULL;
    map->count--;
    return found;
}

void block_map_destroy(struct block_map *map)
{
    free(map->slots);
    map->slots = NULL;
    map->capacity = 0;
    map->count = 0;
}

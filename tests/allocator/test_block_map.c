/* The address -> block hash map against a plain array model. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "block_map.h"

Test(block_map, inserts_finds_and_removes_under_heavy_collisions)
{
    enum { ENTRIES = 4096 };
    struct block_map map = {0};
    cr_assert(block_map_reserve(&map, ENTRIES));
    static uint64_t addresses[ENTRIES];
    static bool present[ENTRIES];
    for (size_t i = 0; i < ENTRIES; i++)
        addresses[i] = 0x100000000 + i * 512;
    unsigned seed = 7;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 1103515245u + 12345u;
        size_t i = (seed >> 8) % ENTRIES;
        struct block *tag = (struct block *)(uintptr_t)(i + 1);
        if (present[i]) {
            cr_assert_eq(block_map_find(&map, addresses[i]), tag);
            cr_assert_eq(block_map_remove(&map, addresses[i]), tag);
            present[i] = false;
        } else {
            cr_assert_null(block_map_find(&map, addresses[i]));
            block_map_insert(&map, addresses[i], tag);
            present[i] = true;
        }
    }
    size_t count = 0;
    for (size_t i = 0; i < ENTRIES; i++) {
        count += present[i];
        struct block *expected = present[i] ? (struct block *)(uintptr_t)(i + 1) : NULL;
        cr_assert_eq(block_map_find(&map, addresses[i]), expected);
    }
    cr_assert_eq(map.count, count);
    cr_assert_null(block_map_remove(&map, 0x42));
    size_t before = map.count;
    cr_assert_null(block_map_find(&map, 0), "0 marks empty slots and is never a key");
    cr_assert_null(block_map_remove(&map, 0));
    cr_assert_eq(map.count, before);
    block_map_destroy(&map);
}

Test(block_map, reserve_keeps_entries_and_load_at_most_half)
{
    struct block_map map = {0};
    cr_assert(block_map_reserve(&map, 4));
    for (uint64_t i = 1; i <= 8; i++) {
        cr_assert(block_map_reserve(&map, (size_t)i));
        block_map_insert(&map, i * 512, (struct block *)(uintptr_t)i);
    }
    cr_assert(block_map_reserve(&map, 1000));
    cr_assert_geq(map.capacity, 2000);
    for (uint64_t i = 1; i <= 8; i++)
        cr_assert_eq(block_map_find(&map, i * 512), (struct block *)(uintptr_t)i);
    block_map_destroy(&map);
}

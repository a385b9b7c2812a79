/* Segments pinned for legacy IPC are never reused, split again or returned
 * to the driver; only a segment base can be pinned. */
#include "allocator_fixture.h"

Test(ipc_pin, a_pinned_whole_segment_is_never_reused_or_released)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t exported = alloc(&f, 12 * MiB);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, exported), GPUCACHE_SUCCESS);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, exported), GPUCACHE_SUCCESS,
                 "pinning twice is harmless");
    free_on(&f, exported, 0);
    cr_assert_neq(alloc(&f, 12 * MiB), exported);
    gpucache_allocator_empty_cache(f.allocator);
    fixture_check(&f);
    cr_assert(gpucache_allocator_owns(f.allocator, exported));
    cr_assert_eq(stats_of(&f).num_device_free, 0);
    fixture_close(&f);
}

Test(ipc_pin, the_rest_of_a_pinned_split_segment_is_not_handed_out)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t exported = alloc(&f, 5 * MiB);
    uint64_t neighbour = alloc(&f, 5 * MiB);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, exported), GPUCACHE_SUCCESS);
    fixture_check(&f);
    cr_assert_eq(stats_of(&f).inactive_split[GPUCACHE_STAT_ALL].current, 0,
                 "the free rest left the free tree");
    free_sync(&f, neighbour);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    uint64_t next = alloc(&f, 5 * MiB);
    cr_assert(next < exported || next >= exported + 20 * MiB, "a new segment serves it");
    cr_assert_eq(reserved(&f), 40 * MiB);
    fixture_close(&f);
}

Test(ipc_pin, interior_blocks_and_unknown_pointers_cannot_be_pinned)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t base = alloc(&f, 5 * MiB);
    uint64_t interior = alloc(&f, 5 * MiB);
    cr_assert_eq(interior, base + 5 * MiB);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, interior),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, base + 512),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, 0x4242000),
                 GPUCACHE_ERROR_INVALID_VALUE);
    free_on(&f, base, 0);
    cr_assert_eq(gpucache_allocator_pin_segment(f.allocator, base), GPUCACHE_ERROR_INVALID_VALUE,
                 "a freed base is no longer an exportable allocation");
    fixture_close(&f);
}

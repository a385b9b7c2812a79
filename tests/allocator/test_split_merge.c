/* Splitting found blocks, merging free neighbours, best fit and the
 * inactive-split statistics that follow them. */
#include "allocator_fixture.h"

Test(split_merge, large_requests_share_a_20_mib_segment)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 5 * MiB);
    uint64_t b = alloc(&f, 5 * MiB);
    cr_assert_eq(b, a + 5 * MiB, "the remainder of the first segment serves the second request");
    cr_assert_eq(reserved(&f), 20 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.inactive_split[GPUCACHE_STAT_LARGE_POOL].current, 1);
    cr_assert_eq(stats.inactive_split_bytes[GPUCACHE_STAT_LARGE_POOL].current, 10 * MiB);
    fixture_close(&f);
}

Test(split_merge, large_slivers_of_1_mib_stay_inside_the_allocation)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    alloc(&f, 19 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_ALL].current, 20 * MiB);
    cr_assert_eq(stats.allocated_bytes[GPUCACHE_STAT_ALL].current, 20 * MiB,
                 "a 1 MiB remainder is not split off in the large pool");
    cr_assert_eq(stats.requested_bytes[GPUCACHE_STAT_ALL].current, 19 * MiB);
    cr_assert_eq(stats.inactive_split[GPUCACHE_STAT_ALL].current, 0);
    fixture_close(&f);
}

Test(split_merge, small_requests_split_down_to_512_bytes)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 1);
    uint64_t b = alloc(&f, 512);
    cr_assert_eq(b, a + 512);
    uint64_t c = alloc(&f, 1 * MiB);
    cr_assert_eq(c, b + 512);
    cr_assert_eq(stats_of(&f).inactive_split[GPUCACHE_STAT_SMALL_POOL].current, 1);
    uint64_t d = alloc(&f, 1 * MiB - 1024);
    cr_assert_eq(d, c + 1 * MiB, "the exact remainder of the 2 MiB segment fits");
    cr_assert_eq(reserved(&f), 2 * MiB);
    cr_assert_eq(stats_of(&f).inactive_split[GPUCACHE_STAT_ALL].current, 0);
    fixture_close(&f);
}

Test(split_merge, freed_neighbours_merge_back_into_the_whole_segment)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 5 * MiB);
    uint64_t b = alloc(&f, 5 * MiB);
    uint64_t c = alloc(&f, 5 * MiB);
    free_on(&f, b, 0);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.inactive_split[GPUCACHE_STAT_ALL].current, 2);
    free_on(&f, a, 0);
    stats = stats_of(&f);
    cr_assert_eq(stats.inactive_split[GPUCACHE_STAT_ALL].current, 2, "a and b merged");
    cr_assert_eq(stats.inactive_split_bytes[GPUCACHE_STAT_ALL].current, 15 * MiB);
    free_on(&f, c, 0);
    stats = stats_of(&f);
    cr_assert_eq(stats.inactive_split[GPUCACHE_STAT_ALL].current, 0, "one whole free segment");
    cr_assert_eq(stats.inactive_split_bytes[GPUCACHE_STAT_ALL].current, 0);
    uint64_t whole = alloc(&f, 20 * MiB);
    cr_assert_eq(whole, a, "the merged segment serves a request of its full size");
    cr_assert_eq(stats_of(&f).num_device_alloc, 1);
    fixture_close(&f);
}

Test(split_merge, blocks_of_different_segments_never_merge)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 12 * MiB);
    uint64_t b = alloc(&f, 12 * MiB);
    free_on(&f, a, 0);
    free_on(&f, b, 0);
    alloc(&f, 24 * MiB);
    cr_assert_eq(reserved(&f), 48 * MiB);
    fixture_close(&f);
}

Test(split_merge, best_fit_takes_the_smallest_block_then_the_lowest_address)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t big = alloc(&f, 16 * MiB);
    uint64_t small_first = alloc(&f, 12 * MiB);
    uint64_t small_second = alloc(&f, 12 * MiB);
    free_on(&f, big, 0);
    free_on(&f, small_second, 0);
    free_on(&f, small_first, 0);
    cr_assert_eq(alloc(&f, 11 * MiB), small_first < small_second ? small_first : small_second);
    cr_assert_eq(alloc(&f, 11 * MiB), small_first < small_second ? small_second : small_first);
    cr_assert_eq(alloc(&f, 11 * MiB), big);
    cr_assert_eq(stats_of(&f).num_device_alloc, 3);
    fixture_close(&f);
}

/* A hit cuts its block in place in the free tree while the rest still
 * covers the request; a rest smaller than another free block of the stream
 * must move before it. */
Test(split_merge, a_cut_best_fit_keeps_the_free_tree_in_size_order)
{
    struct fixture f;
    fixture_defaults(&f);
    fixture_open(&f, 1 * GiB);
    uint64_t kept_apart = alloc(&f, 256 * KiB);
    uint64_t wall = alloc(&f, 1 * MiB);
    free_on(&f, kept_apart, 0); /* free 256 KiB, then the wall, then 768 KiB free */
    uint64_t first = alloc(&f, 300 * KiB);
    cr_assert_eq(first, wall + 1 * MiB, "the 768 KiB rest is the best fit");
    fixture_check(&f);
    uint64_t second = alloc(&f, 400 * KiB);
    cr_assert_eq(second, first + 300 * KiB, "468 KiB left: still the best fit");
    fixture_check(&f); /* 68 KiB left, now smaller than the free 256 KiB */
    cr_assert_eq(alloc(&f, 64 * KiB), second + 400 * KiB,
                 "the 68 KiB rest, not the 256 KiB block, is the best fit");
    cr_assert_eq(alloc(&f, 200 * KiB), kept_apart);
    cr_assert_eq(stats_of(&f).num_device_alloc, 1);
    fixture_check(&f);
    fixture_close(&f);
}

Test(split_merge, freeing_a_block_twice_or_an_interior_pointer_is_refused)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 4 * KiB);
    cr_assert_eq(gpucache_allocator_free(f.allocator, a + 512, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_ERROR_INVALID_VALUE);
    free_on(&f, a, 0);
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_STREAM_ORDERED, 0),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(gpucache_allocator_free(f.allocator, 0x1234000, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_ALLOCATOR_NOT_OURS);
    cr_assert_eq(gpucache_allocator_free(f.allocator, 0, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_ALLOCATOR_NOT_OURS);
    cr_assert(gpucache_allocator_owns(f.allocator, a + 4096));
    cr_assert_not(gpucache_allocator_owns(f.allocator, a + 2 * MiB));
    fixture_check(&f);
    fixture_close(&f);
}

Test(split_merge, block_size_reports_the_requested_size)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = alloc(&f, 1000);
    size_t size = 0;
    cr_assert(gpucache_allocator_block_size(f.allocator, a, &size));
    cr_assert_eq(size, 1000);
    cr_assert_not(gpucache_allocator_block_size(f.allocator, a + 512, &size));
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 0, 0, &address),
                 GPUCACHE_ERROR_INVALID_VALUE);
    fixture_close(&f);
}

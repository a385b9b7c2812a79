/* gpucache_allocator_visit_segments: what a memory snapshot lists. */
#include "allocator_fixture.h"

struct listing {
    int segments;
    struct gpucache_segment_info info[8];
    struct gpucache_block_info blocks[8][8];
};

static void record(void *context, const struct gpucache_segment_info *segment)
{
    struct listing *listing = context;
    cr_assert_lt(listing->segments, 8);
    cr_assert_leq(segment->block_count, 8);
    listing->info[listing->segments] = *segment;
    for (size_t i = 0; i < segment->block_count; i++)
        listing->blocks[listing->segments][i] = segment->blocks[i];
    listing->segments++;
}

Test(snapshot, segments_in_address_order_with_their_blocks)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t large_a = alloc_on(&f, 5 * MiB - 100, STREAM_A);
    uint64_t large_b = alloc_on(&f, 5 * MiB, STREAM_A);
    uint64_t small = alloc(&f, 4096);
    free_sync(&f, large_b);

    struct listing listing = {0};
    cr_assert(gpucache_allocator_visit_segments(f.allocator, record, &listing));
    cr_assert_eq(listing.segments, 2);
    const struct gpucache_segment_info *large = &listing.info[0];
    cr_assert_eq(large->address, large_a);
    cr_assert_eq(large->total_size, 20 * MiB);
    cr_assert_eq(large->allocated_size, 5 * MiB);
    cr_assert_eq(large->active_size, 10 * MiB, "the pending block is still active");
    cr_assert_eq(large->requested_size, 10 * MiB - 100);
    cr_assert_eq(large->stream, STREAM_A);
    cr_assert_not(large->small_pool);
    cr_assert_not(large->expandable);
    cr_assert_eq(large->block_count, 3);
    cr_assert_eq(listing.blocks[0][0].state, GPUCACHE_BLOCK_ACTIVE_ALLOCATED);
    cr_assert_eq(listing.blocks[0][0].requested_size, 5 * MiB - 100);
    cr_assert_eq(listing.blocks[0][1].address, large_b);
    cr_assert_eq(listing.blocks[0][1].state, GPUCACHE_BLOCK_ACTIVE_PENDING_FREE);
    cr_assert_eq(listing.blocks[0][2].state, GPUCACHE_BLOCK_INACTIVE);
    cr_assert_eq(listing.blocks[0][2].size, 10 * MiB);

    const struct gpucache_segment_info *small_segment = &listing.info[1];
    cr_assert_eq(small_segment->address, small);
    cr_assert(small_segment->small_pool);
    cr_assert_eq(small_segment->total_size, 2 * MiB);
    cr_assert_eq(small_segment->block_count, 2);
    fixture_close(&f);
}

Test(snapshot, an_empty_allocator_has_no_segments)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    struct listing listing = {0};
    cr_assert(gpucache_allocator_visit_segments(f.allocator, record, &listing));
    cr_assert_eq(listing.segments, 0);
    fixture_close(&f);
}

/* Reuse safety (DESIGN.md, Reuse safety): when a freed block may be handed out again,
 * on which stream, and what it costs in fences and synchronizations. */
#include "allocator_fixture.h"

static void open_held(struct fixture *f)
{
    fixture_start(f, NULL, 1 * GiB);
    accounting_driver_hold_fences(f->driver, true);
}

static bool inside(uint64_t address, uint64_t base, size_t size)
{
    return address >= base && address < base + size;
}

Test(reuse, a_stream_ordered_free_is_reusable_on_its_stream_at_once)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc_on(&f, 5 * MiB, STREAM_A);
    free_on(&f, a, STREAM_A);
    cr_assert_eq(alloc_on(&f, 5 * MiB, STREAM_A), a);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_STREAM), 0);
    fixture_close(&f);
}

Test(reuse, another_stream_gets_the_block_only_after_its_fence_completes)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc_on(&f, 12 * MiB, STREAM_A);
    free_on(&f, a, STREAM_A);
    uint64_t b = alloc_on(&f, 12 * MiB, STREAM_B);
    cr_assert_not(inside(b, a, 12 * MiB), "stream B must not get A's block before A's fence");
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_STREAM), 1,
                 "the miss asked for a fence on A");
    uint64_t c = alloc_on(&f, 12 * MiB, STREAM_C);
    cr_assert_neq(c, a, "the fence has not completed yet");
    accounting_driver_complete_stream(f.driver, STREAM_A);
    free_on(&f, c, STREAM_C);
    free_on(&f, b, STREAM_B);
    uint64_t d = alloc_on(&f, 12 * MiB, (gpucache_stream)0xD000);
    cr_assert(d == a, "after A's fence its block serves any stream (got 0x%llx, A's 0x%llx)",
              (unsigned long long)d, (unsigned long long)a);
    cr_assert_eq(stats_of(&f).num_fence_waits, 0, "no host wait for cross-stream reuse");
    fixture_close(&f);
}

Test(reuse, a_free_on_a_foreign_stream_waits_for_that_streams_fence)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc_on(&f, 12 * MiB, STREAM_A);
    free_on(&f, a, STREAM_B);
    cr_assert_eq(stats_of(&f).pending_blocks.current, 1);
    gpucache_allocator_synchronized(f.allocator, false, STREAM_C);
    cr_assert_eq(stats_of(&f).pending_blocks.current, 1, "C's synchronize says nothing about B");
    gpucache_allocator_synchronized(f.allocator, false, STREAM_B);
    fixture_check(&f);
    cr_assert_eq(stats_of(&f).pending_blocks.current, 0);
    cr_assert_eq(alloc_on(&f, 12 * MiB, STREAM_C), a, "B's work is done: any stream may take it");
    fixture_close(&f);
}

Test(reuse, a_foreign_stream_free_never_makes_the_host_wait_before_growing)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc_on(&f, 12 * MiB, STREAM_A);
    free_on(&f, a, STREAM_B);
    uint64_t grown = alloc_on(&f, 12 * MiB, STREAM_A);
    cr_assert_neq(grown, a, "B's work may still use the block, and cuMemFreeAsync never waited");
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_fence_waits, 0);
    cr_assert_eq(stats.num_device_alloc, 2);
    accounting_driver_complete_stream(f.driver, STREAM_B);
    cr_assert_eq(alloc_on(&f, 12 * MiB, STREAM_A), a, "B's fence completed: reusable");
    fixture_close(&f);
}

Test(reuse, synchronous_frees_wait_for_the_epoch_fence)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc(&f, 12 * MiB);
    free_sync(&f, a);
    cr_assert_eq(stats_of(&f).pending_bytes.current, 12 * MiB);
    uint64_t small = alloc(&f, 4 * KiB);
    cr_assert_not(inside(small, a, 12 * MiB));
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 1,
                 "a miss closes the open epoch");
    cr_assert_eq(stats_of(&f).num_fence_waits, 0, "pending large bytes cannot serve a small request");
    cr_assert_eq(alloc(&f, 12 * MiB), a);
    cr_assert_eq(stats_of(&f).num_fence_waits, 1);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_SYNCHRONIZE_DEVICE), 0);
    fixture_close(&f);
}

Test(reuse, a_program_synchronize_readies_earlier_frees_for_free)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc(&f, 12 * MiB);
    free_sync(&f, a);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    cr_assert_eq(alloc_on(&f, 12 * MiB, STREAM_B), a);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0);
    cr_assert_eq(stats_of(&f).num_fence_waits, 0);
    fixture_close(&f);
}

Test(reuse, a_completed_epoch_is_reused_without_waiting)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc(&f, 12 * MiB);
    free_sync(&f, a);
    alloc(&f, 4 * KiB); /* closes the epoch */
    accounting_driver_complete_all(f.driver);
    cr_assert_eq(alloc(&f, 12 * MiB), a);
    cr_assert_eq(stats_of(&f).num_fence_waits, 0);
    fixture_close(&f);
}

Test(reuse, epochs_close_after_64_frees_or_64_mib)
{
    struct fixture f;
    open_held(&f);
    uint64_t blocks[64];
    for (int i = 0; i < 64; i++)
        blocks[i] = alloc(&f, 4 * KiB);
    for (int i = 0; i < 63; i++)
        free_sync(&f, blocks[i]);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0);
    free_sync(&f, blocks[63]);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 1);
    free_sync(&f, alloc(&f, 64 * MiB));
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 2);
    cr_assert_eq(stats_of(&f).num_epochs_closed, 2);
    fixture_close(&f);
}

Test(reuse, the_async_mode_never_synchronizes_the_device)
{
    struct fixture f;
    open_held(&f);
    for (int round = 0; round < 200; round++) {
        uint64_t a = alloc(&f, (size_t)(round % 7 + 1) * MiB);
        free_sync(&f, a);
        if (round % 50 == 0)
            accounting_driver_complete_all(f.driver);
    }
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_synchronizations, 0);
    cr_assert_leq(stats.num_fence_waits, 200, "at most one wait per synchronous free");
    fixture_close(&f);
}

Test(reuse, conservative_mode_synchronizes_instead_of_fencing)
{
    struct fixture f;
    fixture_start(&f, "reuse:conservative", 1 * GiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = alloc(&f, 12 * MiB);
    free_sync(&f, a);
    cr_assert_eq(alloc(&f, 12 * MiB), a);
    cr_assert_eq(stats_of(&f).num_device_synchronizations, 1);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0);
    fixture_close(&f);
}

Test(reuse, relaxed_mode_reuses_synchronous_frees_at_once)
{
    struct fixture f;
    fixture_start(&f, "reuse:relaxed", 1 * GiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = alloc(&f, 12 * MiB);
    free_sync(&f, a);
    cr_assert_eq(stats_of(&f).pending_blocks.current, 0);
    cr_assert_eq(alloc(&f, 12 * MiB), a);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0);
    cr_assert_eq(stats_of(&f).num_device_synchronizations, 0);
    fixture_close(&f);
}

Test(reuse, no_fences_are_recorded_during_capture)
{
    struct fixture f;
    open_held(&f);
    uint64_t blocks[64];
    for (int i = 0; i < 64; i++)
        blocks[i] = alloc(&f, 4 * KiB);
    accounting_driver_set_capture(f.driver, true);
    for (int i = 0; i < 64; i++)
        free_sync(&f, blocks[i]);
    alloc(&f, 8 * KiB);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY), 0);
    cr_assert_eq(stats_of(&f).pending_blocks.current, 64);
    accounting_driver_set_capture(f.driver, false);
    alloc(&f, 2 * MiB); /* a large request: a miss */
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 1);
    fixture_close(&f);
}

Test(reuse, a_destroyed_streams_blocks_serve_others_after_its_last_work)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc_on(&f, 12 * MiB, STREAM_A);
    uint64_t live = alloc_on(&f, 4 * KiB, STREAM_A);
    free_on(&f, a, STREAM_A);
    gpucache_allocator_stream_destroyed(f.allocator, STREAM_A);
    fixture_check(&f);
    uint64_t b = alloc_on(&f, 12 * MiB, STREAM_B);
    cr_assert_neq(b, a, "A's last work may still use the block");
    accounting_driver_complete_stream(f.driver, STREAM_A);
    cr_assert_eq(alloc_on(&f, 12 * MiB, STREAM_C), a);
    /* A block allocated on the destroyed stream can still be freed. */
    free_sync(&f, live);
    fixture_close(&f);
}

static unsigned long pairs_of_4_kib_counting_queries(struct fixture *f, int pairs)
{
    unsigned long before = accounting_driver_calls(f->driver, ACCOUNTING_FENCE_QUERY);
    for (int i = 0; i < pairs; i++)
        free_on(f, alloc(f, 4 * KiB), 0);
    return accounting_driver_calls(f->driver, ACCOUNTING_FENCE_QUERY) - before;
}

/* Hits ask about outstanding fences every 8th allocation; each query that
 * finds nothing completed doubles the interval, up to every 64th, and one
 * that finds a fence completed brings it back to every 8th. */
Test(reuse, hits_query_outstanding_fences_every_8th_allocation_and_fewer_while_none_completes)
{
    struct fixture f;
    open_held(&f);
    free_sync(&f, alloc(&f, 12 * MiB));
    uint64_t small = alloc(&f, 4 * KiB); /* a miss: closes the epoch */
    uint64_t kept = alloc(&f, 4 * KiB);
    free_on(&f, small, 0);
    /* One hit in 8, then 16, 32 and 64 ask: 4, where every 8th would be 16. */
    cr_assert_eq(pairs_of_4_kib_counting_queries(&f, 128), 4);
    accounting_driver_complete_all(f.driver);
    /* The next to ask finds the fence completed: nothing is left to ask
     * about. */
    cr_assert_eq(pairs_of_4_kib_counting_queries(&f, 64), 1);
    /* A new outstanding fence: the large miss closes the epoch of `kept`
     * (no wait, as it holds no large bytes) and flushes the fronts. */
    free_sync(&f, kept);
    alloc(&f, 40 * MiB);
    free_on(&f, alloc(&f, 4 * KiB), 0);
    /* One in 8 again, then 16, 32 and 64: 4, where one in 64 would be 1. */
    cr_assert_eq(pairs_of_4_kib_counting_queries(&f, 64), 4);
    fixture_close(&f);
}

/* The freed block alone is smaller than the request, but it merges with free
 * neighbours into a run that serves it: waiting for the synchronous free the
 * program already waited for beats growing the device by a new segment. */
Test(reuse, a_miss_waits_for_synchronous_frees_whose_merge_would_serve_it)
{
    struct fixture f;
    open_held(&f);
    uint64_t a = alloc(&f, 8 * MiB);
    uint64_t b = alloc(&f, 8 * MiB);
    cr_assert_eq(b, a + 8 * MiB, "both in one 20 MiB segment");
    free_sync(&f, b);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    free_sync(&f, a);
    cr_assert_eq(stats_of(&f).pending_bytes.current, 8 * MiB);
    cr_assert_eq(alloc(&f, 18 * MiB), a, "a and the free rest of its segment merge");
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_alloc, 1, "no new segment");
    cr_assert_eq(stats.num_fence_waits, 1, "one wait, for the epoch holding a");
    fixture_check(&f);
    fixture_close(&f);
}

/* Worked examples of PyTorch's native allocator, whose reserved figures
 * must come out exactly: eight 16 MiB blocks then four 32 MiB ones grow
 * the reserve from 128 to 256 MiB, the other order keeps it at 128 MiB
 * (the first example, with synchronous and stream-ordered frees), and
 * requests just under 1 MiB that round into the large pool raise it (the
 * sixth example, the 1 MiB loophole). */
#include "allocator_fixture.h"

static void allocate_then_reallocate(struct fixture *f, size_t first_size, int first_count,
                                     size_t second_size, int second_count, bool synchronous)
{
    uint64_t addresses[16];
    for (int i = 0; i < first_count; i++)
        addresses[i] = alloc(f, first_size);
    for (int i = 0; i < first_count; i++) {
        if (synchronous)
            free_sync(f, addresses[i]);
        else
            free_on(f, addresses[i], 0);
    }
    for (int i = 0; i < second_count; i++)
        addresses[i] = alloc(f, second_size);
}

Test(worked_examples, eight_16_then_four_32_grows_reserved_from_128_to_256)
{
    struct fixture f;
    fixture_start(&f, NULL, 80 * GiB);
    uint64_t addresses[8];
    for (int i = 0; i < 8; i++)
        addresses[i] = alloc(&f, 16 * MiB);
    cr_assert_eq(reserved(&f), 128 * MiB);
    for (int i = 0; i < 8; i++)
        free_sync(&f, addresses[i]);
    cr_assert_eq(reserved(&f), 128 * MiB);
    for (int i = 0; i < 4; i++)
        alloc(&f, 32 * MiB);
    cr_assert_eq(reserved(&f), 256 * MiB);
    cr_assert_eq(stats_of(&f).reserved_bytes[GPUCACHE_STAT_LARGE_POOL].peak, 256 * MiB);
    fixture_close(&f);
}

Test(worked_examples, four_32_then_eight_16_keeps_reserved_at_128)
{
    struct fixture f;
    fixture_start(&f, NULL, 80 * GiB);
    allocate_then_reallocate(&f, 32 * MiB, 4, 16 * MiB, 8, true);
    cr_assert_eq(reserved(&f), 128 * MiB);
    cr_assert_eq(stats_of(&f).reserved_bytes[GPUCACHE_STAT_ALL].peak, 128 * MiB);
    cr_assert_eq(stats_of(&f).num_device_alloc, 4);
    fixture_close(&f);
}

Test(worked_examples, example_1_holds_for_stream_ordered_frees_too)
{
    struct fixture f;
    fixture_start(&f, NULL, 80 * GiB);
    allocate_then_reallocate(&f, 16 * MiB, 8, 32 * MiB, 4, false);
    cr_assert_eq(reserved(&f), 256 * MiB);
    fixture_close(&f);

    fixture_start(&f, NULL, 80 * GiB);
    allocate_then_reallocate(&f, 32 * MiB, 4, 16 * MiB, 8, false);
    cr_assert_eq(reserved(&f), 128 * MiB);
    fixture_close(&f);
}

Test(worked_examples, example_6_the_1_mib_loophole_raises_reserved)
{
    struct fixture f;
    fixture_start(&f, NULL, 80 * GiB);
    uint64_t two_mib = alloc(&f, 2 * MiB);
    cr_assert_eq(reserved(&f), 20 * MiB, "a 2 MiB request gets a 20 MiB large-pool segment");
    free_sync(&f, two_mib);
    alloc(&f, 512 * KiB);
    cr_assert_eq(reserved(&f), 22 * MiB,
                 "the 0.5 MiB request lands in the small pool: a new 2 MiB segment");
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_SMALL_POOL].current, 2 * MiB);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_LARGE_POOL].current, 20 * MiB);
    fixture_close(&f);
}

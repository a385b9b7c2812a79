/* max_split_size_mb, max_non_split_rounding_mb, garbage_collection_threshold,
 * per_process_memory_fraction (with throw_on_cudamalloc_oom) and
 * empty_cache. */
#include "allocator_fixture.h"

Test(limits, oversize_blocks_are_not_given_to_normal_requests)
{
    struct fixture f;
    fixture_start(&f, "max_split_size_mb:40", 4 * GiB);
    uint64_t oversize = alloc(&f, 50 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.oversize_allocations.current, 1);
    cr_assert_eq(stats.oversize_segments.current, 1);
    cr_assert_eq(stats.max_split_size, 40 * MiB);
    free_on(&f, oversize, 0);
    uint64_t normal = alloc(&f, 30 * MiB);
    cr_assert_neq(normal, oversize);
    cr_assert_eq(reserved(&f), 80 * MiB);
    cr_assert_eq(alloc(&f, 45 * MiB), oversize, "an oversize request reuses it: 5 MiB waste < 20");
    cr_assert_eq(stats_of(&f).allocated_bytes[GPUCACHE_STAT_ALL].current, 80 * MiB,
                 "the oversize block is handed out whole");
    fixture_close(&f);
}

Test(limits, oversize_reuse_is_bounded_by_max_non_split_rounding)
{
    struct fixture f;
    fixture_start(&f, "max_split_size_mb:40", 4 * GiB);
    uint64_t oversize = alloc(&f, 70 * MiB);
    free_on(&f, oversize, 0);
    uint64_t other = alloc(&f, 45 * MiB);
    cr_assert_neq(other, oversize, "25 MiB of waste exceeds the default 20 MiB");
    fixture_close(&f);

    fixture_start(&f, "max_split_size_mb:40,max_non_split_rounding_mb:30", 4 * GiB);
    oversize = alloc(&f, 70 * MiB);
    free_on(&f, oversize, 0);
    cr_assert_eq(alloc(&f, 45 * MiB), oversize, "25 MiB of waste is within 30 MiB");
    fixture_close(&f);
}

Test(limits, max_split_size_unlimited_reports_minus_one)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    cr_assert_eq(stats_of(&f).max_split_size, -1);
    fixture_close(&f);
}

/* Three whole free large segments of different ages: A (24 MiB) aged by ten
 * large-pool lookups of another stream, B (26 MiB) and C (20 MiB) fresh. */
static void make_aged_segments(struct fixture *f, uint64_t *a)
{
    uint64_t c = alloc_on(f, 2 * MiB, STREAM_B);
    free_on(f, c, STREAM_B);
    *a = alloc_on(f, 24 * MiB, STREAM_A);
    uint64_t b = alloc_on(f, 26 * MiB, STREAM_A);
    free_on(f, *a, STREAM_A);
    for (int i = 0; i < 10; i++)
        free_on(f, alloc_on(f, 2 * MiB, STREAM_B), STREAM_B);
    free_on(f, b, STREAM_A);
    cr_assert_eq(reserved(f), 70 * MiB);
}

/* Under `configuration`, on 1000 MiB: the aged segments, then a 34 MiB
 * request on stream A that none of them fits. */
static void request_beside_aged_segments(struct fixture *f, const char *configuration,
                                         uint64_t *oldest)
{
    fixture_start(f, configuration, 1000 * MiB);
    make_aged_segments(f, oldest);
    alloc_on(f, 34 * MiB, STREAM_A);
}

Test(limits, garbage_collection_frees_the_oldest_segments_first)
{
    struct fixture f;
    uint64_t a;
    /* Cap: 100 MiB of 1000 MiB; collect above 50 MiB. */
    request_beside_aged_segments(
        &f, "per_process_memory_fraction:0.1,garbage_collection_threshold:0.5", &a);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_free, 1, "only the oldest segment was collected");
    cr_assert_eq(reserved(&f), 80 * MiB);
    cr_assert_eq(stats.num_alloc_retries, 0);
    cr_assert_not(gpucache_allocator_owns(f.allocator, a));
    fixture_close(&f);
}

Test(limits, without_a_memory_fraction_there_is_no_garbage_collection)
{
    struct fixture f;
    uint64_t a;
    request_beside_aged_segments(&f, "garbage_collection_threshold:0.5", &a);
    cr_assert_eq(stats_of(&f).num_device_free, 0);
    cr_assert_eq(reserved(&f), 104 * MiB);
    fixture_close(&f);
}

Test(limits, without_garbage_collection_the_fraction_cap_forces_a_retry)
{
    struct fixture f;
    uint64_t a;
    request_beside_aged_segments(&f, "per_process_memory_fraction:0.1", &a);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(stats.num_device_free, 3, "the retry released every cached segment");
    cr_assert_eq(reserved(&f), 34 * MiB);
    fixture_close(&f);
}

Test(limits, memory_fraction_caps_reserved_memory)
{
    struct fixture f;
    fixture_start(&f, "per_process_memory_fraction:0.5", 100 * MiB);
    alloc(&f, 40 * MiB);
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 20 * MiB, 0, &address),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_ooms, 1);
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_DEVICE_ALLOC), 1,
                 "the cap is checked before asking the driver");
    alloc(&f, 10 * MiB);
    cr_assert_eq(reserved(&f), 50 * MiB);
    fixture_close(&f);
}

Test(limits, throw_on_cudamalloc_oom_rejects_without_the_retry_chain)
{
    struct fixture f;
    fixture_start(&f, "per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True", 100 * MiB);
    uint64_t cached = alloc(&f, 40 * MiB);
    free_on(&f, cached, 0);
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 46 * MiB, 0, &address),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_oom_rejections, 1);
    cr_assert_eq(stats.num_ooms, 1);
    cr_assert_eq(stats.num_alloc_retries, 0);
    cr_assert_eq(stats.num_device_free, 0, "the cached segment was not released");
    fixture_close(&f);
}

Test(limits, the_fraction_retry_releases_cached_segments_to_fit)
{
    struct fixture f;
    fixture_start(&f, "per_process_memory_fraction:0.5", 100 * MiB);
    uint64_t cached = alloc(&f, 40 * MiB);
    free_on(&f, cached, 0);
    alloc(&f, 45 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(stats.num_device_free, 1);
    cr_assert_eq(reserved(&f), 46 * MiB);
    fixture_close(&f);
}

Test(limits, empty_cache_returns_whole_free_segments_only)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t whole = alloc(&f, 12 * MiB);
    uint64_t part = alloc(&f, 5 * MiB);
    alloc(&f, 5 * MiB);
    free_on(&f, whole, 0);
    free_on(&f, part, 0);
    gpucache_allocator_empty_cache(f.allocator);
    fixture_check(&f);
    cr_assert_eq(reserved(&f), 20 * MiB, "the split segment still in use stays");
    cr_assert_eq(stats_of(&f).num_device_free, 1);
    cr_assert_eq(gpucache_allocator_cached_free_bytes(f.allocator), 15 * MiB);
    fixture_close(&f);
}

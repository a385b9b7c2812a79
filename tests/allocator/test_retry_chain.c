/* The OOM retry chain, step by step, with the accounting driver failing the
 * call that each step depends on. Every path ends in a result, never an
 * abort, and leaves the allocator consistent. */
#include "allocator_fixture.h"

static gpucache_result try_alloc(struct fixture *f, size_t size, uint64_t *address)
{
    gpucache_result result = gpucache_allocator_malloc(f->allocator, size, 0, address);
    fixture_check(f);
    return result;
}

/* Makes the next `failures` device allocations fail with `error`, then asks
 * for `size` bytes. */
static gpucache_result alloc_while_device_allocs_fail(struct fixture *f, unsigned long failures,
                                                      gpucache_result error, size_t size,
                                                      uint64_t *address)
{
    accounting_driver_fail_call(f->driver, ACCOUNTING_DEVICE_ALLOC, 1, failures, error);
    return try_alloc(f, size, address);
}

Test(retry_chain, a_failed_device_alloc_releases_the_cache_and_retries)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    free_on(&f, alloc(&f, 20 * MiB), 0);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 1, GPUCACHE_ERROR_OUT_OF_MEMORY, 30 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_SUCCESS);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(stats.num_sync_all_streams, 1);
    cr_assert_eq(stats.num_device_free, 1, "the idle 20 MiB segment went back first");
    cr_assert_eq(reserved(&f), 30 * MiB);
    fixture_close(&f);
}

Test(retry_chain, two_failed_device_allocs_end_in_out_of_memory)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 2, GPUCACHE_ERROR_OUT_OF_MEMORY, 30 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_ooms, 1);
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_DEVICE_ALLOC), 2);
    cr_assert_eq(try_alloc(&f, 30 * MiB, &address), GPUCACHE_SUCCESS, "the device recovered");
    fixture_close(&f);
}

Test(retry_chain, other_driver_errors_pass_through_at_once)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 1, GPUCACHE_ERROR_INVALID_VALUE, 30 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_ERROR_INVALID_VALUE);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 0);
    cr_assert_eq(stats.num_ooms, 0);
    fixture_close(&f);
}

Test(retry_chain, oversize_blocks_are_released_before_the_full_retry)
{
    struct fixture f;
    fixture_start(&f, "max_split_size_mb:40", 1 * GiB);
    uint64_t oversize = alloc(&f, 70 * MiB);
    uint64_t kept = alloc(&f, 5 * MiB);
    free_on(&f, oversize, 0);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 1, GPUCACHE_ERROR_OUT_OF_MEMORY, 45 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_SUCCESS);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 0, "release_available_cached_blocks was enough");
    cr_assert_eq(stats.num_device_free, 1);
    cr_assert_eq(reserved(&f), 20 * MiB + 46 * MiB);
    cr_assert(gpucache_allocator_owns(f.allocator, kept));
    fixture_close(&f);
}

Test(retry_chain, several_smaller_oversize_blocks_are_released_together)
{
    struct fixture f;
    fixture_start(&f, "max_split_size_mb:40", 1 * GiB);
    uint64_t first = alloc(&f, 50 * MiB);
    uint64_t second = alloc(&f, 44 * MiB);
    free_on(&f, first, 0);
    free_on(&f, second, 0);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 1, GPUCACHE_ERROR_OUT_OF_MEMORY, 90 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_SUCCESS);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_free, 2, "50 + 44 MiB together cover the 90 MiB request");
    cr_assert_eq(stats.num_alloc_retries, 0);
    fixture_close(&f);
}

Test(retry_chain, a_failing_device_free_leaves_the_segment_cached)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    free_on(&f, alloc(&f, 20 * MiB), 0);
    accounting_driver_fail_call(f.driver, ACCOUNTING_DEVICE_FREE, 1, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    uint64_t address;
    gpucache_result result =
        alloc_while_device_allocs_fail(&f, 2, GPUCACHE_ERROR_OUT_OF_MEMORY, 30 * MiB, &address);
    cr_assert_eq(result, GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(reserved(&f), 20 * MiB, "the segment the driver refused to free is still ours");
    cr_assert_eq(try_alloc(&f, 20 * MiB, &address), GPUCACHE_SUCCESS);
    cr_assert_eq(stats_of(&f).num_device_alloc, 1, "and it is reused");
    fixture_close(&f);
}

Test(retry_chain, pending_frees_are_synchronized_before_the_last_retry)
{
    struct fixture f;
    fixture_start(&f, NULL, 100 * MiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = alloc(&f, 40 * MiB);
    uint64_t b = alloc(&f, 40 * MiB);
    free_on(&f, a, STREAM_B); /* a foreign stream: pending on its fence */
    free_sync(&f, b);         /* pending in an epoch */
    accounting_driver_fail_call(f.driver, ACCOUNTING_FENCE_WAIT, 1, 10,
                                GPUCACHE_ERROR_INVALID_VALUE);
    uint64_t address;
    cr_assert_eq(try_alloc(&f, 80 * MiB, &address), GPUCACHE_SUCCESS);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_synchronizations, 1, "one synchronize covered both");
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(stats.pending_blocks.current, 0);
    fixture_close(&f);
}

Test(retry_chain, a_failing_synchronize_ends_in_out_of_memory)
{
    struct fixture f;
    fixture_start(&f, NULL, 100 * MiB);
    accounting_driver_hold_fences(f.driver, true);
    free_sync(&f, alloc(&f, 60 * MiB));
    accounting_driver_fail_call(f.driver, ACCOUNTING_FENCE_WAIT, 1, 10,
                                GPUCACHE_ERROR_INVALID_VALUE);
    accounting_driver_fail_call(f.driver, ACCOUNTING_SYNCHRONIZE_DEVICE, 1, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    uint64_t address;
    cr_assert_eq(try_alloc(&f, 80 * MiB, &address), GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_ooms, 1);
    cr_assert_eq(stats.pending_blocks.current, 1, "the block stays pending, never unsafe");
    fixture_close(&f);
}

Test(retry_chain, a_failing_fence_keeps_frees_pending_until_a_synchronize)
{
    struct fixture f;
    fixture_start(&f, NULL, 100 * MiB);
    accounting_driver_fail_call(f.driver, ACCOUNTING_FENCE_ALL_STREAMS, 1, 100,
                                GPUCACHE_ERROR_INVALID_VALUE);
    uint64_t a = alloc(&f, 60 * MiB);
    free_sync(&f, a);
    uint64_t address;
    cr_assert_eq(try_alloc(&f, 60 * MiB, &address), GPUCACHE_SUCCESS);
    cr_assert_eq(address, a, "reused after the last-resort synchronize");
    cr_assert_eq(stats_of(&f).num_device_synchronizations, 1);
    fixture_close(&f);
}

Test(retry_chain, no_release_and_no_synchronize_during_capture)
{
    struct fixture f;
    fixture_start(&f, NULL, 100 * MiB);
    free_on(&f, alloc(&f, 60 * MiB), 0);
    accounting_driver_set_capture(f.driver, true);
    uint64_t address;
    cr_assert_eq(try_alloc(&f, 80 * MiB, &address), GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 0);
    cr_assert_eq(stats.num_device_free, 0);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_SYNCHRONIZE_DEVICE), 0);
    accounting_driver_set_capture(f.driver, false);
    cr_assert_eq(try_alloc(&f, 80 * MiB, &address), GPUCACHE_SUCCESS);
    fixture_close(&f);
}

Test(retry_chain, requests_above_the_hard_limit_fail_without_driver_calls)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t address;
    cr_assert_eq(try_alloc(&f, ((size_t)1 << 60) + 1, &address), GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(stats_of(&f).num_ooms, 1);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_DEVICE_ALLOC), 0);
    fixture_close(&f);
}

Test(retry_chain, before_failing_fences_are_waited_on_rather_than_the_device)
{
    struct fixture f;
    fixture_start(&f, NULL, 100 * MiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = alloc_on(&f, 30 * MiB, STREAM_A);
    uint64_t b = alloc_on(&f, 30 * MiB, STREAM_A);
    free_on(&f, a, STREAM_B); /* pending on B's fence */
    free_on(&f, b, STREAM_A); /* free on A, not yet cleared for other streams */
    uint64_t address;
    cr_assert_eq(gpucache_allocator_malloc(f.allocator, 60 * MiB, STREAM_C, &address),
                 GPUCACHE_SUCCESS);
    fixture_check(&f);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_synchronizations, 0);
    cr_assert_geq(stats.num_fence_waits, 2, "B's epoch and A's clearing fence were waited on");
    cr_assert_eq(stats.num_alloc_retries, 1);
    cr_assert_eq(stats.num_device_free, 2, "both blocks were released once known idle");
    fixture_close(&f);
}

Test(retry_chain, abandoning_calls_no_driver_function)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    accounting_driver_hold_fences(f.driver, true);
    free_sync(&f, alloc(&f, 12 * MiB));
    alloc(&f, 4 * KiB); /* closes the epoch: one fence outstanding */
    unsigned long calls_before[ACCOUNTING_OPERATION_COUNT];
    for (int i = 0; i < ACCOUNTING_OPERATION_COUNT; i++)
        calls_before[i] = accounting_driver_calls(f.driver, (enum accounting_operation)i);
    unsigned long fences_before = accounting_driver_live_fences(f.driver);
    gpucache_allocator_abandon(f.allocator);
    for (int i = 0; i < ACCOUNTING_OPERATION_COUNT; i++)
        cr_assert_eq(accounting_driver_calls(f.driver, (enum accounting_operation)i),
                     calls_before[i], "%s was called",
                     accounting_driver_operation_name((enum accounting_operation)i));
    cr_assert_eq(accounting_driver_live_fences(f.driver), fences_before,
                 "no fence was released through the gone context");
    cr_assert_eq(accounting_driver_used_bytes(f.driver), 14 * MiB, "no segment was freed");
    accounting_driver_destroy(f.driver);
}

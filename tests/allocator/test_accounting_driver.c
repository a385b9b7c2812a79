/* The accounting driver: addresses, capacity, fences, VMM accounting and
 * fault injection. */
#include "allocator_fixture.h"

Test(accounting_driver, hands_out_distinct_aligned_addresses_within_capacity)
{
    struct accounting_driver *driver = accounting_driver_create(10 * MiB, 0);
    const struct gpucache_driver *d = accounting_driver_interface(driver);
    uint64_t a = 0, b = 0, c = 0;
    cr_assert_eq(d->device_alloc(d->context, 0, 1000, &a), GPUCACHE_SUCCESS);
    cr_assert_eq(d->device_alloc(d->context, 0, 4 * MiB, &b), GPUCACHE_SUCCESS);
    cr_assert_eq(a % 512, 0);
    cr_assert_eq(b % 512, 0);
    cr_assert_geq(b, a + 1000);
    cr_assert_eq(d->device_alloc(d->context, 0, 6 * MiB, &c), GPUCACHE_ERROR_OUT_OF_MEMORY);
    size_t free_bytes = 0, total = 0;
    cr_assert_eq(d->memory_info(d->context, 0, &free_bytes, &total), GPUCACHE_SUCCESS);
    cr_assert_eq(total, 10 * MiB);
    cr_assert_eq(free_bytes, 10 * MiB - 4 * MiB - 1000);
    cr_assert_eq(d->device_free(d->context, 0, b), GPUCACHE_SUCCESS);
    cr_assert_eq(d->device_free(d->context, 0, b), GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(d->device_alloc(d->context, 0, 6 * MiB, &c), GPUCACHE_SUCCESS);
    cr_assert_neq(c, b, "addresses are never handed out twice");
    cr_assert_eq(accounting_driver_calls(driver, ACCOUNTING_DEVICE_ALLOC), 4);
    accounting_driver_destroy(driver);
}

Test(accounting_driver, fences_complete_at_once_or_when_told)
{
    struct accounting_driver *driver = accounting_driver_create(GiB, 0);
    const struct gpucache_driver *d = accounting_driver_interface(driver);
    gpucache_fence *on_a, *on_b, *all;
    cr_assert_eq(d->fence_stream(d->context, 0, STREAM_A, &on_a), GPUCACHE_SUCCESS);
    cr_assert_eq(d->fence_query(d->context, on_a), GPUCACHE_SUCCESS);
    d->fence_release(d->context, on_a);
    accounting_driver_hold_fences(driver, true);
    d->fence_stream(d->context, 0, STREAM_A, &on_a);
    d->fence_stream(d->context, 0, STREAM_B, &on_b);
    d->fence_all_streams(d->context, 0, &all);
    cr_assert_eq(d->fence_query(d->context, on_a), GPUCACHE_ERROR_NOT_READY);
    accounting_driver_complete_stream(driver, STREAM_A);
    cr_assert_eq(d->fence_query(d->context, on_a), GPUCACHE_SUCCESS);
    cr_assert_eq(d->fence_query(d->context, on_b), GPUCACHE_ERROR_NOT_READY);
    cr_assert_eq(d->fence_query(d->context, all), GPUCACHE_ERROR_NOT_READY);
    cr_assert_eq(d->fence_wait(d->context, on_b), GPUCACHE_SUCCESS);
    cr_assert_eq(d->fence_query(d->context, on_b), GPUCACHE_SUCCESS);
    cr_assert_eq(d->synchronize_device(d->context, 0), GPUCACHE_SUCCESS);
    cr_assert_eq(d->fence_query(d->context, all), GPUCACHE_SUCCESS);
    cr_assert_eq(accounting_driver_live_fences(driver), 3);
    d->fence_release(d->context, on_a);
    d->fence_release(d->context, on_b);
    d->fence_release(d->context, all);
    cr_assert_eq(accounting_driver_live_fences(driver), 0);
    accounting_driver_destroy(driver);
}

Test(accounting_driver, vmm_calls_are_accounted)
{
    struct accounting_driver *driver = accounting_driver_create(8 * MiB, 2 * MiB);
    const struct gpucache_driver *d = accounting_driver_interface(driver);
    size_t granularity = 0;
    cr_assert_eq(d->page_granularity(d->context, 0, &granularity), GPUCACHE_SUCCESS);
    cr_assert_eq(granularity, 2 * MiB);
    uint64_t base = 0;
    cr_assert_eq(d->address_reserve(d->context, 0, 64 * MiB, &base), GPUCACHE_SUCCESS);
    gpucache_page_handle pages[5];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(d->page_create(d->context, 0, 2 * MiB, &pages[i]), GPUCACHE_SUCCESS);
    cr_assert_eq(d->page_create(d->context, 0, 2 * MiB, &pages[4]), GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(d->page_map(d->context, 0, base, 2 * MiB, pages[0]), GPUCACHE_SUCCESS);
    cr_assert_eq(d->page_map(d->context, 0, base, 2 * MiB, pages[1]), GPUCACHE_ERROR_INVALID_VALUE,
                 "the range is already mapped");
    cr_assert_eq(d->page_map(d->context, 0, base + 2 * MiB, 2 * MiB, pages[1]), GPUCACHE_SUCCESS);
    cr_assert_eq(d->set_access(d->context, 0, base, 4 * MiB, NULL, 0), GPUCACHE_SUCCESS);
    cr_assert_eq(d->address_free(d->context, 0, base, 64 * MiB), GPUCACHE_ERROR_INVALID_VALUE,
                 "pages are still mapped");
    cr_assert_eq(d->page_release(d->context, 0, pages[0]), GPUCACHE_SUCCESS);
    cr_assert_eq(accounting_driver_used_bytes(driver), 8 * MiB, "mapped memory lives until unmapped");
    cr_assert_eq(d->page_unmap(d->context, 0, base, 4 * MiB), GPUCACHE_SUCCESS);
    cr_assert_eq(accounting_driver_used_bytes(driver), 6 * MiB);
    cr_assert_eq(d->address_free(d->context, 0, base, 64 * MiB), GPUCACHE_SUCCESS);
    accounting_driver_destroy(driver);
}

Test(accounting_driver, fails_the_nth_call_of_an_operation)
{
    struct accounting_driver *driver = accounting_driver_create(GiB, 0);
    const struct gpucache_driver *d = accounting_driver_interface(driver);
    enum accounting_operation alloc_operation = accounting_driver_operation_named("device_alloc");
    cr_assert_eq(alloc_operation, ACCOUNTING_DEVICE_ALLOC);
    cr_assert_eq(accounting_driver_operation_named("no_such_call"), ACCOUNTING_OPERATION_COUNT);
    cr_assert_str_eq(accounting_driver_operation_name(ACCOUNTING_FENCE_WAIT), "fence_wait");
    accounting_driver_fail_call(driver, alloc_operation, 2, 2, GPUCACHE_ERROR_OUT_OF_MEMORY);
    uint64_t address;
    cr_assert_eq(d->device_alloc(d->context, 0, 512, &address), GPUCACHE_SUCCESS);
    cr_assert_eq(d->device_alloc(d->context, 0, 512, &address), GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(d->device_alloc(d->context, 0, 512, &address), GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(d->device_alloc(d->context, 0, 512, &address), GPUCACHE_SUCCESS);
    cr_assert_eq(accounting_driver_used_bytes(driver), 1024);
    accounting_driver_destroy(driver);
}

Test(accounting_driver, a_stream_that_waited_completes_the_work_it_waited_for)
{
    struct accounting_driver *driver = accounting_driver_create(GiB, 0);
    const struct gpucache_driver *d = accounting_driver_interface(driver);
    accounting_driver_hold_fences(driver, true);
    gpucache_fence *on_a, *after_wait, *later_on_a;
    d->fence_stream(d->context, 0, STREAM_A, &on_a);
    cr_assert(accounting_driver_stream_wait(driver, STREAM_B, on_a));
    d->fence_stream(d->context, 0, STREAM_B, &after_wait);
    d->fence_stream(d->context, 0, STREAM_A, &later_on_a);
    cr_assert_eq(d->fence_wait(d->context, after_wait), GPUCACHE_SUCCESS);
    cr_assert_eq(d->fence_query(d->context, on_a), GPUCACHE_SUCCESS,
                 "B's work after the wait is done, so A's work before it is too");
    cr_assert_eq(d->fence_query(d->context, later_on_a), GPUCACHE_ERROR_NOT_READY,
                 "A's later work is not covered by B");
    d->fence_release(d->context, on_a);
    d->fence_release(d->context, after_wait);
    d->fence_release(d->context, later_on_a);
    accounting_driver_destroy(driver);
}

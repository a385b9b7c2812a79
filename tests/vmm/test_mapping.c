/* Mapping and unmapping pages of one segment. */
#include <criterion/criterion.h>

#include "segment_fixture.h"

TestSuite(vmm_mapping, .init = fixture_setup, .fini = fixture_teardown);

Test(vmm_mapping, create_reserves_whole_address_range)
{
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 1);
    cr_expect_eq(fixture_driver.reservations[0].size, FIXTURE_PAGES * FIXTURE_PAGE);
    cr_expect_eq(fixture_segment->base, fixture_driver.reservations[0].base);
    cr_expect_eq(fixture_segment->stream, 7);
    cr_expect_eq(fixture_segment->page_count, FIXTURE_PAGES);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0, "nothing mapped yet");
}

Test(vmm_mapping, map_covers_every_touched_page)
{
    size_t mapped = 0;
    /* 16 MiB starting 10 MiB in touches pages 0 and 1. */
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 10 * MiB, 16 * MiB, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped, 2 * FIXTURE_PAGE);
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 1));
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 2));
    cr_expect_eq(fixture_driver.physical_in_use, 2 * FIXTURE_PAGE);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE], 2, "one handle per page");
    cr_expect_eq(fixture_driver.calls[VMM_TEST_SET_ACCESS], 1, "one grant for the new span");
    expect_fixture_sound();
}

Test(vmm_mapping, map_of_mapped_pages_does_nothing)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, FIXTURE_PAGE, NULL),
                 GPUCACHE_SUCCESS);
    uint64_t calls = vmm_test_driver_total_calls(&fixture_driver);
    size_t mapped = 99;
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 4 * MiB, 8 * MiB, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped, 0);
    cr_expect_eq(vmm_test_driver_total_calls(&fixture_driver), calls, "no driver call");
    cr_expect_eq(fixture_segment->stats.map_operations, 1);
}

Test(vmm_mapping, map_fills_gaps_between_mapped_pages)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, FIXTURE_PAGE, NULL), 0);
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 2 * FIXTURE_PAGE, FIXTURE_PAGE,
                                                 NULL),
                 0);
    size_t mapped = 0;
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 4 * FIXTURE_PAGE, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped, 2 * FIXTURE_PAGE, "pages 1 and 3 only");
    cr_expect_eq(fixture_segment->stats.mapped_pages, 4);
    cr_expect_eq(fixture_segment->stats.map_operations, 3);
    cr_expect_eq(fixture_segment->stats.driver_page_maps, 4);
    expect_fixture_sound();
}

Test(vmm_mapping, map_outside_reservation_is_refused)
{
    size_t end = FIXTURE_PAGES * FIXTURE_PAGE;
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, end - MiB, 2 * MiB, NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, SIZE_MAX - MiB, 2 * MiB, NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, end + 1, NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, end, 1, NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(vmm_test_driver_total_calls(&fixture_driver), 1, "only the reservation");
    size_t mapped = 0;
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, end, &mapped),
                 GPUCACHE_SUCCESS, "the whole reservation fits");
    cr_expect_eq(mapped, end);
    cr_expect_eq(fixture_segment->stats.peak_mapped_bytes, end);
}

Test(vmm_mapping, unmap_releases_only_whole_pages)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 4 * FIXTURE_PAGE, NULL), 0);
    size_t released = 0;
    /* [10 MiB, 70 MiB) holds pages 1 and 2 wholly, 0 and 3 partly. */
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, 10 * MiB, 60 * MiB,
                                                   &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released, 2 * FIXTURE_PAGE);
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 1));
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 2));
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 3));
    cr_expect_eq(fixture_driver.physical_in_use, 2 * FIXTURE_PAGE,
                 "unmapping gave the memory back to the device");
    cr_expect_eq(fixture_segment->stats.unmap_operations, 1);
    /* A range inside one page releases nothing. */
    cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 1 * MiB, 18 * MiB, &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released, 0);
    cr_expect_eq(fixture_segment->stats.unmap_operations, 1);
    expect_fixture_sound();
}

Test(vmm_mapping, unmapped_and_releasable_queries)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, FIXTURE_PAGE, FIXTURE_PAGE,
                                                 NULL),
                 0);
    cr_expect_eq(gpucache_expandable_segment_unmapped_pages(fixture_segment, 0, 3 * FIXTURE_PAGE),
                 2);
    cr_expect_eq(gpucache_expandable_segment_unmapped_pages(fixture_segment, FIXTURE_PAGE + 1, 5),
                 0);
    cr_expect_eq(gpucache_expandable_segment_unmapped_pages(fixture_segment, 0, 0), 0);
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, 0,
                                                              3 * FIXTURE_PAGE),
                 FIXTURE_PAGE);
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, MiB,
                                                              FIXTURE_PAGE + MiB),
                 0, "page 1 is not wholly inside");
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, FIXTURE_PAGES + 5));
    cr_expect(gpucache_expandable_segment_contains(fixture_segment, fixture_segment->base));
    cr_expect_not(gpucache_expandable_segment_contains(
        fixture_segment, fixture_segment->base + FIXTURE_PAGES * FIXTURE_PAGE));
    cr_expect_not(gpucache_expandable_segment_contains(fixture_segment, fixture_segment->base - 1));
}

Test(vmm_mapping, remap_after_unmap_creates_fresh_pages)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0);
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE], 4);
    expect_fixture_sound();
}

Test(vmm_mapping, out_of_device_memory_maps_nothing)
{
    fixture_driver.capacity = 3 * FIXTURE_PAGE;
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 5 * FIXTURE_PAGE, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(fixture_driver.physical_in_use, 0, "the three pages that fitted went back");
    cr_expect_eq(fixture_segment->stats.rolled_back_maps, 1);
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 3 * FIXTURE_PAGE, NULL),
                 GPUCACHE_SUCCESS);
    expect_fixture_sound();
}

Test(vmm_mapping, destroy_gives_everything_back)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 3 * FIXTURE_PAGE, NULL), 0);
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 7 * FIXTURE_PAGE, 1, NULL), 0);
    /* fixture_teardown destroys and checks that nothing is left. */
}

Test(vmm_mapping, failed_destroy_can_be_retried)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_ADDRESS_FREE, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_destroy(fixture_segment),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0, "pages went back anyway");
    expect_fixture_sound();
    /* fixture_teardown retries the destroy. */
}

Test(vmm_mapping, abandon_makes_no_driver_call)
{
    struct gpucache_expandable_segment *segment = NULL;
    cr_assert_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 0, FIXTURE_PAGE,
                                                    2 * FIXTURE_PAGE, NULL, 0, &segment),
                 GPUCACHE_SUCCESS);
    cr_assert_eq(gpucache_expandable_segment_map(segment, 0, FIXTURE_PAGE, NULL), 0);
    uint64_t base = segment->base;
    gpucache_page_handle handle = segment->handles[0];
    uint64_t calls = vmm_test_driver_total_calls(&fixture_driver);
    gpucache_expandable_segment_abandon(segment);
    cr_expect_eq(vmm_test_driver_total_calls(&fixture_driver), calls);
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 2);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 1);
    /* In real life the context took these with it; here the test gives them
     * back so that the fixture's leak checks see only its own segment. */
    struct gpucache_driver *driver = &fixture_driver.driver;
    cr_expect_eq(driver->page_unmap(driver->context, 0, base, FIXTURE_PAGE), 0);
    cr_expect_eq(driver->page_release(driver->context, 0, handle), 0);
    cr_expect_eq(driver->address_free(driver->context, 0, base, 2 * FIXTURE_PAGE), 0);
}

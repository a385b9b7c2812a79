/* Mapping and unmapping pages of one segment: runs of unmapped pages become
 * one handle each, and only whole handles are given back. */
#include <criterion/criterion.h>

#include "segment_fixture.h"

TestSuite(vmm_mapping, .init = fixture_setup, .fini = fixture_teardown);

#define P FIXTURE_PAGE

/* The driver calls a test counts, by kind. */
struct call_counts {
    uint64_t creates, maps, accesses, unmaps, releases, total;
};

static struct call_counts calls_now(void)
{
    return (struct call_counts){
        .creates = fixture_driver.calls[VMM_TEST_PAGE_CREATE],
        .maps = fixture_driver.calls[VMM_TEST_PAGE_MAP],
        .accesses = fixture_driver.calls[VMM_TEST_SET_ACCESS],
        .unmaps = fixture_driver.calls[VMM_TEST_PAGE_UNMAP],
        .releases = fixture_driver.calls[VMM_TEST_PAGE_RELEASE],
        .total = vmm_test_driver_total_calls(&fixture_driver),
    };
}

static struct call_counts calls_since(struct call_counts before)
{
    struct call_counts now = calls_now();
    return (struct call_counts){
        .creates = now.creates - before.creates,
        .maps = now.maps - before.maps,
        .accesses = now.accesses - before.accesses,
        .unmaps = now.unmaps - before.unmaps,
        .releases = now.releases - before.releases,
        .total = now.total - before.total,
    };
}

/* Size the driver gave the handle backing page `page`. */
static size_t driver_handle_size(size_t page)
{
    uint64_t address = fixture_segment->base + page * P;
    const struct vmm_test_mapping *mapping = vmm_test_driver_mapping_at(&fixture_driver, address);
    cr_assert_not_null(mapping, "page %zu is not mapped", page);
    return vmm_test_driver_handle(&fixture_driver, mapping->handle)->size;
}

Test(vmm_mapping, create_reserves_whole_address_range)
{
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 1);
    cr_expect_eq(fixture_driver.reservations[0].size, FIXTURE_PAGES * FIXTURE_PAGE);
    cr_expect_eq(fixture_segment->base, fixture_driver.reservations[0].base);
    cr_expect_eq(fixture_segment->stream, 7);
    cr_expect_eq(fixture_segment->page_count, FIXTURE_PAGES);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0, "nothing mapped yet");
}

Test(vmm_mapping, map_covers_every_touched_page_with_one_handle)
{
    struct gpucache_expandable_change mapped = {0, 0, 0, 0, 0, 0};
    struct call_counts before = calls_now();
    /* 16 MiB starting 10 MiB in touches pages 0 and 1. */
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 10 * MiB, 16 * MiB, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped.mapped_bytes, 2 * P);
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 1));
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 2));
    cr_expect_eq(fixture_driver.physical_in_use, 2 * P);
    struct call_counts made = calls_since(before);
    cr_expect_eq(made.creates, 1, "both pages in one handle");
    cr_expect_eq(driver_handle_size(0), 2 * P);
    cr_expect_eq(made.maps, 1);
    cr_expect_eq(made.accesses, 1, "one grant for the new span");
    cr_expect_eq(fixture_handle_pages_at(0), 2);
    cr_expect_eq(fixture_segment->stats.handles, 1);
    cr_expect_eq(fixture_segment->stats.driver_maps, 1);
    expect_fixture_sound();
}

Test(vmm_mapping, one_map_of_every_page_is_three_driver_calls)
{
    struct call_counts before = calls_now();
    struct gpucache_expandable_change mapped = {0, 0, 0, 0, 0, 0};
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, FIXTURE_PAGES * P, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped.mapped_bytes, FIXTURE_PAGES * P);
    struct call_counts made = calls_since(before);
    cr_expect_eq(made.creates, 1);
    cr_expect_eq(made.maps, 1);
    cr_expect_eq(made.accesses, 1);
    cr_expect_eq(made.total, 3, "nothing else");
    cr_expect_eq(driver_handle_size(0), FIXTURE_PAGES * P, "one handle of every page's bytes");
    cr_expect_eq(vmm_test_driver_live_mappings(&fixture_driver), 1);
    cr_expect_eq(fixture_handle_pages_at(0), FIXTURE_PAGES);
    expect_fixture_sound();
}

Test(vmm_mapping, map_of_mapped_pages_does_nothing)
{
    map_fixture_pages(0, 1);
    uint64_t calls = vmm_test_driver_total_calls(&fixture_driver);
    struct gpucache_expandable_change mapped = {99, 99, 99, 99, 99, 99};
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 4 * MiB, 8 * MiB, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped.mapped_bytes, 0);
    cr_expect_eq(vmm_test_driver_total_calls(&fixture_driver), calls, "no driver call");
    cr_expect_eq(fixture_segment->stats.map_operations, 1);
}

/* [mapped | 2 unmapped | mapped | 3 unmapped]: one handle per unmapped run,
 * sized to the run, the mapped pages' handles untouched, one grant. */
Test(vmm_mapping, map_backs_each_unmapped_run_with_its_own_handle)
{
    map_fixture_pages(0, 1);
    map_fixture_pages(3, 1);
    gpucache_page_handle first_handle = fixture_segment->handles[0];
    gpucache_page_handle middle_handle = fixture_segment->handles[3];
    struct call_counts before = calls_now();
    struct gpucache_expandable_change mapped = {0, 0, 0, 0, 0, 0};
    /* From inside page 0 to inside page 6. */
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 10 * MiB, 6 * P, &mapped),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(mapped.mapped_bytes, 5 * P, "pages 1-2 and 4-6");
    struct call_counts made = calls_since(before);
    cr_expect_eq(made.creates, 2, "one handle per unmapped run");
    cr_expect_eq(mapped.handles_created, 2, "the map reports the handles it created");
    cr_expect_eq(mapped.handles_released, 0);
    cr_expect_eq(made.maps, 2);
    cr_expect_eq(made.accesses, 1, "one grant over the span of both runs");
    cr_expect_eq(made.total, 5);
    cr_expect_eq(fixture_handle_pages_at(0), 1);
    cr_expect_eq(fixture_handle_pages_at(1), 2);
    cr_expect_eq(fixture_handle_pages_at(3), 1);
    cr_expect_eq(fixture_handle_pages_at(4), 3);
    cr_expect_eq(driver_handle_size(1), 2 * P);
    cr_expect_eq(driver_handle_size(4), 3 * P);
    cr_expect_eq(fixture_segment->handles[0], first_handle, "mapped pages keep their handle");
    cr_expect_eq(fixture_segment->handles[3], middle_handle);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 7));
    cr_expect_eq(fixture_segment->stats.mapped_pages, 7);
    cr_expect_eq(fixture_segment->stats.handles, 4);
    cr_expect_eq(fixture_segment->stats.map_operations, 3);
    cr_expect_eq(fixture_segment->stats.driver_maps, 4);
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
    struct gpucache_expandable_change mapped = {0, 0, 0, 0, 0, 0};
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, end, &mapped),
                 GPUCACHE_SUCCESS, "the whole reservation fits");
    cr_expect_eq(mapped.mapped_bytes, end);
    cr_expect_eq(fixture_segment->stats.peak_mapped_bytes, end);
}

static void expect_nothing_releasable(size_t offset, size_t length, const char *why)
{
    size_t span_offset = 99, span_length = 99;
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, offset, length), 0,
                 "%s", why);
    cr_expect_not(gpucache_expandable_segment_releasable_span(fixture_segment, offset, length,
                                                              &span_offset, &span_length),
                  "%s", why);
    cr_expect_eq(span_offset, 0, "%s", why);
    cr_expect_eq(span_length, 0, "%s", why);
}

/* Each range covers only part of the one 4-page handle. */
Test(vmm_mapping, unmap_of_part_of_a_handle_releases_nothing)
{
    map_fixture_pages(0, 4);
    const size_t ranges[][2] = {
        {P, 2 * P},       /* whole pages in the middle */
        {P, 3 * P},       /* every page but the first */
        {0, 4 * P - 1},   /* one byte short of the end */
        {MiB, 4 * P},     /* starts inside the first page */
        {10 * MiB, 60 * MiB},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        expect_nothing_releasable(ranges[i][0], ranges[i][1], "part of the handle");
        uint64_t calls = vmm_test_driver_total_calls(&fixture_driver);
        struct gpucache_expandable_change released = {99, 99, 99, 99, 99, 99};
        cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, ranges[i][0],
                                                       ranges[i][1], &released),
                     GPUCACHE_SUCCESS);
        cr_expect_eq(released.released_bytes, 0, "range %zu", i);
        cr_expect_eq(vmm_test_driver_total_calls(&fixture_driver), calls,
                     "range %zu: no driver call", i);
    }
    cr_expect_eq(fixture_segment->stats.mapped_pages, 4);
    cr_expect_eq(fixture_segment->stats.unmap_operations, 0);
    cr_expect_eq(fixture_driver.physical_in_use, 4 * P);
    expect_fixture_sound();
}

Test(vmm_mapping, unmap_of_a_whole_handle_is_one_unmap_and_one_release)
{
    map_fixture_pages(1, 4);
    /* The range reaches past the handle on both sides. */
    size_t offset = 10 * MiB, length = 5 * P;
    size_t span_offset = 0, span_length = 0;
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, offset, length),
                 4 * P);
    cr_expect(gpucache_expandable_segment_releasable_span(fixture_segment, offset, length,
                                                          &span_offset, &span_length));
    cr_expect_eq(span_offset, P);
    cr_expect_eq(span_length, 4 * P);
    struct call_counts before = calls_now();
    struct gpucache_expandable_change released = {0, 0, 0, 0, 0, 0};
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, offset, length, &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released.released_bytes, 4 * P, "what releasable_bytes announced");
    struct call_counts made = calls_since(before);
    cr_expect_eq(made.unmaps, 1);
    cr_expect_eq(made.releases, 1);
    cr_expect_eq(made.total, 2);
    cr_expect_eq(fixture_driver.physical_in_use, 0);
    cr_expect_eq(fixture_segment->stats.handles, 0);
    cr_expect_eq(fixture_segment->stats.unmap_operations, 1);
    cr_expect_eq(fixture_segment->stats.driver_unmaps, 1);
    expect_fixture_sound();
}

/* Handles [0,2) [2] [3,5) [5,7): a range from inside the first to inside
 * the last holds the middle two wholly; the last starts inside the range
 * but reaches past its end. */
Test(vmm_mapping, unmap_releases_only_whole_handles)
{
    map_fixture_pages(0, 2);
    map_fixture_pages(2, 1);
    map_fixture_pages(3, 2);
    map_fixture_pages(5, 2);
    size_t offset = P, length = 5 * P + 10 * MiB;
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, offset, length),
                 3 * P);
    size_t span_offset = 0, span_length = 0;
    cr_expect(gpucache_expandable_segment_releasable_span(fixture_segment, offset, length,
                                                          &span_offset, &span_length));
    cr_expect_eq(span_offset, 2 * P);
    cr_expect_eq(span_length, 3 * P);
    struct call_counts before = calls_now();
    struct gpucache_expandable_change released = {0, 0, 0, 0, 0, 0};
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, offset, length, &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released.released_bytes, 3 * P);
    struct call_counts made = calls_since(before);
    cr_expect_eq(made.unmaps, 2, "one per handle");
    cr_expect_eq(made.releases, 2);
    for (size_t page = 0; page < 7; page++)
        cr_expect_eq(gpucache_expandable_segment_page_mapped(fixture_segment, page),
                     page < 2 || page >= 5, "page %zu", page);
    cr_expect_eq(fixture_driver.physical_in_use, 4 * P);
    cr_expect_eq(fixture_segment->stats.handles, 2);
    cr_expect_eq(fixture_segment->stats.unmap_operations, 1, "one call of unmap");
    /* Unmapping exactly the span announced gives back the same. */
    map_fixture_pages(2, 3);
    cr_expect_eq(fixture_handle_pages_at(2), 3, "the freed run is one handle now");
    cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, span_offset, span_length,
                                                   &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released.released_bytes, 3 * P);
    expect_fixture_sound();
}

/* Handles at pages 0 and 3, nothing between: the span reaches from the
 * first to the end of the last, and only mapped bytes are releasable. */
Test(vmm_mapping, releasable_span_covers_unmapped_pages_between_handles)
{
    map_fixture_pages(0, 1);
    map_fixture_pages(3, 1);
    size_t span_offset = 0, span_length = 0;
    cr_expect(gpucache_expandable_segment_releasable_span(fixture_segment, 0, 6 * P,
                                                          &span_offset, &span_length));
    cr_expect_eq(span_offset, 0);
    cr_expect_eq(span_length, 4 * P);
    cr_expect_eq(gpucache_expandable_segment_releasable_bytes(fixture_segment, 0, 6 * P), 2 * P);
    struct gpucache_expandable_change released = {0, 0, 0, 0, 0, 0};
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, span_offset, span_length,
                                                   &released),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(released.released_bytes, 2 * P);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_UNMAP], 2);
    expect_nothing_releasable(0, FIXTURE_PAGES * P, "no handle left");
    expect_nothing_releasable(FIXTURE_PAGES * P, 1, "outside the reservation");
    expect_fixture_sound();
}

Test(vmm_mapping, unmapped_and_releasable_queries)
{
    map_fixture_pages(1, 1);
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

Test(vmm_mapping, remap_after_unmap_creates_a_fresh_handle)
{
    map_fixture_pages(0, 2);
    gpucache_page_handle old_handle = fixture_segment->handles[0];
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0);
    map_fixture_pages(0, 2);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE], 2);
    cr_expect_neq(fixture_segment->handles[0], old_handle);
    expect_fixture_sound();
}

/* Room for two more pages: the runs at pages 0 and 2 fit, the one at page
 * 4 does not, and the two handles already made go back. */
Test(vmm_mapping, out_of_device_memory_maps_nothing)
{
    map_fixture_pages(1, 1);
    map_fixture_pages(3, 1);
    fixture_driver.capacity = 4 * P;
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 5 * P, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE], 2 + 3);
    cr_expect_eq(fixture_driver.physical_in_use, 2 * P, "the two runs that fitted went back");
    cr_expect_eq(fixture_segment->stats.rolled_back_maps, 1);
    cr_expect_eq(fixture_segment->stats.handles, 2);
    expect_fixture_sound();
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 3 * P, NULL),
                 GPUCACHE_SUCCESS);
    expect_fixture_sound();
}

Test(vmm_mapping, destroy_gives_everything_back)
{
    map_fixture_pages(0, 3);
    map_fixture_pages(4, 1);
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 7 * FIXTURE_PAGE, 1, NULL), 0);
    map_fixture_pages(0, 8);
    cr_expect_eq(fixture_segment->stats.handles, 5);
    /* fixture_teardown destroys and checks that nothing is left. */
}

Test(vmm_mapping, failed_destroy_can_be_retried)
{
    map_fixture_pages(0, 2);
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
    cr_assert_eq(gpucache_expandable_segment_map(segment, 0, 2 * FIXTURE_PAGE, NULL), 0);
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
    cr_expect_eq(driver->page_unmap(driver->context, 0, base, 2 * FIXTURE_PAGE), 0);
    cr_expect_eq(driver->page_release(driver->context, 0, handle), 0);
    cr_expect_eq(driver->address_free(driver->context, 0, base, 2 * FIXTURE_PAGE), 0);
}

/* Handle plans and stitched maps: how a run is cut into handles, whole
 * handles moved from other pages or segments instead of created, and every
 * VMM call of a stitched map failing in turn, with the handles it moved
 * going back to where they came from (or released, or kept to release
 * later, when the driver refuses that too) and nothing leaked. */
#include <criterion/criterion.h>
#include <string.h>

#include "segment_fixture.h"

TestSuite(vmm_stitching, .init = fixture_setup, .fini = fixture_teardown);

#define P FIXTURE_PAGE

Test(vmm_stitching, doubling_plan_cuts_each_handle_as_large_as_all_before)
{
    gpucache_expandable_segment_set_handle_plan(fixture_segment, 1, true);
    map_fixture_pages(0, 10);
    /* 1, 1, 2, then 4 would leave 2 pages, too few for the next (8): the
     * last handle takes them. */
    cr_expect_eq(fixture_handle_pages_at(0), 1);
    cr_expect_eq(fixture_handle_pages_at(1), 1);
    cr_expect_eq(fixture_handle_pages_at(2), 2);
    cr_expect_eq(fixture_handle_pages_at(4), 6);
    cr_expect_eq(fixture_segment->stats.handles, 4);
    expect_fixture_sound();
}

Test(vmm_stitching, fixed_plan_gives_the_remainder_to_the_last_handle)
{
    gpucache_expandable_segment_set_handle_plan(fixture_segment, 2, false);
    map_fixture_pages(0, 5);
    cr_expect_eq(fixture_handle_pages_at(0), 2);
    cr_expect_eq(fixture_handle_pages_at(2), 3);
    cr_expect_eq(fixture_segment->stats.handles, 2);
    expect_fixture_sound();
}

Test(vmm_stitching, page_plan_gives_every_page_its_handle)
{
    gpucache_expandable_segment_set_handle_plan(fixture_segment, 1, false);
    map_fixture_pages(3, 3);
    for (size_t page = 3; page < 6; page++)
        cr_expect_eq(fixture_handle_pages_at(page), 1, "page %zu", page);
    expect_fixture_sound();
}

Test(vmm_stitching, default_plan_is_one_handle_per_run)
{
    map_fixture_pages(0, 7);
    cr_expect_eq(fixture_handle_pages_at(0), 7);
    expect_fixture_sound();
}

/* Pages 0 and 1 mapped as handles of one page each: the sources of the
 * stitched map of pages [5, 8) below. */
static void map_two_sources(struct gpucache_expandable_source sources[2])
{
    map_fixture_pages(0, 1);
    map_fixture_pages(1, 1);
    sources[0] = (struct gpucache_expandable_source){fixture_segment, 0, 1, false, 0};
    sources[1] = (struct gpucache_expandable_source){fixture_segment, 1, 1, false, 0};
}

Test(vmm_stitching, moved_handles_back_the_run_before_new_ones)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    uint64_t creates = fixture_driver.calls[VMM_TEST_PAGE_CREATE];
    struct gpucache_expandable_change change;
    cr_assert_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P, sources,
                                                          2, &change),
                 GPUCACHE_SUCCESS);
    cr_expect(sources[0].moved && sources[1].moved);
    cr_expect_eq(sources[0].target_page, 5);
    cr_expect_eq(sources[1].target_page, 6);
    cr_expect_eq(change.mapped_bytes, 3 * P, "moved pages count as mapped here");
    cr_expect_eq(change.handles_moved, 2);
    cr_expect_eq(change.moved_bytes, 2 * P);
    cr_expect_eq(change.handles_created, 1, "only page 7 needed a new handle");
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE] - creates, 1);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 1));
    for (size_t page = 5; page < 8; page++)
        cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, page), "page %zu", page);
    cr_expect_eq(fixture_driver.physical_in_use, 3 * P, "two pages moved, one created");
    cr_expect_eq(fixture_segment->stats.mapped_pages, 3);
    cr_expect_eq(fixture_segment->stats.handles, 3);
    cr_expect_eq(fixture_segment->stats.handles_moved_in, 2);
    cr_expect_eq(fixture_segment->stats.handles_moved_out, 2);
    expect_fixture_sound();
}

Test(vmm_stitching, handles_move_between_segments)
{
    struct gpucache_expandable_segment *other = NULL;
    cr_assert_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 9, P, 4 * P, NULL,
                                                    0, &other),
                 GPUCACHE_SUCCESS);
    cr_assert_eq(gpucache_expandable_segment_map(other, 0, 2 * P, NULL), GPUCACHE_SUCCESS);
    struct gpucache_expandable_source source = {other, 0, 2, false, 0};
    struct gpucache_expandable_change change;
    cr_assert_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 2 * P, 2 * P, &source,
                                                          1, &change),
                 GPUCACHE_SUCCESS);
    cr_expect(source.moved);
    cr_expect_eq(change.handles_created, 0);
    cr_expect_eq(fixture_handle_pages_at(2), 2);
    cr_expect_eq(other->stats.mapped_pages, 0);
    cr_expect_eq(other->stats.handles, 0);
    cr_expect_eq(fixture_driver.physical_in_use, 2 * P);
    struct gpucache_expandable_segment *both[] = {fixture_segment, other};
    expect_segment_consistent(other, &fixture_driver);
    expect_handles_accounted(both, 2, &fixture_driver);
    cr_expect_eq(gpucache_expandable_segment_destroy(other), GPUCACHE_SUCCESS);
    expect_fixture_sound();
}

Test(vmm_stitching, sources_that_do_not_fit_or_are_not_whole_handles_stay)
{
    map_fixture_pages(0, 2); /* one handle of two pages */
    map_fixture_pages(3, 1);
    struct gpucache_expandable_source sources[] = {
        {fixture_segment, 0, 2, false, 0}, /* larger than the one-page run */
        {fixture_segment, 1, 1, false, 0}, /* inside a handle */
        {fixture_segment, 2, 1, false, 0}, /* unmapped */
        {fixture_segment, 3, 1, false, 0}, /* inside the range mapped */
    };
    struct gpucache_expandable_change change;
    cr_assert_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 3 * P, 2 * P, sources,
                                                          4, &change),
                 GPUCACHE_SUCCESS);
    for (size_t i = 0; i < 4; i++)
        cr_expect_not(sources[i].moved, "source %zu", i);
    cr_expect_eq(change.handles_created, 1);
    cr_expect_eq(change.handles_moved, 0);
    cr_expect_eq(fixture_handle_pages_at(0), 2);
    cr_expect_eq(fixture_handle_pages_at(4), 1);
    expect_fixture_sound();
}

Test(vmm_stitching, an_unmapped_source_page_can_be_reused_by_the_next_map)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    cr_assert_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 2 * P, sources,
                                                          2, NULL),
                 GPUCACHE_SUCCESS);
    map_fixture_pages(0, 2);
    cr_expect_eq(fixture_handle_pages_at(0), 2, "the pages a move left are plain unmapped pages");
    expect_fixture_sound();
}

/* The stitched map of pages [5, 8) with the two sources makes, in order:
 * unmap 0, map 5, unmap 1, map 6, create 7, map 7, one grant over [5, 8). */
static void expect_sources_back(const struct gpucache_expandable_source sources[2],
                                const char *what, uint64_t nth)
{
    for (size_t i = 0; i < 2; i++) {
        cr_expect_not(sources[i].moved, "%s %llu: source %zu marked moved", what,
                      (unsigned long long)nth, i);
        cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, i),
                  "%s %llu: source %zu is mapped where it was", what, (unsigned long long)nth, i);
        cr_expect_eq(fixture_handle_pages_at(i), 1);
    }
    for (size_t page = 5; page < 8; page++) {
        cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, page),
                      "%s %llu: page %zu", what, (unsigned long long)nth, page);
        cr_expect_eq(fixture_handle_pages_at(page), 0);
    }
    cr_expect_eq(fixture_driver.physical_in_use, 2 * P, "%s %llu: device memory", what,
                 (unsigned long long)nth);
    cr_expect_eq(fixture_segment->stats.handles, 2);
    cr_expect_eq(fixture_segment->stats.mapped_pages, 2);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
    expect_fixture_sound();
}

static void sweep_stitched_failures(enum vmm_test_operation operation, uint64_t calls)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    for (uint64_t nth = 1; nth <= calls; nth++) {
        uint64_t injected = fixture_driver.injected_failures;
        vmm_test_driver_fail_call(&fixture_driver, operation, nth, GPUCACHE_ERROR_OUT_OF_MEMORY);
        struct gpucache_expandable_change change = {99, 99, 99, 99, 99, 99};
        cr_expect_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P,
                                                              sources, 2, &change),
                     GPUCACHE_ERROR_OUT_OF_MEMORY, "failure at call %llu",
                     (unsigned long long)nth);
        vmm_test_driver_disarm(&fixture_driver);
        cr_expect_eq(fixture_driver.injected_failures, injected + 1, "call %llu was reached",
                     (unsigned long long)nth);
        cr_expect_eq(change.mapped_bytes, 0);
        cr_expect_eq(change.handles_created, 0);
        cr_expect_eq(change.handles_moved, 0);
        cr_expect_eq(change.handles_released, 0, "every moved handle went back");
        expect_sources_back(sources, "after a failure at call", nth);
    }
    uint64_t before = fixture_driver.calls[operation];
    cr_expect_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P, sources,
                                                          2, NULL),
                 GPUCACHE_SUCCESS, "the same map works once the driver does");
    cr_expect_geq(fixture_driver.calls[operation] - before, calls,
                 "the sweep covered every call of the operation");
    expect_fixture_sound();
}

Test(vmm_stitching, unmap_of_each_source_fails)
{
    sweep_stitched_failures(VMM_TEST_PAGE_UNMAP, 2);
}

Test(vmm_stitching, map_of_each_handle_fails)
{
    sweep_stitched_failures(VMM_TEST_PAGE_MAP, 3);
}

Test(vmm_stitching, create_of_the_new_handle_fails)
{
    sweep_stitched_failures(VMM_TEST_PAGE_CREATE, 1);
}

Test(vmm_stitching, grant_fails_after_everything_is_mapped)
{
    sweep_stitched_failures(VMM_TEST_SET_ACCESS, 1);
}

/* The map at the target fails and so does the grant that returns the
 * handle to its source: the handle's memory goes back to the driver,
 * reported. */
Test(vmm_stitching, a_handle_that_cannot_return_is_released)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_MAP, 1, GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_SET_ACCESS, 1,
                              GPUCACHE_ERROR_OUT_OF_MEMORY);
    struct gpucache_expandable_change change;
    cr_expect_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P, sources,
                                                          2, &change),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_eq(change.handles_released, 1);
    cr_expect_eq(change.released_bytes, P);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect_eq(fixture_handle_pages_at(0), 0, "released, not held");
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 1), "never moved");
    cr_expect_eq(fixture_driver.physical_in_use, P);
    expect_fixture_sound();
}

/* As above, and the release is refused too: the source keeps the handle,
 * unmapped, and releases it later (here at teardown's destroy). */
Test(vmm_stitching, a_handle_whose_release_is_refused_stays_with_its_source)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_MAP, 1, GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_SET_ACCESS, 1,
                              GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_RELEASE, 1,
                              GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P, sources,
                                                          2, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect_eq(fixture_handle_pages_at(0), 1, "still held by its source");
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    expect_fixture_sound();
    /* A later map over the page releases it first. */
    map_fixture_pages(0, 1);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
    expect_fixture_sound();
}

/* The grant fails, then the rollback's unmap of a moved handle at the
 * target is refused: the target keeps it (its mapping left in place) to
 * release with the next map over it; the other moved handle goes back. */
Test(vmm_stitching, a_moved_handle_whose_rollback_unmap_is_refused_stays_at_the_target)
{
    struct gpucache_expandable_source sources[2];
    map_two_sources(sources);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_SET_ACCESS, 1,
                              GPUCACHE_ERROR_OUT_OF_MEMORY);
    /* Unmaps so far: the two sources; the third is the rollback's at page 5. */
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_UNMAP, 3,
                              GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map_stitched(fixture_segment, 5 * P, 3 * P, sources,
                                                          2, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_not(sources[0].moved);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 0));
    cr_expect_eq(fixture_handle_pages_at(5), 1, "held at the target");
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 5));
    cr_expect(gpucache_expandable_segment_page_mapped(fixture_segment, 1), "returned");
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    expect_fixture_sound();
    map_fixture_pages(5, 1);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
    expect_fixture_sound();
}

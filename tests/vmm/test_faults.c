/* Fault injection: every VMM call of a multi-page map or unmap fails in
 * turn; the segment must end exactly as before (map) or consistent (unmap),
 * with no handle leaked. */
#include <criterion/criterion.h>
#include <string.h>

#include "segment_fixture.h"

TestSuite(vmm_faults, .init = fixture_setup, .fini = fixture_teardown);

struct segment_picture {
    unsigned char mapped[FIXTURE_PAGES];
    size_t mapped_pages;
    size_t unreleased_pages;
    size_t physical_in_use;
    size_t live_handles;
    size_t live_mappings;
};

static struct segment_picture picture(void)
{
    struct segment_picture taken;
    memset(&taken, 0, sizeof taken);
    for (size_t page = 0; page < FIXTURE_PAGES; page++)
        taken.mapped[page] = gpucache_expandable_segment_page_mapped(fixture_segment, page);
    taken.mapped_pages = fixture_segment->stats.mapped_pages;
    taken.unreleased_pages = fixture_segment->stats.unreleased_pages;
    taken.physical_in_use = fixture_driver.physical_in_use;
    taken.live_handles = vmm_test_driver_live_handles(&fixture_driver);
    taken.live_mappings = vmm_test_driver_live_mappings(&fixture_driver);
    return taken;
}

static void expect_same_picture(const struct segment_picture *before,
                                const struct segment_picture *after, const char *what)
{
    cr_expect_arr_eq(before->mapped, after->mapped, FIXTURE_PAGES, "%s: page states", what);
    cr_expect_eq(before->mapped_pages, after->mapped_pages, "%s: mapped pages", what);
    cr_expect_eq(before->unreleased_pages, after->unreleased_pages, "%s", what);
    cr_expect_eq(before->physical_in_use, after->physical_in_use, "%s: device memory", what);
    cr_expect_eq(before->live_handles, after->live_handles, "%s: handles", what);
    cr_expect_eq(before->live_mappings, after->live_mappings, "%s: mappings", what);
}

/* Pages 0 and 2 mapped, page 3 unmapped but its handle held (a release the
 * driver refused): a map of pages 0..5 then creates 1, 4, 5 and maps 3. */
static void prepare_mixed_segment(void)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, FIXTURE_PAGE, NULL), 0);
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 2 * FIXTURE_PAGE,
                                                 2 * FIXTURE_PAGE, NULL),
                 0);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_RELEASE, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, 3 * FIXTURE_PAGE,
                                                   FIXTURE_PAGE, NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(fixture_segment->stats.unreleased_pages, 1);
    cr_assert_not(gpucache_expandable_segment_page_mapped(fixture_segment, 3));
}

static void sweep_map_failures(enum vmm_test_operation operation, uint64_t calls_in_map)
{
    prepare_mixed_segment();
    for (uint64_t nth = 1; nth <= calls_in_map; nth++) {
        struct segment_picture before = picture();
        vmm_test_driver_fail_call(&fixture_driver, operation, nth,
                                    GPUCACHE_ERROR_OUT_OF_MEMORY);
        size_t mapped = 99;
        cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, MiB,
                                                     5 * FIXTURE_PAGE + MiB, &mapped),
                     GPUCACHE_ERROR_OUT_OF_MEMORY, "failure at call %llu",
                     (unsigned long long)nth);
        cr_expect_eq(mapped, 0);
        vmm_test_driver_disarm(&fixture_driver);
        struct segment_picture after = picture();
        expect_same_picture(&before, &after, "after a failed map");
        expect_fixture_sound();
    }
    cr_expect_eq(fixture_segment->stats.rolled_back_maps, calls_in_map);
    size_t mapped = 0;
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, MiB, 5 * FIXTURE_PAGE + MiB,
                                                 &mapped),
                 GPUCACHE_SUCCESS, "the same map works once the driver does");
    cr_expect_eq(mapped, 4 * FIXTURE_PAGE);
    cr_expect_eq(fixture_segment->stats.unreleased_pages, 0, "the held page was reused");
    expect_fixture_sound();
}

Test(vmm_faults, page_create_fails_at_each_page)
{
    sweep_map_failures(VMM_TEST_PAGE_CREATE, 3);
}

Test(vmm_faults, page_map_fails_at_each_page)
{
    sweep_map_failures(VMM_TEST_PAGE_MAP, 4);
}

Test(vmm_faults, set_access_fails_after_every_page_is_mapped)
{
    sweep_map_failures(VMM_TEST_SET_ACCESS, 1);
}

static void sweep_unmap_failures(enum vmm_test_operation operation, uint64_t calls_in_unmap)
{
    for (uint64_t nth = 1; nth <= calls_in_unmap; nth++) {
        cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, 4 * FIXTURE_PAGE, NULL),
                     0);
        vmm_test_driver_fail_call(&fixture_driver, operation, nth,
                                    GPUCACHE_ERROR_INVALID_VALUE);
        cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 4 * FIXTURE_PAGE,
                                                       NULL),
                     GPUCACHE_ERROR_INVALID_VALUE, "failure at call %llu",
                     (unsigned long long)nth);
        vmm_test_driver_disarm(&fixture_driver);
        expect_fixture_sound();
        /* The retry finishes the job, including handles left unreleased. */
        size_t released = 0;
        cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 4 * FIXTURE_PAGE,
                                                       &released),
                     GPUCACHE_SUCCESS);
        cr_expect_eq(released, (4 - (nth - 1)) * FIXTURE_PAGE,
                     "the retry releases what the failed call did not");
        cr_expect_eq(fixture_driver.physical_in_use, 0);
        cr_expect_eq(fixture_segment->stats.unreleased_pages, 0);
        expect_fixture_sound();
    }
}

Test(vmm_faults, page_unmap_fails_at_each_page)
{
    sweep_unmap_failures(VMM_TEST_PAGE_UNMAP, 4);
}

Test(vmm_faults, page_release_fails_at_each_page)
{
    sweep_unmap_failures(VMM_TEST_PAGE_RELEASE, 4);
}

Test(vmm_faults, destroy_releases_held_handles)
{
    prepare_mixed_segment();
    /* fixture_teardown checks that the held handle of page 3 is released. */
}

Test(vmm_faults, reserve_failure_leaves_nothing)
{
    struct gpucache_expandable_segment *segment = (void *)1;
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_ADDRESS_RESERVE, 1,
                                GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 0, FIXTURE_PAGE,
                                                    FIXTURE_PAGE, NULL, 0, &segment),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_null(segment);
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 1, "the fixture's only");
    cr_expect_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 0, FIXTURE_PAGE,
                                                    FIXTURE_PAGE + MiB, NULL, 0, &segment),
                 GPUCACHE_ERROR_INVALID_VALUE, "reservation not whole pages");
}

/* Fault injection: every VMM call of a map over several runs, and of an
 * unmap of several handles, fails in turn; the segment must end as before
 * (map) or consistent (unmap), with no handle leaked, and a handle whose
 * release the driver refused must be released later. */
#include <criterion/criterion.h>
#include <string.h>

#include "segment_fixture.h"

TestSuite(vmm_faults, .init = fixture_setup, .fini = fixture_teardown);

#define P FIXTURE_PAGE

struct segment_picture {
    unsigned char mapped[FIXTURE_PAGES];
    size_t mapped_pages;
    size_t handles;
    size_t unreleased_handles;
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
    taken.handles = fixture_segment->stats.handles;
    taken.unreleased_handles = fixture_segment->stats.unreleased_handles;
    taken.physical_in_use = fixture_driver.physical_in_use;
    taken.live_handles = vmm_test_driver_live_handles(&fixture_driver);
    taken.live_mappings = vmm_test_driver_live_mappings(&fixture_driver);
    return taken;
}

static void expect_same_picture(const struct segment_picture *expected,
                                const struct segment_picture *after, const char *what,
                                uint64_t nth)
{
    cr_expect_arr_eq(expected->mapped, after->mapped, FIXTURE_PAGES, "%s %llu: page states",
                     what, (unsigned long long)nth);
    cr_expect_eq(expected->mapped_pages, after->mapped_pages, "%s %llu: mapped pages", what,
                 (unsigned long long)nth);
    cr_expect_eq(expected->handles, after->handles, "%s %llu: handles", what,
                 (unsigned long long)nth);
    cr_expect_eq(expected->unreleased_handles, after->unreleased_handles,
                 "%s %llu: unreleased handles", what, (unsigned long long)nth);
    cr_expect_eq(expected->physical_in_use, after->physical_in_use, "%s %llu: device memory",
                 what, (unsigned long long)nth);
    cr_expect_eq(expected->live_handles, after->live_handles, "%s %llu: driver handles", what,
                 (unsigned long long)nth);
    cr_expect_eq(expected->live_mappings, after->live_mappings, "%s %llu: mappings", what,
                 (unsigned long long)nth);
}

/* Unmaps the handle starting at `first_page` with its release refused, so
 * that it stays held but unmapped. */
static void leave_handle_unreleased(size_t first_page)
{
    size_t pages = fixture_handle_pages_at(first_page);
    cr_assert_gt(pages, 0, "no handle at page %zu", first_page);
    size_t unreleased_before = fixture_segment->stats.unreleased_handles;
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_RELEASE, 1,
                              GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_eq(gpucache_expandable_segment_unmap(fixture_segment, first_page * P, pages * P,
                                                   NULL),
                 GPUCACHE_ERROR_INVALID_VALUE);
    vmm_test_driver_disarm(&fixture_driver);
    cr_assert_eq(fixture_segment->stats.unreleased_handles, unreleased_before + 1);
    cr_assert_not(gpucache_expandable_segment_page_mapped(fixture_segment, first_page));
    cr_assert_eq(fixture_handle_pages_at(first_page), pages, "still held");
}

/* Pages 0 and 2 mapped, page 3 unmapped but its handle held. A map of
 * pages 0..6 then releases the held handle and creates the runs [1] and
 * [3, 7): 1 release, 2 creates, 2 maps, 1 grant. */
#define MIXED_MAP_OFFSET MiB
#define MIXED_MAP_LENGTH (6 * P)

static void prepare_mixed_segment(void)
{
    if (!gpucache_expandable_segment_page_mapped(fixture_segment, 0))
        map_fixture_pages(0, 1);
    if (!gpucache_expandable_segment_page_mapped(fixture_segment, 2))
        map_fixture_pages(2, 1);
    if (fixture_handle_pages_at(3) == 0) {
        map_fixture_pages(3, 1);
        leave_handle_unreleased(3);
    }
    expect_fixture_sound();
}

static void sweep_map_failures(enum vmm_test_operation operation, uint64_t calls_in_map)
{
    for (uint64_t nth = 1; nth <= calls_in_map; nth++) {
        prepare_mixed_segment();
        struct segment_picture expected = picture();
        /* The held handle goes first; only a failure of that very release
         * keeps it. */
        if (operation != VMM_TEST_PAGE_RELEASE) {
            expected.handles--;
            expected.unreleased_handles--;
            expected.live_handles--;
            expected.physical_in_use -= P;
        }
        uint64_t injected = fixture_driver.injected_failures;
        uint64_t creates = fixture_driver.calls[VMM_TEST_PAGE_CREATE];
        vmm_test_driver_fail_call(&fixture_driver, operation, nth, GPUCACHE_ERROR_OUT_OF_MEMORY);
        struct gpucache_expandable_change mapped = {99, 99, 99, 99, 99, 99};
        cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, MIXED_MAP_OFFSET,
                                                     MIXED_MAP_LENGTH, &mapped),
                     GPUCACHE_ERROR_OUT_OF_MEMORY, "failure at call %llu",
                     (unsigned long long)nth);
        vmm_test_driver_disarm(&fixture_driver);
        cr_expect_eq(fixture_driver.injected_failures, injected + 1,
                     "call %llu of the operation was reached", (unsigned long long)nth);
        cr_expect_eq(mapped.mapped_bytes, 0);
        cr_expect_eq(mapped.handles_created, 0, "a failed map keeps no handle it created");
        cr_expect_eq(mapped.handles_released, operation != VMM_TEST_PAGE_RELEASE,
                     "the held handle's release is reported");
        if (operation == VMM_TEST_PAGE_RELEASE)
            cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE], creates,
                         "nothing is created while the held handle stays");
        struct segment_picture after = picture();
        expect_same_picture(&expected, &after, "after a failed map at call", nth);
        expect_fixture_sound();
    }
    cr_expect_eq(fixture_segment->stats.rolled_back_maps,
                 operation == VMM_TEST_PAGE_RELEASE ? 0 : calls_in_map);
    prepare_mixed_segment();
    uint64_t calls_before = fixture_driver.calls[operation];
    struct gpucache_expandable_change mapped = {0, 0, 0, 0, 0, 0};
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, MIXED_MAP_OFFSET,
                                                 MIXED_MAP_LENGTH, &mapped),
                 GPUCACHE_SUCCESS, "the same map works once the driver does");
    cr_expect_eq(fixture_driver.calls[operation] - calls_before, calls_in_map,
                 "the sweep failed every call of the operation the map makes");
    cr_expect_eq(mapped.mapped_bytes, 5 * P, "pages 1 and 3-6");
    cr_expect_eq(mapped.handles_created, 2);
    cr_expect_eq(mapped.handles_released, 1, "the held handle went first");
    cr_expect_eq(fixture_handle_pages_at(1), 1);
    cr_expect_eq(fixture_handle_pages_at(3), 4, "the released page joined the new run");
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0, "the held handle was released");
    cr_expect_eq(fixture_driver.physical_in_use, 7 * P);
    expect_fixture_sound();
}

Test(vmm_faults, release_of_the_held_handle_fails_before_any_create)
{
    sweep_map_failures(VMM_TEST_PAGE_RELEASE, 1);
}

Test(vmm_faults, page_create_fails_at_each_run)
{
    sweep_map_failures(VMM_TEST_PAGE_CREATE, 2);
}

Test(vmm_faults, page_map_fails_at_each_run)
{
    sweep_map_failures(VMM_TEST_PAGE_MAP, 2);
}

Test(vmm_faults, set_access_fails_after_every_run_is_mapped)
{
    sweep_map_failures(VMM_TEST_SET_ACCESS, 1);
}

/* Handles of 1, 2 and 1 pages over [0, 4P): an unmap of all of them makes
 * unmap, release, unmap, release, unmap, release. */
static const size_t handle_first_pages[] = {0, 1, 3};
static const size_t handle_lengths[] = {1, 2, 1};
#define HANDLE_COUNT 3

static size_t pages_of_handles(size_t from, size_t to)
{
    size_t pages = 0;
    for (size_t i = from; i < to; i++)
        pages += handle_lengths[i];
    return pages;
}

static void sweep_unmap_failures(enum vmm_test_operation operation)
{
    for (uint64_t nth = 1; nth <= HANDLE_COUNT; nth++) {
        for (size_t i = 0; i < HANDLE_COUNT; i++)
            map_fixture_pages(handle_first_pages[i], handle_lengths[i]);
        cr_assert_eq(fixture_segment->stats.handles, HANDLE_COUNT);
        vmm_test_driver_fail_call(&fixture_driver, operation, nth, GPUCACHE_ERROR_INVALID_VALUE);
        struct gpucache_expandable_change released = {99, 99, 99, 99, 99, 99};
        cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 4 * P, &released),
                     GPUCACHE_ERROR_INVALID_VALUE, "failure at call %llu",
                     (unsigned long long)nth);
        vmm_test_driver_disarm(&fixture_driver);
        size_t failed = (size_t)nth - 1;
        cr_expect_eq(released.released_bytes, pages_of_handles(0, failed) * P,
                     "failure at call %llu: the handles before it went back",
                     (unsigned long long)nth);
        cr_expect_eq(released.handles_released, failed);
        /* Address order: the handles before the failing one are gone, the
         * failing one is unmapped only if its release failed, the rest stay. */
        for (size_t i = 0; i < HANDLE_COUNT; i++) {
            size_t page = handle_first_pages[i];
            bool mapped = i > failed || (i == failed && operation == VMM_TEST_PAGE_UNMAP);
            bool held = i >= failed;
            cr_expect_eq(gpucache_expandable_segment_page_mapped(fixture_segment, page), mapped,
                         "failure at call %llu: handle %zu mapped", (unsigned long long)nth, i);
            cr_expect_eq(fixture_handle_pages_at(page) != 0, held,
                         "failure at call %llu: handle %zu held", (unsigned long long)nth, i);
        }
        cr_expect_eq(fixture_segment->stats.unreleased_handles,
                     operation == VMM_TEST_PAGE_RELEASE ? 1 : 0);
        expect_fixture_sound();
        /* The retry finishes the job, including a handle left unreleased. */
        uint64_t unmaps = fixture_driver.calls[VMM_TEST_PAGE_UNMAP];
        cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 4 * P, &released),
                     GPUCACHE_SUCCESS);
        cr_expect_eq(released.released_bytes, pages_of_handles(failed, HANDLE_COUNT) * P,
                     "the retry releases what the failed call did not");
        cr_expect_eq(released.handles_released, HANDLE_COUNT - failed);
        cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_UNMAP] - unmaps,
                     HANDLE_COUNT - failed - (operation == VMM_TEST_PAGE_RELEASE),
                     "an unmapped handle is not unmapped again");
        cr_expect_eq(fixture_driver.physical_in_use, 0);
        cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
        cr_expect_eq(fixture_segment->stats.handles, 0);
        expect_fixture_sound();
    }
}

Test(vmm_faults, page_unmap_fails_at_each_handle)
{
    sweep_unmap_failures(VMM_TEST_PAGE_UNMAP);
}

Test(vmm_faults, page_release_fails_at_each_handle)
{
    sweep_unmap_failures(VMM_TEST_PAGE_RELEASE);
}

/* A held handle of pages [2, 5) and a map of page 4 alone: the whole handle
 * goes back first, and the new handle covers only page 4. */
Test(vmm_faults, map_over_part_of_a_held_handle_releases_all_of_it)
{
    map_fixture_pages(2, 3);
    leave_handle_unreleased(2);
    uint64_t releases = fixture_driver.calls[VMM_TEST_PAGE_RELEASE];
    uint64_t creates = fixture_driver.calls[VMM_TEST_PAGE_CREATE];
    map_fixture_pages(4, 1);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_RELEASE] - releases, 1);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_CREATE] - creates, 1);
    cr_expect_eq(fixture_driver.physical_in_use, P, "the held handle's memory went back");
    cr_expect_eq(fixture_handle_pages_at(2), 0);
    cr_expect_eq(fixture_handle_pages_at(4), 1);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
    expect_fixture_sound();
}

/* A held handle outside the map range is left for later. */
Test(vmm_faults, map_elsewhere_leaves_a_held_handle_alone)
{
    map_fixture_pages(2, 1);
    leave_handle_unreleased(2);
    uint64_t releases = fixture_driver.calls[VMM_TEST_PAGE_RELEASE];
    map_fixture_pages(3, 2);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_PAGE_RELEASE], releases);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    expect_fixture_sound();
}

Test(vmm_faults, destroy_releases_held_handles)
{
    prepare_mixed_segment();
    map_fixture_pages(5, 2);
    leave_handle_unreleased(5);
    cr_assert_eq(fixture_segment->stats.unreleased_handles, 2);
    /* fixture_teardown checks that both held handles are released. */
}

Test(vmm_faults, destroy_refused_a_release_can_be_retried)
{
    prepare_mixed_segment();
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_RELEASE, 2,
                              GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_destroy(fixture_segment),
                 GPUCACHE_ERROR_INVALID_VALUE);
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 1, "still reserved");
    /* Page 0's handle went back; page 2's release was refused, so the
     * unmap stopped before page 3's handle, held from before. */
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 2);
    cr_expect_eq(fixture_segment->stats.handles, 2);
    expect_fixture_sound();
    /* fixture_teardown retries the destroy and checks nothing is left. */
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

/* With page 1 mapped, a map of pages 0-2 maps the runs [0] and [2], then
 * its grant fails; the rollback's call `nth` of `refused` is refused too. */
static void fail_rollback_of_two_runs(enum vmm_test_operation refused, uint64_t nth)
{
    map_fixture_pages(1, 1);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_SET_ACCESS, 1,
                              GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_fail_call(&fixture_driver, refused, nth, GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 3 * P, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_disarm(&fixture_driver);
}

/* The rollback's first unmap is refused: that handle stays known, its
 * mapping left in place for the segment to remove later. */
Test(vmm_faults, rollback_keeps_a_handle_whose_unmap_is_refused)
{
    fail_rollback_of_two_runs(VMM_TEST_PAGE_UNMAP, 1);
    cr_expect_not(gpucache_expandable_segment_page_mapped(fixture_segment, 0),
                  "the page counts as unmapped");
    cr_expect_eq(fixture_handle_pages_at(0), 1, "the handle is still known");
    cr_expect_eq(fixture_handle_pages_at(2), 0, "the other run was rolled back");
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    cr_expect_eq(vmm_test_driver_live_mappings(&fixture_driver), 2,
                 "page 1 and the mapping the driver kept");
    expect_fixture_sound();
    /* The next map over it removes the old mapping first, then maps anew. */
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 3 * P, NULL),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 0);
    cr_expect_eq(fixture_driver.physical_in_use, 3 * P);
    expect_fixture_sound();
}

Test(vmm_faults, rollback_keeps_a_handle_whose_release_is_refused)
{
    fail_rollback_of_two_runs(VMM_TEST_PAGE_RELEASE, 2);
    cr_expect_eq(fixture_handle_pages_at(0), 0, "the first run went back");
    cr_expect_eq(fixture_handle_pages_at(2), 1, "the second run's handle is still known");
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    expect_fixture_sound();
    /* Destroy (in the teardown) gives it back. */
}

/* A map whose page_map fails and whose handle the driver then refuses to
 * release keeps that handle rather than forget it. */
Test(vmm_faults, a_refused_release_after_a_failed_map_keeps_the_handle)
{
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_MAP, 1,
                              GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_PAGE_RELEASE, 1,
                              GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_map(fixture_segment, 0, 2 * P, NULL),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_eq(fixture_handle_pages_at(0), 2);
    cr_expect_eq(fixture_segment->stats.unreleased_handles, 1);
    cr_expect_eq(fixture_segment->stats.driver_maps, 0, "nothing was mapped");
    expect_fixture_sound();
    cr_expect_eq(gpucache_expandable_segment_unmap(fixture_segment, 0, 2 * P, NULL),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(fixture_segment->stats.handles, 0);
    cr_expect_eq(fixture_segment->stats.handles_released, 1);
    expect_fixture_sound();
}

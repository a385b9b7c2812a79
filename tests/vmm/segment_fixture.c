#include <criterion/criterion.h>

#include "segment_fixture.h"

struct vmm_test_driver fixture_driver;
struct gpucache_expandable_segment *fixture_segment;

void fixture_setup(void)
{
    vmm_test_driver_init(&fixture_driver, 1 * GiB, 2 * MiB);
    cr_assert_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 7, FIXTURE_PAGE,
                                                    FIXTURE_PAGES * FIXTURE_PAGE, NULL, 0,
                                                    &fixture_segment),
                 GPUCACHE_SUCCESS);
}

void fixture_teardown(void)
{
    vmm_test_driver_disarm(&fixture_driver);
    cr_expect_eq(gpucache_expandable_segment_destroy(fixture_segment), GPUCACHE_SUCCESS);
    cr_expect_eq(vmm_test_driver_live_handles(&fixture_driver), 0);
    cr_expect_eq(vmm_test_driver_live_mappings(&fixture_driver), 0);
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 0);
    cr_expect_eq(fixture_driver.physical_in_use, 0);
    cr_expect_eq(fixture_driver.misuse_count, 0, "driver misuse: %s",
                 fixture_driver.first_misuse);
    vmm_test_driver_fini(&fixture_driver);
}

void expect_segment_consistent(const struct gpucache_expandable_segment *segment,
                               const struct vmm_test_driver *driver)
{
    size_t mapped = 0;
    for (size_t page = 0; page < segment->page_count; page++) {
        uint64_t address = segment->base + page * segment->page_size;
        bool is_mapped = gpucache_expandable_segment_page_mapped(segment, page);
        cr_expect_eq(is_mapped, vmm_test_driver_mapped(driver, address),
                     "page %zu: segment and driver disagree", page);
        if (is_mapped)
            cr_expect(vmm_test_driver_accessible(driver, address, segment->device),
                      "page %zu mapped but not accessible", page);
        mapped += is_mapped;
    }
    cr_expect_eq(segment->stats.mapped_pages, mapped);
    cr_expect_eq(segment->stats.mapped_bytes, mapped * segment->page_size);
    cr_expect_eq(driver->misuse_count, 0, "driver misuse: %s", driver->first_misuse);
}

void expect_handles_accounted(struct gpucache_expandable_segment *const *segments, size_t count,
                              const struct vmm_test_driver *driver)
{
    size_t known = 0;
    for (size_t i = 0; i < count; i++)
        known += segments[i]->stats.mapped_pages + segments[i]->stats.unreleased_pages;
    cr_expect_eq(vmm_test_driver_live_handles(driver), known,
                 "a live handle no segment knows about leaked");
}

void expect_fixture_sound(void)
{
    expect_segment_consistent(fixture_segment, &fixture_driver);
    expect_handles_accounted(&fixture_segment, 1, &fixture_driver);
}

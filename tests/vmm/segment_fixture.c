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

void map_fixture_pages(size_t first_page, size_t page_count)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, first_page * FIXTURE_PAGE,
                                                 page_count * FIXTURE_PAGE, NULL),
                 GPUCACHE_SUCCESS, "mapping pages %zu..%zu", first_page,
                 first_page + page_count - 1);
}

static bool bit_of(const unsigned char *bits, size_t page)
{
    return (bits[page / 8] >> (page % 8) & 1) != 0;
}

/* One handle starting at `first`: its pages are held, begin no other
 * handle, are all mapped or all unmapped, and the driver agrees on its size
 * and (when mapped) on one mapping of exactly the handle. Returns its
 * length in pages. */
static size_t expect_handle_consistent(const struct gpucache_expandable_segment *segment,
                                       const struct vmm_test_driver *driver, size_t first,
                                       bool *mapped)
{
    cr_assert_lt(first, segment->tracked_pages, "handle at page %zu beyond the tables", first);
    size_t pages = segment->handle_pages[first];
    cr_assert(pages >= 1 && first + pages <= segment->page_count,
              "handle at page %zu has %zu pages", first, pages);
    *mapped = bit_of(segment->mapped, first);
    for (size_t page = first; page < first + pages; page++) {
        cr_expect(bit_of(segment->held, page), "page %zu of a handle not held", page);
        cr_expect(page == first || !bit_of(segment->handle_start, page),
                  "handle at page %zu overlaps the one at %zu", page, first);
        cr_expect_eq(bit_of(segment->mapped, page), *mapped,
                     "handle at page %zu is mapped only in part", first);
    }
    const struct vmm_test_handle *record = vmm_test_driver_handle(driver, segment->handles[first]);
    cr_assert_not_null(record, "handle at page %zu unknown to the driver", first);
    cr_expect(record->live, "handle at page %zu already released", first);
    cr_expect_eq(record->size, pages * segment->page_size, "handle at page %zu: size", first);
    uint64_t address = segment->base + first * segment->page_size;
    const struct vmm_test_mapping *mapping = vmm_test_driver_mapping_at(driver, address);
    bool stale = bit_of(segment->stale_mapping, first);
    cr_expect(!stale || !*mapped, "handle at page %zu both mapped and a stale mapping", first);
    if (*mapped || stale) {
        cr_assert_not_null(mapping, "handle at page %zu: no mapping", first);
        cr_expect_eq(mapping->address, address, "handle at page %zu: mapping start", first);
        cr_expect_eq(mapping->size, pages * segment->page_size,
                     "handle at page %zu: mapping size", first);
        cr_expect_eq(mapping->handle, segment->handles[first],
                     "handle at page %zu: another handle is mapped there", first);
    }
    return pages;
}

size_t fixture_handle_pages_at(size_t page)
{
    if (page >= fixture_segment->page_count || !bit_of(fixture_segment->handle_start, page))
        return 0;
    return fixture_segment->handle_pages[page];
}

/* Whether `page` lies in a handle whose mapping a failed rollback left:
 * mapped in the driver, unmapped for the segment. */
static bool in_stale_mapping(const struct gpucache_expandable_segment *segment, size_t page)
{
    if (page >= segment->tracked_pages || !bit_of(segment->held, page))
        return false;
    size_t first = page;
    while (!bit_of(segment->handle_start, first))
        first--;
    return bit_of(segment->stale_mapping, first);
}

void expect_segment_consistent(const struct gpucache_expandable_segment *segment,
                               const struct vmm_test_driver *driver)
{
    size_t mapped = 0;
    for (size_t page = 0; page < segment->page_count; page++) {
        uint64_t address = segment->base + page * segment->page_size;
        bool is_mapped = gpucache_expandable_segment_page_mapped(segment, page);
        bool driver_mapped = is_mapped || in_stale_mapping(segment, page);
        cr_expect_eq(driver_mapped, vmm_test_driver_mapped(driver, address),
                     "page %zu: segment and driver disagree", page);
        if (is_mapped)
            cr_expect(vmm_test_driver_accessible(driver, address, segment->device),
                      "page %zu mapped but not accessible", page);
        mapped += is_mapped;
    }
    cr_expect_eq(segment->stats.mapped_pages, mapped);
    cr_expect_eq(segment->stats.mapped_bytes, mapped * segment->page_size);

    /* Every held page belongs to exactly one handle starting at or before
     * it, so walking handle by handle must visit each held page once. */
    size_t handles = 0, unmapped_handles = 0;
    for (size_t page = 0; page < segment->page_count;) {
        if (bit_of(segment->handle_start, page)) {
            bool handle_mapped = false;
            page += expect_handle_consistent(segment, driver, page, &handle_mapped);
            handles++;
            unmapped_handles += !handle_mapped;
            continue;
        }
        cr_expect_not(bit_of(segment->held, page), "page %zu held by no handle", page);
        cr_expect_not(bit_of(segment->mapped, page), "page %zu mapped by no handle", page);
        page++;
    }
    cr_expect_eq(segment->stats.handles, handles, "handles counted");
    cr_expect_eq(segment->stats.unreleased_handles, unmapped_handles,
                 "held handles that are not mapped are the unreleased ones");
    cr_expect_eq(driver->misuse_count, 0, "driver misuse: %s", driver->first_misuse);
}

void expect_handles_accounted(struct gpucache_expandable_segment *const *segments, size_t count,
                              const struct vmm_test_driver *driver)
{
    size_t known = 0;
    for (size_t i = 0; i < count; i++)
        known += segments[i]->stats.handles;
    cr_expect_eq(vmm_test_driver_live_handles(driver), known,
                 "a live handle no segment knows about leaked");
}

void expect_fixture_sound(void)
{
    expect_segment_consistent(fixture_segment, &fixture_driver);
    expect_handles_accounted(&fixture_segment, 1, &fixture_driver);
}

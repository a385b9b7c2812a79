/* A segment on an accounting driver, shared by the page-manager suites. */
#ifndef SEGMENT_FIXTURE_H
#define SEGMENT_FIXTURE_H

#include "vmm_test_driver.h"
#include "gpucache_expandable_segment.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* 20 MiB pages, 10 of them, on a 1 GiB device with 2 MiB granularity.
 * Real segments use 2 MiB pages, but the page manager takes any multiple of
 * the granularity, and pages ten times the granularity let tests place
 * ranges that start or end inside a page. */
#define FIXTURE_PAGE (20 * MiB)
#define FIXTURE_PAGES 10

extern struct vmm_test_driver fixture_driver;
extern struct gpucache_expandable_segment *fixture_segment;

void fixture_setup(void);
/* Destroys the segment and checks nothing leaked and nothing was misused. */
void fixture_teardown(void);

/* Maps pages [first_page, first_page + page_count) of the fixture's
 * segment, which must succeed. */
void map_fixture_pages(size_t first_page, size_t page_count);

/* Length in pages of the fixture's handle starting at `page`; 0 when no
 * handle starts there. */
size_t fixture_handle_pages_at(size_t page);

/* Checks that the segment's bitmaps, handle tables, stats and the driver's
 * records agree: every handle is live, as large as its pages, mapped whole
 * by one mapping of its own or not at all. */
void expect_segment_consistent(const struct gpucache_expandable_segment *segment,
                               const struct vmm_test_driver *driver);

/* Checks that every live handle of the driver belongs to one of `segments`. */
void expect_handles_accounted(struct gpucache_expandable_segment *const *segments, size_t count,
                              const struct vmm_test_driver *driver);

/* Both checks above for the fixture's segment. */
void expect_fixture_sound(void);

#endif

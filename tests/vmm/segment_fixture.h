/* A segment on an accounting driver, shared by the page-manager suites. */
#ifndef SEGMENT_FIXTURE_H
#define SEGMENT_FIXTURE_H

#include "vmm_test_driver.h"
#include "gpucache_expandable_segment.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* 20 MiB pages, 10 of them, on a 1 GiB device with 2 MiB granularity. */
#define FIXTURE_PAGE (20 * MiB)
#define FIXTURE_PAGES 10

extern struct vmm_test_driver fixture_driver;
extern struct gpucache_expandable_segment *fixture_segment;

void fixture_setup(void);
/* Destroys the segment and checks nothing leaked and nothing was misused. */
void fixture_teardown(void);

/* Checks that the segment's bitmaps, stats and the driver's records agree. */
void expect_segment_consistent(const struct gpucache_expandable_segment *segment,
                               const struct vmm_test_driver *driver);

/* Checks that every live handle of the driver belongs to one of `segments`. */
void expect_handles_accounted(struct gpucache_expandable_segment *const *segments, size_t count,
                              const struct vmm_test_driver *driver);

/* Both checks above for the fixture's segment. */
void expect_fixture_sound(void);

#endif

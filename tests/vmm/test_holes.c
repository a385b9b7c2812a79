/* Choosing where a request goes among a segment's free ranges. */
#include <criterion/criterion.h>

#include "segment_fixture.h"

TestSuite(vmm_holes, .init = fixture_setup, .fini = fixture_teardown);

#define P FIXTURE_PAGE

Test(vmm_holes, lowest_hole_that_fits)
{
    struct gpucache_free_range free_ranges[] = {
        {0, 10 * MiB}, {30 * MiB, 20 * MiB}, {60 * MiB, 140 * MiB}};
    size_t offset = 1;
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 3, 10 * MiB,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 0);
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 3, 16 * MiB,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 30 * MiB);
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 3, 21 * MiB,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 60 * MiB, "the end");
    cr_expect_not(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 3,
                                                        141 * MiB, GPUCACHE_HOLE_LOWEST,
                                                        &offset));
    cr_expect_not(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 0, 1,
                                                        GPUCACHE_HOLE_LOWEST, &offset));
}

Test(vmm_holes, touching_ranges_form_one_hole)
{
    /* A free mapped tail then the unmapped rest, as the allocator lists them. */
    struct gpucache_free_range free_ranges[] = {{16 * MiB, 4 * MiB}, {20 * MiB, 180 * MiB}};
    size_t offset = 0;
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 2, 16 * MiB,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 16 * MiB);
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 2, 184 * MiB,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 16 * MiB);
}

Test(vmm_holes, fewest_new_pages_prefers_mapped_space)
{
    /* Pages 4 and 5 mapped; a low hole over unmapped pages 0-1 and a higher
     * one over pages 3-6. */
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 4 * P, 2 * P, NULL), 0);
    struct gpucache_free_range free_ranges[] = {{0, 2 * P}, {3 * P, 4 * P}};
    size_t offset = 0;
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 2, 2 * P,
                                                    GPUCACHE_HOLE_LOWEST, &offset));
    cr_expect_eq(offset, 0, "PyTorch's choice maps two new pages");
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 2, 2 * P,
                                                    GPUCACHE_HOLE_FEWEST_NEW_PAGES, &offset));
    cr_expect_eq(gpucache_expandable_segment_unmapped_pages(fixture_segment, offset, 2 * P), 0);
    cr_expect_eq(offset, 4 * P, "either end of [3P, 7P) would need one new page");
}

Test(vmm_holes, fewest_new_pages_considers_the_end_of_a_hole)
{
    /* Page 3 mapped; in the hole [0, 4P) a page fits at its end with no new
     * page, and 1.5 pages need one new page at 2P (page-aligned) or at the
     * end (2.5P): the lower one wins. */
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 3 * P, P, NULL), 0);
    struct gpucache_free_range free_ranges[] = {{0, 4 * P}};
    size_t offset = 0;
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 1, P,
                                                    GPUCACHE_HOLE_FEWEST_NEW_PAGES, &offset));
    cr_expect_eq(offset, 3 * P);
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 1, P + P / 2,
                                                    GPUCACHE_HOLE_FEWEST_NEW_PAGES, &offset));
    cr_expect_eq(offset, 2 * P);
    cr_expect_eq(gpucache_expandable_segment_unmapped_pages(fixture_segment, offset, P + P / 2),
                 1);
}

Test(vmm_holes, fewest_new_pages_ties_go_to_lowest)
{
    struct gpucache_free_range free_ranges[] = {{0, 2 * P}, {5 * P, 2 * P}};
    size_t offset = 9;
    cr_expect(gpucache_expandable_segment_find_hole(fixture_segment, free_ranges, 2, P,
                                                    GPUCACHE_HOLE_FEWEST_NEW_PAGES, &offset));
    cr_expect_eq(offset, 0);
}

/* Peer access and several segments on one device. */
#include <criterion/criterion.h>

#include "segment_fixture.h"

TestSuite(vmm_peers, .init = fixture_setup, .fini = fixture_teardown);

#define P FIXTURE_PAGE

Test(vmm_peers, peer_added_later_reaches_mapped_and_future_pages)
{
    /* Pages 0 and 1 are two handles but one mapped run. */
    map_fixture_pages(0, 1);
    map_fixture_pages(1, 1);
    map_fixture_pages(5, 1);
    uint64_t base = fixture_segment->base;
    cr_expect_not(vmm_test_driver_accessible(&fixture_driver, base, 3));
    uint64_t grants = fixture_driver.calls[VMM_TEST_SET_ACCESS];
    cr_assert_eq(gpucache_expandable_segment_add_peer(fixture_segment, 3), GPUCACHE_SUCCESS);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_SET_ACCESS] - grants, 2,
                 "one per mapped run, not per handle");
    cr_expect(vmm_test_driver_accessible(&fixture_driver, base, 3));
    cr_expect(vmm_test_driver_accessible(&fixture_driver, base + P, 3));
    cr_expect(vmm_test_driver_accessible(&fixture_driver, base + 5 * P, 3));
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 8 * P, P, NULL), 0);
    cr_expect(vmm_test_driver_accessible(&fixture_driver, base + 8 * P, 3));
    cr_expect(vmm_test_driver_accessible(&fixture_driver, base + 8 * P, 0));
    cr_expect_not(vmm_test_driver_accessible(&fixture_driver, base + 8 * P, 2));
    grants = fixture_driver.calls[VMM_TEST_SET_ACCESS];
    cr_expect_eq(gpucache_expandable_segment_add_peer(fixture_segment, 3), GPUCACHE_SUCCESS);
    cr_expect_eq(gpucache_expandable_segment_add_peer(fixture_segment, 0), GPUCACHE_SUCCESS);
    cr_expect_eq(fixture_driver.calls[VMM_TEST_SET_ACCESS], grants,
                 "own device and a known peer change nothing");
    cr_expect_eq(fixture_segment->peer_count, 1);
}

Test(vmm_peers, failed_peer_grant_is_not_recorded)
{
    cr_assert_eq(gpucache_expandable_segment_map(fixture_segment, 0, P, NULL), 0);
    vmm_test_driver_fail_call(&fixture_driver, VMM_TEST_SET_ACCESS, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_segment_add_peer(fixture_segment, 2),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(fixture_segment->peer_count, 0);
    cr_expect_eq(gpucache_expandable_segment_add_peer(fixture_segment, 2), GPUCACHE_SUCCESS);
    cr_expect(vmm_test_driver_accessible(&fixture_driver, fixture_segment->base, 2));
}

Test(vmm_peers, peers_given_at_creation)
{
    int peers[] = {0, 1, 2};
    struct gpucache_expandable_segment *segment = NULL;
    cr_assert_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0, 0, P, 4 * P,
                                                    peers, 3, &segment),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(segment->peer_count, 2, "the own device is not a peer");
    cr_assert_eq(gpucache_expandable_segment_map(segment, 0, P, NULL), 0);
    cr_expect(vmm_test_driver_accessible(&fixture_driver, segment->base, 1));
    cr_expect(vmm_test_driver_accessible(&fixture_driver, segment->base, 2));
    cr_expect_eq(gpucache_expandable_segment_destroy(segment), GPUCACHE_SUCCESS);
}

Test(vmm_peers, segments_of_several_streams_are_independent)
{
    struct gpucache_expandable_segment *segments[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gpucache_expandable_segment_create(&fixture_driver.driver, 0,
                                                        (gpucache_stream)(100 + i), P, 5 * P,
                                                        NULL, 0, &segments[i]),
                     GPUCACHE_SUCCESS);
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 4);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(segments[i]->stream, (gpucache_stream)(100 + i));
        for (int j = 0; j < i; j++)
            cr_expect(segments[i]->base >= segments[j]->base + segments[j]->reserve_size ||
                          segments[j]->base >= segments[i]->base + segments[i]->reserve_size,
                      "reservations overlap");
        cr_assert_eq(gpucache_expandable_segment_map(segments[i], 0, (size_t)(i + 1) * P, NULL),
                     0);
    }
    cr_expect_eq(fixture_driver.physical_in_use, 6 * P);
    cr_assert_eq(gpucache_expandable_segment_unmap(segments[1], 0, 5 * P, NULL), 0);
    cr_expect_eq(segments[0]->stats.mapped_pages, 1);
    cr_expect_eq(segments[1]->stats.mapped_pages, 0);
    cr_expect_eq(segments[2]->stats.mapped_pages, 3);
    cr_expect_eq(fixture_driver.physical_in_use, 4 * P);
    struct gpucache_expandable_segment *all[4] = {fixture_segment, segments[0], segments[1],
                                                  segments[2]};
    expect_handles_accounted(all, 4, &fixture_driver);
    for (int i = 0; i < 3; i++) {
        expect_segment_consistent(segments[i], &fixture_driver);
        cr_expect_eq(gpucache_expandable_segment_destroy(segments[i]), GPUCACHE_SUCCESS);
    }
    cr_expect_eq(vmm_test_driver_live_reservations(&fixture_driver), 1);
}

/* Expandable segments through the allocator's public API, on the
 * accounting driver: the worked examples of growth (the second growth is
 * adjacent and free space merges, larger blocks reuse the pages of smaller
 * ones, growth lands at the end of the segment, a freed block grown again
 * keeps its pointer), unmapping, the OOM retry
 * chain, the reservation limit, max_split_size, inactive-split stats and
 * how much a growth maps.
 *
 * The device has 2 MiB granularity, so pages are 2 MiB; a large-pool growth
 * maps at least large_segment_size (20 MiB), the slack beyond the request
 * staying a free block, and each run of new pages is one physical handle
 * (one page_create). So the figures below count growths of 20 MiB or more
 * where PyTorch's would count 20 MiB pages, and come out the same.
 *
 * One file because the cases share the fixtures that build an allocator on
 * the accounting driver and read its pages back. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"
#include "gpucache_expandable_segment.h"

#define MiB ((size_t)1 << 20)

static struct accounting_driver *device;
static struct gpucache_config config;
static struct gpucache_allocator *allocator;

static void prepare(void)
{
    device = accounting_driver_create((uint64_t)1 << 30, 2 * MiB);
    cr_assert_not_null(device);
    gpucache_config_defaults(&config);
    config.expandable_segments = true;
    /* PyTorch's expandable segments, whatever the defaults: one class, one
     * handle per growth, no handle moved; the tests of size classes and of
     * stitching set their own. */
    config.expandable_segments_size_class = 0;
    config.expandable_segments_stitch = false;
    config.expandable_segments_handles = GPUCACHE_HANDLES_GROWTH;
}

/* After the test has adjusted `config`. */
static void start(void)
{
    allocator = gpucache_allocator_create(&config, accounting_driver_interface(device), 0);
    cr_assert_not_null(allocator);
}

static void expect_consistent(void)
{
    char why[256];
    cr_expect(gpucache_allocator_check(allocator, why, sizeof why), "%s", why);
}

static void finish(void)
{
    if (allocator != NULL) {
        expect_consistent();
        gpucache_allocator_destroy(allocator);
        allocator = NULL;
    }
    /* Physical handles count as used from creation to release. */
    cr_expect_eq(accounting_driver_used_bytes(device), 0, "device memory or a handle leaked");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE),
                 accounting_driver_calls(device, ACCOUNTING_ADDRESS_FREE), "reservation leaked");
    cr_expect_eq(accounting_driver_live_fences(device), 0);
    accounting_driver_destroy(device);
}

TestSuite(vmm_allocator, .init = prepare, .fini = finish);

static uint64_t allocate_on(size_t size, gpucache_stream stream)
{
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(allocator, size, stream, &address), GPUCACHE_SUCCESS,
                 "allocating %zu bytes", size);
    return address;
}

static uint64_t allocate(size_t size)
{
    return allocate_on(size, 0);
}

static void release(uint64_t address)
{
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_SUCCESS);
}

/* A stream-ordered free on the block's own stream: reusable there at once. */
static void release_now(uint64_t address)
{
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, 0),
                 GPUCACHE_SUCCESS);
}

static struct gpucache_stats stats(void)
{
    struct gpucache_stats taken;
    gpucache_allocator_get_stats(allocator, &taken);
    return taken;
}

static int64_t reserved(void)
{
    return stats().reserved_bytes[GPUCACHE_STAT_ALL].current;
}

/* Physical handles created: one per run of pages a growth maps. */
static unsigned long handles_created(void)
{
    return accounting_driver_calls(device, ACCOUNTING_PAGE_CREATE);
}

Test(vmm_allocator, example2_second_growth_is_adjacent_and_free_space_merges)
{
    start();
    uint64_t first = allocate(16 * MiB);
    cr_expect_eq(reserved(), 20 * MiB, "one 20 MiB growth: [16 used | 4 free]");
    uint64_t second = allocate(16 * MiB);
    cr_expect_eq(second, first + 16 * MiB, "the second growth is adjacent to the first");
    cr_expect_eq(reserved(), 40 * MiB);
    cr_expect_eq(handles_created(), 2);
    /* The free 4 + 20 merged: [16 | 16 | 8 free] serves 8 MiB in place. */
    uint64_t third = allocate(8 * MiB);
    cr_expect_eq(third, second + 16 * MiB);
    cr_expect_eq(reserved(), 40 * MiB);
    cr_expect_eq(handles_created(), 2);
    expect_consistent();
}

Test(vmm_allocator, example3_larger_blocks_reuse_the_pages_of_smaller_ones)
{
    start();
    uint64_t blocks[8];
    for (int i = 0; i < 8; i++)
        blocks[i] = allocate(16 * MiB);
    cr_expect_eq(reserved(), 140 * MiB, "128 MiB in 7 growths of 20 MiB");
    unsigned long created = handles_created();
    for (int i = 0; i < 8; i++)
        release(blocks[i]);
    for (int i = 0; i < 4; i++)
        blocks[i] = allocate(32 * MiB);
    cr_expect_eq(handles_created(), created, "no new physical memory");
    cr_expect_eq(reserved(), 140 * MiB);
    expect_consistent();
}

Test(vmm_allocator, example4_growth_lands_at_the_end_of_the_segment)
{
    start();
    uint64_t blocks[4];
    for (int i = 0; i < 4; i++)
        blocks[i] = allocate(16 * MiB);
    cr_expect_eq(reserved(), 80 * MiB);
    release(blocks[0]);
    release(blocks[2]);
    uint64_t grown = allocate(32 * MiB);
    cr_expect_eq(grown, blocks[3] + 16 * MiB, "after the last block, over the free tail");
    cr_expect_eq(reserved(), 100 * MiB, "one new growth of 20 MiB at the end");
    cr_expect_eq(handles_created(), 5);
    expect_consistent();
}

Test(vmm_allocator, example5_growing_a_freed_block_keeps_its_pointer)
{
    start();
    uint64_t first = allocate(40 * MiB);
    release(first);
    uint64_t second = allocate(60 * MiB);
    cr_expect_eq(second, first, "same pointer");
    cr_expect_eq(reserved(), 60 * MiB);
    expect_consistent();
}

Test(vmm_allocator, empty_cache_returns_pages_and_the_reservation)
{
    start();
    uint64_t blocks[8];
    for (int i = 0; i < 8; i++)
        blocks[i] = allocate(16 * MiB);
    cr_expect_eq(accounting_driver_used_bytes(device), 140 * MiB);
    for (int i = 0; i < 8; i++)
        release(blocks[i]);
    /* The program synchronizes, as before torch.cuda.empty_cache(). */
    gpucache_allocator_synchronized(allocator, true, 0);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 0);
    cr_expect_eq(accounting_driver_used_bytes(device), 0, "the device got its memory back");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_RELEASE), 7);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_FREE), 1,
                 "a segment with nothing mapped gives its address range back");
    expect_consistent();
    allocate(16 * MiB);
    cr_expect_eq(reserved(), 20 * MiB, "a fresh segment afterwards");
}

/* Each 20 MiB block is one growth, so one handle; a handle goes back only
 * when a free block holds all of it. */
Test(vmm_allocator, only_wholly_free_handles_are_unmapped)
{
    start();
    uint64_t blocks[5];
    for (int i = 0; i < 5; i++)
        blocks[i] = allocate(20 * MiB);
    release_now(blocks[1]);
    release_now(blocks[2]);
    uint64_t partial = allocate(30 * MiB); /* handle 1 and half of handle 2 */
    cr_expect_eq(partial, blocks[1]);
    release_now(blocks[3]); /* [50, 60) of handle 2 free, handle 3 free */
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 80 * MiB, "only handle 3 was wholly free");
    cr_expect_eq(accounting_driver_used_bytes(device), 80 * MiB);
    expect_consistent();
    /* The hole is mapped again when a request needs it. */
    uint64_t again = allocate(25 * MiB);
    cr_expect_eq(again, blocks[1] + 30 * MiB,
                 "the lowest run: the free half of handle 2 and the hole");
    cr_expect_eq(reserved(), 100 * MiB);
    expect_consistent();
}

Test(vmm_allocator, oom_retry_unmaps_free_pages_then_succeeds)
{
    accounting_driver_destroy(device);
    device = accounting_driver_create(100 * MiB, 2 * MiB);
    start();
    uint64_t blocks[5];
    for (int i = 0; i < 5; i++)
        blocks[i] = allocate(20 * MiB);
    release(blocks[1]);
    release(blocks[3]);
    /* No run of 40 MiB exists and the device is full: only unmapping the
     * two free handles makes room for a new segment. */
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(allocator, 40 * MiB, 0, &address), GPUCACHE_SUCCESS);
    struct gpucache_stats taken = stats();
    cr_expect_eq(taken.num_alloc_retries, 1);
    cr_expect_eq(taken.num_ooms, 0);
    cr_expect_eq(taken.reserved_bytes[GPUCACHE_STAT_ALL].current, 100 * MiB);
    cr_expect_eq(accounting_driver_used_bytes(device), 100 * MiB);
    expect_consistent();
}

/* [live 20][unmapped 20][free 20][unmapped...]: a 60 MiB request grows
 * from the hole over the free block, so its map backs two runs of pages,
 * [20, 40) and [60, 80), with a handle each. */
Test(vmm_allocator, failed_map_in_the_middle_leaves_nothing_behind)
{
    start();
    allocate(20 * MiB);
    uint64_t hole = allocate(20 * MiB);
    uint64_t free_mapped = allocate(20 * MiB);
    release(hole);
    gpucache_allocator_synchronized(allocator, true, 0);
    gpucache_allocator_empty_cache(allocator);
    release_now(free_mapped);
    cr_assert_eq(reserved(), 40 * MiB);
    /* The second run's page_map fails. The retry chain then unmaps the free
     * block, so the retry maps [20, 80) as one run, and that fails too. */
    unsigned long maps = accounting_driver_calls(device, ACCOUNTING_PAGE_MAP);
    unsigned long creates = handles_created();
    accounting_driver_fail_call(device, ACCOUNTING_PAGE_MAP, 2, 2,
                                GPUCACHE_ERROR_OUT_OF_MEMORY);
    uint64_t address = 0;
    cr_expect_eq(gpucache_allocator_malloc(allocator, 60 * MiB, 0, &address),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_MAP) - maps, 3);
    cr_expect_eq(handles_created() - creates, 3, "two runs, then one");
    cr_expect_eq(stats().num_ooms, 1);
    cr_expect_eq(reserved(), 20 * MiB, "the free block went back in the retry chain");
    cr_expect_eq(accounting_driver_used_bytes(device), 20 * MiB,
                 "no handle of the failed maps stays");
    expect_consistent();
    cr_expect_eq(gpucache_allocator_malloc(allocator, 60 * MiB, 0, &address), GPUCACHE_SUCCESS);
    cr_expect_eq(address, hole);
    cr_expect_eq(reserved(), 80 * MiB);
    expect_consistent();
}

Test(vmm_allocator, streams_grow_their_own_segments)
{
    start();
    uint64_t on_first = allocate_on(16 * MiB, 1);
    uint64_t on_second = allocate_on(16 * MiB, 2);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE), 2);
    cr_expect(on_second >= on_first + 20 * MiB || on_first >= on_second + 20 * MiB);
    uint64_t more_first = allocate_on(4 * MiB, 1);
    cr_expect_eq(more_first, on_first + 16 * MiB, "stream 1 grows in its own segment");
    cr_expect_eq(reserved(), 40 * MiB);
    expect_consistent();
}

Test(vmm_allocator, request_larger_than_the_reservation_names_the_key,
     .init = cr_redirect_stderr)
{
    config.expandable_segments_reserve =
        (struct gpucache_reserve){.kind = GPUCACHE_RESERVE_BYTES, .bytes = 100 * MiB};
    start();
    uint64_t address = 0;
    cr_expect_eq(gpucache_allocator_malloc(allocator, 200 * MiB, 0, &address),
                 GPUCACHE_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(stats().num_ooms, 1);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE), 0);
    fflush(stderr);
    char line[512] = "";
    FILE *captured = cr_get_redirected_stderr();
    cr_assert_not_null(fgets(line, sizeof line, captured));
    cr_expect(strstr(line, "expandable_segments_reserve") != NULL, "%s", line);
    cr_expect(strstr(line, "200.00 MiB") != NULL, "%s", line);
    /* The advice uses the syntax the documentation gives for the key. */
    cr_expect(strstr(line, "expandable_segments_reserve (a fraction of device memory in (0,1] "
                           "such as 0.5, or GiB such as 40G, at most 9/8 of device memory)") != NULL,
              "%s", line);
    cr_expect_eq(gpucache_allocator_malloc(allocator, 100 * MiB, 0, &address), GPUCACHE_SUCCESS,
                 "a request of the whole reservation fits");
    /* An absurd request reads in a unit that fits it. */
    char message[512];
    gpucache_expandable_too_large_message(message, sizeof message, 0, (size_t)3 << 50,
                                          (size_t)90 << 40);
    cr_expect(strstr(message, "a request of 3.00 PiB") != NULL, "%s", message);
    cr_expect(strstr(message, "reservation is 90.00 TiB") != NULL, "%s", message);
}

Test(vmm_allocator, max_split_size_neither_asserts_nor_grows)
{
    config.max_split_size = 40 * MiB;
    start();
    uint64_t big = allocate(100 * MiB);
    /* Keeps unmapped space away from the big block, so that only reusing
     * it (not growing over it) can serve the small requests. */
    uint64_t guard = allocate(20 * MiB);
    cr_expect_eq(guard, big + 100 * MiB);
    release(big);
    for (int round = 0; round < 20; round++) {
        uint64_t small[10];
        for (int i = 0; i < 10; i++)
            small[i] = allocate(10 * MiB);
        cr_expect_eq(small[0], big, "the oversize free block is split for small requests");
        for (int i = 0; i < 10; i++)
            release(small[i]);
        uint64_t again = allocate(100 * MiB);
        cr_expect_eq(again, big, "and merges back whole");
        release(again);
        expect_consistent();
    }
    cr_expect_eq(reserved(), 120 * MiB, "no growth");
    cr_expect_eq(stats().max_split_size, 40 * MiB);
}

Test(vmm_allocator, inactive_split_counts_free_bytes_between_live_blocks)
{
    start();
    uint64_t blocks[4];
    for (int i = 0; i < 4; i++)
        blocks[i] = allocate(16 * MiB);
    struct gpucache_stats taken = stats();
    cr_expect_eq(taken.inactive_split[GPUCACHE_STAT_ALL].current, 1, "the free tail");
    cr_expect_eq(taken.inactive_split_bytes[GPUCACHE_STAT_ALL].current, 16 * MiB);
    release_now(blocks[1]);
    taken = stats();
    cr_expect_eq(taken.inactive_split[GPUCACHE_STAT_ALL].current, 2);
    cr_expect_eq(taken.inactive_split_bytes[GPUCACHE_STAT_ALL].current, 32 * MiB);
    expect_consistent();
    for (int i = 0; i < 4; i++)
        if (i != 1)
            release_now(blocks[i]);
    taken = stats();
    cr_expect_eq(taken.inactive_split[GPUCACHE_STAT_ALL].current, 0,
                 "one free run between the segment start and unmapped space is not a split");
    cr_expect_eq(taken.inactive_split_bytes[GPUCACHE_STAT_ALL].current, 0);
    expect_consistent();
}

/* The accounting driver ignores peers: this wrapper records the last
 * grant's peers, and how many fence waits preceded the first unmap, and
 * forwards every call. */
static struct gpucache_driver recording_driver;
static const struct gpucache_driver *accounting_interface;
static int granted_peers[8];
static size_t granted_peer_count;
static unsigned long grants;
static unsigned long fence_waits_before_first_unmap = ULONG_MAX;

static gpucache_result record_page_unmap(void *context, int device_number, uint64_t address,
                                         size_t size)
{
    if (fence_waits_before_first_unmap == ULONG_MAX)
        fence_waits_before_first_unmap = accounting_driver_calls(device, ACCOUNTING_FENCE_WAIT);
    return accounting_interface->page_unmap(context, device_number, address, size);
}

static gpucache_result record_set_access(void *context, int device, uint64_t address,
                                         size_t size, const int *peers, size_t peer_count)
{
    grants++;
    granted_peer_count = peer_count < 8 ? peer_count : 8;
    for (size_t i = 0; i < granted_peer_count; i++)
        granted_peers[i] = peers[i];
    return accounting_interface->set_access(context, device, address, size, peers, peer_count);
}

static void start_recording(void)
{
    accounting_interface = accounting_driver_interface(device);
    recording_driver = *accounting_interface;
    recording_driver.set_access = record_set_access;
    recording_driver.page_unmap = record_page_unmap;
    allocator = gpucache_allocator_create(&config, &recording_driver, 0);
    cr_assert_not_null(allocator);
}

Test(vmm_allocator, peers_get_access_to_mapped_and_future_pages)
{
    start_recording();
    allocate_on(16 * MiB, 1);
    allocate_on(16 * MiB, 2);
    unsigned long before = grants;
    cr_assert_eq(gpucache_allocator_add_peer(allocator, 3), GPUCACHE_SUCCESS);
    cr_expect_eq(grants - before, 2, "one grant per segment's mapped run");
    cr_expect_eq(granted_peer_count, 1);
    cr_expect_eq(granted_peers[0], 3);
    before = grants;
    cr_expect_eq(gpucache_allocator_add_peer(allocator, 3), GPUCACHE_SUCCESS);
    cr_expect_eq(gpucache_allocator_add_peer(allocator, 0), GPUCACHE_SUCCESS);
    cr_expect_eq(grants, before, "a known peer and the own device change nothing");
    allocate_on(30 * MiB, 1); /* grows stream 1's segment */
    cr_expect_eq(grants - before, 1);
    cr_expect_eq(granted_peer_count, 1, "new pages are granted to the peer too");
    cr_expect_eq(granted_peers[0], 3);
    allocate_on(16 * MiB, 4); /* a segment created after the peer was added */
    cr_expect_eq(granted_peer_count, 1);
    cr_expect_eq(granted_peers[0], 3);
}

Test(vmm_allocator, a_refused_peer_grant_is_not_recorded)
{
    start_recording();
    allocate(16 * MiB);
    accounting_driver_fail_call(device, ACCOUNTING_SET_ACCESS, 1, 1, GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_allocator_add_peer(allocator, 2), GPUCACHE_ERROR_INVALID_VALUE);
    allocate(30 * MiB);
    cr_expect_eq(granted_peer_count, 0, "the peer was not recorded");
    cr_expect_eq(gpucache_allocator_add_peer(allocator, 2), GPUCACHE_SUCCESS);
    allocate(30 * MiB);
    cr_expect_eq(granted_peer_count, 1);
    cr_expect_eq(granted_peers[0], 2);
}

Test(vmm_allocator, expandable_memory_cannot_be_pinned_for_ipc)
{
    start();
    uint64_t address = allocate(16 * MiB);
    cr_expect_eq(gpucache_allocator_pin_segment(allocator, address), GPUCACHE_ERROR_INVALID_VALUE,
                 "no real driver allocation to export");
}

/* A dead context took its events and plain memory, but physical handles
 * and reservations belong to the process: abandoning gives them back (and
 * touches no fence), so a reset leaks nothing. */
Test(vmm_allocator, abandon_gives_back_handles_and_reservations)
{
    start();
    allocate_on(16 * MiB, 1);
    allocate_on(100 * MiB, 2);
    uint64_t fence_calls = accounting_driver_calls(device, ACCOUNTING_FENCE_STREAM) +
                           accounting_driver_calls(device, ACCOUNTING_FENCE_ALL_STREAMS);
    gpucache_allocator_abandon(allocator);
    allocator = NULL;
    cr_expect_eq(accounting_driver_used_bytes(device), 0, "every handle released");
    cr_expect_geq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_FREE), 2,
                  "both reservations freed");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_FENCE_STREAM) +
                     accounting_driver_calls(device, ACCOUNTING_FENCE_ALL_STREAMS),
                 fence_calls, "no fence for a dead context");
}

Test(vmm_allocator, pages_are_unmapped_only_after_their_stream_is_done)
{
    start_recording();
    accounting_driver_hold_fences(device, true);
    uint64_t address = allocate_on(40 * MiB, 1);
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, 1),
                 GPUCACHE_SUCCESS);
    unsigned long waits = accounting_driver_calls(device, ACCOUNTING_FENCE_WAIT);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(accounting_driver_used_bytes(device), 0);
    cr_expect_gt(fence_waits_before_first_unmap, waits,
                 "work of stream 1 may still touch the block: wait before unmapping");
}

Test(vmm_allocator, no_wait_when_the_stream_is_known_done)
{
    start();
    accounting_driver_hold_fences(device, true);
    uint64_t address = allocate_on(40 * MiB, 1);
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, 1),
                 GPUCACHE_SUCCESS);
    gpucache_allocator_synchronized(allocator, false, 1); /* cuStreamSynchronize(1) */
    unsigned long waits = accounting_driver_calls(device, ACCOUNTING_FENCE_WAIT);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(accounting_driver_used_bytes(device), 0);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_FENCE_WAIT), waits);
}

Test(vmm_allocator, a_new_segment_only_when_no_run_fits)
{
    config.expandable_segments_reserve =
        (struct gpucache_reserve){.kind = GPUCACHE_RESERVE_BYTES, .bytes = 100 * MiB};
    start();
    uint64_t blocks[3];
    for (int i = 0; i < 3; i++)
        blocks[i] = allocate(20 * MiB);
    release_now(blocks[1]);
    gpucache_allocator_empty_cache(allocator); /* a one-handle hole in the middle */
    cr_expect_eq(allocate(20 * MiB), blocks[1], "the hole fits: mapped again in place");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE), 1);
    allocate(40 * MiB); /* the unmapped tail of 40 MiB fits */
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE), 1);
    allocate(20 * MiB); /* nothing left in the 100 MiB reservation */
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_ADDRESS_RESERVE), 2);
    expect_consistent();
}

/* A 921 MiB cap, collection above 276 MiB. */
static void start_with_garbage_collection(void)
{
    config.per_process_memory_fraction = 0.9;
    config.garbage_collection_threshold = 0.3;
    start();
}

Test(vmm_allocator, garbage_collection_unmaps_idle_free_tails)
{
    start_with_garbage_collection();
    uint64_t live = allocate_on(20 * MiB, 1);
    uint64_t big = allocate_on(300 * MiB, 1);
    release(big);
    gpucache_allocator_synchronized(allocator, true, 0);
    cr_expect_eq(reserved(), 320 * MiB);
    /* A miss (too large for the free 300 MiB) runs the collection: the idle
     * block ending stream 1's mapped space goes back; the live block stays. */
    allocate_on(320 * MiB, 2);
    cr_expect_eq(reserved(), 20 * MiB + 320 * MiB);
    cr_expect_eq(accounting_driver_used_bytes(device), 340 * MiB);
    cr_expect_eq(stats().num_alloc_retries, 0, "collected before growing, not by the retry");
    expect_consistent();
    cr_expect_eq(allocate_on(20 * MiB, 1), live + 20 * MiB, "stream 1 grows back in place");
}

/* Stream 1: [live 20][idle free 300][live 20]; then a miss on stream 2
 * runs the collection. Returns the free block's address. */
static uint64_t collect_with_a_hole_between_live_blocks(void)
{
    start_with_garbage_collection();
    allocate_on(20 * MiB, 1);
    uint64_t middle = allocate_on(300 * MiB, 1);
    allocate_on(20 * MiB, 1);
    release(middle);
    gpucache_allocator_synchronized(allocator, true, 0);
    allocate_on(320 * MiB, 2);
    return middle;
}

Test(vmm_allocator, garbage_collection_leaves_free_blocks_between_live_ones)
{
    collect_with_a_hole_between_live_blocks();
    cr_expect_eq(reserved(), 340 * MiB + 320 * MiB, "a hole between live blocks stays mapped");
    expect_consistent();
}

static void release_on(uint64_t address, gpucache_stream stream)
{
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, stream),
                 GPUCACHE_SUCCESS);
}

/* An expandable segment grows for its own stream only (as in PyTorch): even
 * a block its stream has finished with is not lent to another stream, whose
 * block, once freed and not yet cleared, would cut the runs the owner grows
 * into. Plain segments still lend cleared blocks (see the reuse suite). */
Test(vmm_allocator, other_streams_never_take_blocks_of_an_expandable_segment)
{
    start();
    accounting_driver_hold_fences(device, true);
    uint64_t first = allocate_on(20 * MiB, 1);
    uint64_t second = allocate_on(20 * MiB, 1);
    release_on(first, 1);
    gpucache_allocator_synchronized(allocator, false, 1);
    uint64_t other = allocate_on(20 * MiB, 2);
    cr_expect(other + 20 * MiB <= first || other >= second + 20 * MiB,
              "stream 2 got 0x%llx, inside stream 1's segment", (unsigned long long)other);
    cr_expect_eq(allocate_on(20 * MiB, 1), first, "the owner still reuses its cleared block");
    release_on(other, 2);
    gpucache_allocator_synchronized(allocator, false, 2);
    cr_expect_eq(allocate_on(20 * MiB, 2), other, "stream 2 reuses its own segment");
    expect_consistent();
}

/* PyTorch's should_split: with expandable segments every remainder of
 * 512 bytes or more is split off, in the large pool too, so an allocation
 * is exactly its rounded size (a plain segment keeps a large-pool remainder
 * of up to 1 MiB inside the allocation; see split_merge's suite). */
Test(vmm_allocator, large_pool_remainders_of_1_mib_are_split_off)
{
    start();
    uint64_t first = allocate(19 * MiB);
    cr_expect_eq(stats().allocated_bytes[GPUCACHE_STAT_ALL].current, 19 * MiB,
                 "an expandable block is the request, not the 20 MiB growth");
    uint64_t second = allocate(1 * MiB + 512 * 1024);
    cr_expect_eq(second, first + 19 * MiB, "the 1 MiB remainder is a free block of its own");
    cr_expect_eq(reserved(), 40 * MiB);
    expect_consistent();
}

/* [A 20 live][B 40 freed and unmapped][C 10 live][10 free]: C's growth
 * mapped 20 MiB, so 10 MiB of it are a free tail. A 30 MiB request fits
 * the 40 MiB hole (15 new pages) or the tail (10 new pages). */
static uint64_t hole_before_a_mapped_free_tail(uint64_t *hole)
{
    uint64_t first = allocate(20 * MiB);
    *hole = allocate(40 * MiB);
    uint64_t last = allocate(10 * MiB);
    release(*hole);
    gpucache_allocator_synchronized(allocator, true, 0);
    gpucache_allocator_empty_cache(allocator);
    cr_assert_eq(reserved(), 40 * MiB, "A's and C's growths stay mapped");
    (void)first;
    return last + 10 * MiB;
}

Test(vmm_allocator, growth_fills_the_lowest_fitting_hole)
{
    start();
    uint64_t hole = 0;
    hole_before_a_mapped_free_tail(&hole);
    unsigned long created = handles_created();
    cr_expect_eq(allocate(30 * MiB), hole, "PyTorch: the lowest run that fits");
    cr_expect_eq(handles_created(), created + 1, "30 MiB of the hole in one handle");
    cr_expect_eq(reserved(), 70 * MiB, "at least a growth of 20 MiB, so no slack");
    expect_consistent();
}

/* A block freed stream-ordered may still be used by its stream; collection
 * does not wait, but asks for a fence, so the next miss can take it. */
Test(vmm_allocator, garbage_collection_fences_busy_blocks_for_the_next_miss)
{
    start_with_garbage_collection();
    allocate_on(20 * MiB, 1);
    uint64_t big = allocate_on(300 * MiB, 1);
    release_on(big, 1);
    uint64_t fences = stats().num_epochs_closed;
    allocate_on(320 * MiB, 2);
    cr_expect_eq(reserved(), 320 * MiB + 320 * MiB, "in use on stream 1: not collected yet");
    cr_expect_eq(stats().num_epochs_closed, fences + 1, "one fence on stream 1");
    allocate_on(320 * MiB, 2); /* too large for the free 300 MiB: a miss */
    cr_expect_eq(reserved(), 20 * MiB + 320 * MiB + 320 * MiB,
                 "the fence completed, so the idle tail should have gone back; reserved %lld MiB",
                 (long long)(reserved() / MiB));
    cr_expect_eq(stats().num_alloc_retries, 0);
    expect_consistent();
}

/* Two 100 MiB blocks are two growths; the first is freed, then a 4 MiB
 * request arrives: PyTorch's best fit cuts the freed slot, so the next
 * 100 MiB request has to grow the segment. Returns the freed slot. */
static uint64_t small_request_after_a_freed_large_slot(uint64_t *small)
{
    start();
    uint64_t slot = allocate(100 * MiB);
    allocate(100 * MiB);
    release_now(slot);
    *small = allocate(4 * MiB);
    return slot;
}

Test(vmm_allocator, without_size_classes_a_small_request_cuts_a_large_slot)
{
    uint64_t small = 0;
    uint64_t slot = small_request_after_a_freed_large_slot(&small);
    cr_expect_eq(small, slot, "PyTorch: the freed slot is the best fit");
    cr_expect_neq(allocate(100 * MiB), slot);
    cr_expect_eq(reserved(), 300 * MiB);
    expect_consistent();
}

Test(vmm_allocator, size_classes_keep_large_slots_for_large_requests)
{
    config.expandable_segments_size_class = 50 * MiB;
    uint64_t small = 0;
    uint64_t slot = small_request_after_a_freed_large_slot(&small);
    cr_expect_neq(small, slot, "the small request grows its own segment");
    cr_expect_eq(reserved(), 200 * MiB + 20 * MiB);
    cr_expect_eq(stats().num_device_alloc, 3, "two large growths and one small");
    cr_expect_eq(allocate(100 * MiB), slot, "the freed slot is whole for the next large request");
    cr_expect_eq(reserved(), 220 * MiB);
    /* Small requests share the small class's growth. */
    allocate(8 * MiB);
    cr_expect_eq(reserved(), 220 * MiB);
    expect_consistent();
}

/* When the small class cannot grow, a free block of the large class serves
 * rather than an unmapping or an OOM. */
Test(vmm_allocator, size_classes_fall_back_to_the_other_class_when_growth_fails)
{
    config.expandable_segments_size_class = 50 * MiB;
    start();
    uint64_t slot = allocate(500 * MiB);
    allocate(500 * MiB); /* 1000 of the device's 1024 MiB mapped */
    release_now(slot);
    cr_expect_eq(allocate(40 * MiB), slot, "no room for 40 MiB more: the free slot serves");
    cr_expect_eq(reserved(), 1000 * MiB);
    cr_expect_eq(accounting_driver_used_bytes(device), 1000 * MiB, "the failed growth left nothing");
    cr_expect_eq(stats().num_alloc_retries, 0);
    cr_expect_eq(stats().num_device_free, 0, "nothing was unmapped");
    expect_consistent();
}

/* A lookup never grows memory: with nothing free in the request's class,
 * the miss chain first waits for the synchronous free that holds a fitting
 * block of that class, and only then would it grow. */
Test(vmm_allocator, size_classes_grow_only_after_the_miss_chain_waits)
{
    config.expandable_segments_size_class = 50 * MiB;
    start();
    uint64_t small = allocate(4 * MiB);
    allocate(16 * MiB); /* the small class's 20 MiB growth is full */
    uint64_t slot = allocate(100 * MiB);
    allocate(100 * MiB);
    release_now(slot); /* free, but of the other class */
    release(small);    /* pending until its epoch's fence */
    unsigned long growths = stats().num_device_alloc;
    cr_expect_eq(allocate(4 * MiB), small, "the synchronous free serves after the wait");
    cr_expect_eq(stats().num_device_alloc, growths, "nothing was mapped for the request");
    expect_consistent();
}

/* PyTorch's best fit in expandable segments judges a free block followed by
 * unmapped space by what it could grow to, so a larger free block elsewhere
 * is taken and the growable tail is kept. */
Test(vmm_allocator, best_fit_keeps_the_growable_tail)
{
    start();
    allocate(10 * MiB);
    uint64_t hole = allocate(10 * MiB);
    allocate(12 * MiB); /* [0, 32) live but the hole; [32, 40) free tail */
    release_now(hole);
    cr_expect_eq(allocate(8 * MiB), hole, "the 10 MiB hole, not the 8 MiB growable tail");
    cr_expect_eq(allocate(8 * MiB), hole + 22 * MiB, "then the tail");
    expect_consistent();
}

Test(vmm_allocator, garbage_collection_never_synchronizes_to_fence_busy_blocks)
{
    config.reuse = GPUCACHE_REUSE_CONSERVATIVE;
    start_with_garbage_collection();
    allocate_on(20 * MiB, 1);
    release_on(allocate_on(300 * MiB, 1), 1);
    allocate_on(320 * MiB, 2);
    cr_expect_eq(stats().num_device_synchronizations, 0,
                 "with reuse:conservative a fence would be a device synchronize");
    expect_consistent();
}

/* How much a growth maps: at least large_segment_size_mb in one handle, only
 * what the request lacks when that minimum cannot be had, one handle per
 * unmapped run, and handles released only whole. */
TestSuite(vmm_growth, .init = prepare, .fini = finish);

Test(vmm_growth, a_small_request_maps_the_least_growth_in_one_handle)
{
    start();
    uint64_t first = allocate(2 * MiB);
    cr_expect_eq(reserved(), 20 * MiB, "large_segment_size_mb is the least growth");
    cr_expect_eq(handles_created(), 1);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_MAP), 1);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_SET_ACCESS), 1);
    cr_expect_eq(stats().num_device_alloc, 1);
    /* The slack serves the next requests without the driver. */
    for (int i = 1; i < 10; i++)
        cr_expect_eq(allocate(2 * MiB), first + (uint64_t)i * 2 * MiB);
    cr_expect_eq(handles_created(), 1);
}

Test(vmm_growth, a_larger_request_maps_what_it_lacks_rounded_to_pages)
{
    start();
    allocate(22 * MiB);
    cr_expect_eq(reserved(), 22 * MiB, "2 MiB pages: not two 20 MiB pages");
    allocate(15 * MiB); /* 0 free: lacks 15, below the least growth of 20 */
    cr_expect_eq(reserved(), 42 * MiB);
    allocate(30 * MiB); /* 5 free: lacks 25, rounded to 26 */
    cr_expect_eq(reserved(), 68 * MiB);
    cr_expect_eq(handles_created(), 3);
    cr_expect_eq(stats().num_device_alloc, 3);
}

Test(vmm_growth, the_least_growth_follows_large_segment_size)
{
    config.large_segment_size = 32 * MiB;
    start();
    allocate(2 * MiB);
    cr_expect_eq(reserved(), 32 * MiB);
}

Test(vmm_growth, the_small_pool_grows_by_one_page)
{
    start();
    allocate(512 * 1024);
    cr_expect_eq(stats().reserved_bytes[GPUCACHE_STAT_SMALL_POOL].current, 2 * MiB);
}

Test(vmm_growth, a_short_device_gets_only_what_the_request_lacks)
{
    /* Replaces the suite's device: 12 MiB cannot hold the 20 MiB growth. */
    accounting_driver_destroy(device);
    device = accounting_driver_create(12 * MiB, 2 * MiB);
    start();
    uint64_t first = allocate(4 * MiB);
    cr_expect_eq(reserved(), 4 * MiB, "the least growth is an economy, never an OOM");
    allocate(6 * MiB);
    cr_expect_eq(reserved(), 10 * MiB);
    release_now(first);
}

Test(vmm_growth, the_slack_stays_inside_the_memory_fraction)
{
    /* 1 GiB device: the fraction allows 36 MiB. */
    config.per_process_memory_fraction = 36.0 / 1024.0;
    start();
    allocate(16 * MiB); /* 20 mapped, 4 free */
    allocate(12 * MiB); /* lacks 8; the least growth would reach 40 */
    cr_expect_eq(reserved(), 36 * MiB, "slack cut to the 8 MiB the fraction leaves");
    cr_expect_eq(handles_created(), 2);
}

Test(vmm_growth, a_handle_goes_back_only_when_wholly_free)
{
    start();
    uint64_t first = allocate(2 * MiB);
    uint64_t second = allocate(2 * MiB); /* same 20 MiB handle */
    release_now(first);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 20 * MiB, "the handle still holds a live block");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_UNMAP), 0);
    release_now(second);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 0);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_UNMAP), 1, "one unmap per handle");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_RELEASE), 1);
    cr_expect_eq(stats().num_device_free, 1);
}

Test(vmm_growth, a_growth_over_a_hole_and_the_tail_makes_a_handle_per_run)
{
    start();
    uint64_t first = allocate(22 * MiB);  /* handle [0, 22) */
    uint64_t second = allocate(22 * MiB); /* handle [22, 44) */
    uint64_t third = allocate(2 * MiB);   /* handle [44, 64) */
    release_now(first);
    release_now(second);
    gpucache_allocator_empty_cache(allocator); /* [0, 44) unmapped again */
    cr_expect_eq(reserved(), 20 * MiB);
    release_now(third); /* [44, 64) free but mapped */
    unsigned long before = handles_created();
    int64_t allocations_before = stats().num_device_alloc;
    /* The lowest run: [0, 44) unmapped, [44, 64) free, the tail from 64. */
    cr_expect_eq(allocate(70 * MiB), first);
    cr_expect_eq(handles_created() - before, 2, "one handle for [0, 44), one for [64, 70)");
    cr_expect_eq(stats().num_device_alloc - allocations_before, 2);
    cr_expect_eq(reserved(), 70 * MiB);
}

/* ---- stitching (expandable_segments_stitch) */

/* [a 40 | b 40] then a freed: a 60 MiB request grows past b and finds a's
 * handle idle. */
static void free_the_first_of_two(uint64_t *first, uint64_t *second)
{
    *first = allocate(40 * MiB);
    *second = allocate(40 * MiB);
    release(*first);
}

Test(vmm_allocator, stitching_moves_an_idle_handle_into_the_growth)
{
    config.expandable_segments_stitch = true;
    start();
    uint64_t first, second;
    free_the_first_of_two(&first, &second);
    unsigned long creates = handles_created();
    uint64_t grown = allocate(60 * MiB);
    cr_expect_eq(grown, second + 40 * MiB, "the growth lands after the live block");
    cr_expect_eq(handles_created() - creates, 1, "only the 20 MiB the moved handle lacks");
    cr_expect_eq(reserved(), 100 * MiB, "the freed 40 MiB serve the growth");
    cr_expect_eq(accounting_driver_used_bytes(device), 100 * MiB);
    cr_expect_eq(stats().num_device_alloc, 3);
    expect_consistent();
    /* The freed range is unmapped space now: a 40 MiB request maps it again. */
    uint64_t again = allocate(40 * MiB);
    cr_expect_eq(again, first);
    cr_expect_eq(reserved(), 140 * MiB);
    expect_consistent();
}

Test(vmm_allocator, without_stitching_the_growth_creates_what_it_maps)
{
    start();
    uint64_t first, second;
    free_the_first_of_two(&first, &second);
    unsigned long creates = handles_created();
    allocate(60 * MiB);
    cr_expect_eq(handles_created() - creates, 1);
    cr_expect_eq(reserved(), 140 * MiB, "the freed 40 MiB stay mapped where they were");
    expect_consistent();
}

/* A block freed stream-ordered on a stream whose work is not done may still
 * be touched by that work: its handle is not moved, and the growth asks for
 * one fence so that a later growth can move it. */
Test(vmm_allocator, stitching_moves_no_handle_the_device_may_still_use)
{
    config.expandable_segments_stitch = true;
    start();
    accounting_driver_hold_fences(device, true);
    uint64_t first = allocate_on(40 * MiB, 1);
    allocate_on(40 * MiB, 1);
    cr_assert_eq(gpucache_allocator_free(allocator, first, GPUCACHE_FREE_STREAM_ORDERED, 1),
                 GPUCACHE_SUCCESS);
    unsigned long fences = accounting_driver_calls(device, ACCOUNTING_FENCE_STREAM);
    allocate_on(60 * MiB, 1);
    cr_expect_eq(reserved(), 140 * MiB, "busy: created, not moved");
    cr_expect_gt(accounting_driver_calls(device, ACCOUNTING_FENCE_STREAM), fences,
                 "a fence was asked for");
    expect_consistent();
    accounting_driver_complete_stream(device, 1);
    allocate_on(40 * MiB, 1);
    cr_expect_eq(reserved(), 140 * MiB, "done now: the next growth moves it");
    expect_consistent();
}

/* Handles come only from the growth's own pool. */
Test(vmm_allocator, stitching_leaves_the_other_pool_alone)
{
    config.expandable_segments_stitch = true;
    config.expandable_segments_handles = GPUCACHE_HANDLES_PAGE;
    start();
    uint64_t small = allocate(512 * 1024);
    allocate(40 * MiB);
    release(small);
    allocate(60 * MiB);
    cr_expect_eq(stats().reserved_bytes[GPUCACHE_STAT_SMALL_POOL].current, 2 * MiB,
                 "the small pool's free page stays");
    expect_consistent();
}

/* Every VMM call of a stitched growth (the retry chain after a failure
 * included) fails in turn, `repeat` calls at a time: the allocation fails
 * or succeeds, the allocator stays consistent, and at the end nothing is
 * left with the driver. */
static void sweep_stitched_growth(enum accounting_operation operation, unsigned long repeat)
{
    const char *name = accounting_driver_operation_name(operation);
    bool reached = true;
    for (unsigned long nth = 1; reached; nth++) {
        allocator = gpucache_allocator_create(&config, accounting_driver_interface(device), 0);
        cr_assert_not_null(allocator);
        uint64_t first, second;
        free_the_first_of_two(&first, &second);
        unsigned long before = accounting_driver_calls(device, operation);
        accounting_driver_fail_call(device, operation, nth, repeat, GPUCACHE_ERROR_OUT_OF_MEMORY);
        uint64_t address = 0;
        gpucache_result result = gpucache_allocator_malloc(allocator, 60 * MiB, 0, &address);
        reached = accounting_driver_calls(device, operation) - before >= nth;
        /* Disarmed: armed so far ahead that no test reaches it. */
        accounting_driver_fail_call(device, operation, 1UL << 40, 1, GPUCACHE_SUCCESS);
        cr_expect(result == GPUCACHE_SUCCESS || result == GPUCACHE_ERROR_OUT_OF_MEMORY,
                  "%s failing at call %lu: result %d", name, nth, (int)result);
        char why[256];
        cr_expect(gpucache_allocator_check(allocator, why, sizeof why),
                  "%s failing at call %lu: %s", name, nth, why);
        cr_expect_leq((uint64_t)reserved(), accounting_driver_used_bytes(device),
                      "%s failing at call %lu: reserved memory is memory the driver holds", name,
                      nth);
        if (result == GPUCACHE_SUCCESS)
            release(address);
        release(second);
        gpucache_allocator_synchronized(allocator, true, 0);
        gpucache_allocator_empty_cache(allocator);
        cr_expect_eq(reserved(), 0, "%s failing at call %lu: everything goes back", name, nth);
        gpucache_allocator_destroy(allocator);
        allocator = NULL;
        cr_expect_eq(accounting_driver_used_bytes(device), 0, "%s failing at call %lu: leaked",
                     name, nth);
    }
}

Test(vmm_allocator, stitched_growth_survives_each_failing_vmm_call)
{
    config.expandable_segments_stitch = true;
    static const enum accounting_operation operations[] = {
        ACCOUNTING_PAGE_UNMAP, ACCOUNTING_PAGE_MAP, ACCOUNTING_SET_ACCESS,
        ACCOUNTING_PAGE_CREATE, ACCOUNTING_PAGE_RELEASE};
    for (size_t i = 0; i < sizeof operations / sizeof operations[0]; i++) {
        sweep_stitched_growth(operations[i], 1);
        /* Twice in a row: the handle cannot go back where it came from. */
        sweep_stitched_growth(operations[i], 2);
    }
}

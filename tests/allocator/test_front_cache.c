/* The front cache (allocator/front_cache.c): a block freed on its own stream
 * waits unmerged for the next request of its size there. These tests call
 * the allocator directly, without the fixture's check after each call (a
 * check merges the fronts back), so blocks really wait in a front when the
 * next call comes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocator_fixture.h"

static uint64_t raw_alloc(struct fixture *f, size_t size, gpucache_stream stream)
{
    uint64_t address = 0;
    gpucache_result result = gpucache_allocator_malloc(f->allocator, size, stream, &address);
    cr_assert_eq(result, GPUCACHE_SUCCESS, "malloc(%zu) failed with %d", size, result);
    return address;
}

static void raw_free(struct fixture *f, uint64_t address, gpucache_stream stream)
{
    cr_assert_eq(gpucache_allocator_free(f->allocator, address, GPUCACHE_FREE_STREAM_ORDERED,
                                         stream),
                 GPUCACHE_SUCCESS);
}

static void open_held(struct fixture *f, uint64_t capacity)
{
    fixture_start(f, NULL, capacity);
    accounting_driver_hold_fences(f->driver, true);
}

Test(front_cache, a_block_freed_on_its_stream_comes_back_there_at_once)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), a);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, another_stream_never_gets_a_front_block_before_its_fence)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    uint64_t b = raw_alloc(&f, 4 * KiB, STREAM_B);
    cr_assert_neq(b, a, "stream B took A's block before A's fence");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_synchronous_free_never_enters_a_front)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_SYNCHRONOUS, STREAM_A),
                 GPUCACHE_SUCCESS);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a,
                  "a synchronous free waits for a fence on every stream");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_free_on_a_foreign_stream_never_enters_a_front)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_B);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_B), a, "B's fence has not completed");
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "B's fence has not completed");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_destroyed_streams_front_is_not_served_to_the_next_stream_of_its_token)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    gpucache_allocator_stream_destroyed(f.allocator, STREAM_A);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a,
                  "the destroyed stream's last work may still use the block");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_front_block_freed_again_is_an_invalid_free)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_STREAM_ORDERED, STREAM_A),
                 GPUCACHE_ERROR_INVALID_VALUE);
    cr_assert_not(gpucache_allocator_block_size(f.allocator, a, NULL));
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, empty_cache_releases_segments_whose_blocks_wait_in_a_front)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    gpucache_allocator_empty_cache(f.allocator);
    cr_assert_eq(accounting_driver_used_bytes(f.driver), 0);
    fixture_close(&f);
}

Test(front_cache, the_oom_retry_releases_segments_whose_blocks_wait_in_a_front)
{
    struct fixture f;
    open_held(&f, 64 * MiB);
    uint64_t a = raw_alloc(&f, 40 * MiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    raw_alloc(&f, 48 * MiB, STREAM_A);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, garbage_collection_collects_segments_whose_blocks_wait_in_a_front)
{
    struct fixture f;
    fixture_start(&f, "garbage_collection_threshold:0.5,per_process_memory_fraction:0.99",
                  100 * MiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = raw_alloc(&f, 60 * MiB, STREAM_A);
    raw_free(&f, a, STREAM_A);
    /* Past the threshold, the next miss collects the idle 60 MiB segment
     * before growing, instead of failing and releasing everything. */
    raw_alloc(&f, 70 * MiB, STREAM_A);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_alloc_retries, 0, "garbage collection did not see the front's block");
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_ALL].current, (int64_t)(70 * MiB));
    fixture_check(&f);
    fixture_close(&f);
}

/* One program run twice: on `front`, blocks wait in fronts between calls;
 * on `eager`, the check after every call merges them back at once, which
 * is the allocator without a front. Buffers are named by index, since the
 * two devices hand out different addresses. */
#define TWIN_BUFFERS 160

struct twin {
    struct fixture front;
    struct fixture eager;
    uint64_t front_address[TWIN_BUFFERS];
    uint64_t eager_address[TWIN_BUFFERS];
};

static void twin_start(struct twin *t)
{
    fixture_start(&t->front, NULL, 1 * GiB);
    fixture_start(&t->eager, NULL, 1 * GiB);
}

static void twin_close(struct twin *t)
{
    fixture_close(&t->front);
    fixture_close(&t->eager);
}

static void twin_alloc(struct twin *t, int index, size_t size, gpucache_stream stream)
{
    t->front_address[index] = raw_alloc(&t->front, size, stream);
    t->eager_address[index] = raw_alloc(&t->eager, size, stream);
    fixture_check(&t->eager);
}

static void twin_free(struct twin *t, int index, gpucache_stream stream)
{
    raw_free(&t->front, t->front_address[index], stream);
    raw_free(&t->eager, t->eager_address[index], stream);
    fixture_check(&t->eager);
}

static void twin_free_sync(struct twin *t, int index)
{
    cr_assert_eq(gpucache_allocator_free(t->front.allocator, t->front_address[index],
                                         GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_SUCCESS);
    cr_assert_eq(gpucache_allocator_free(t->eager.allocator, t->eager_address[index],
                                         GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_SUCCESS);
    fixture_check(&t->eager);
}

static void assert_same_stat(const char *when, const char *name, const struct gpucache_stat *x,
                             const struct gpucache_stat *y)
{
    cr_assert(memcmp(x, y, sizeof *x) == 0,
              "%s: %s differs: current %lld/%lld peak %lld/%lld allocated %lld/%lld freed "
              "%lld/%lld (front/eager)",
              when, name, (long long)x->current, (long long)y->current, (long long)x->peak,
              (long long)y->peak, (long long)x->allocated, (long long)y->allocated,
              (long long)x->freed, (long long)y->freed);
}

/* The memory statistics (PyTorch's names). inactive_split is left out: a
 * front pair skips the merge and split whose transient moves its totals. */
static void assert_same_stats(struct twin *t, const char *when)
{
    struct gpucache_stats x = stats_of(&t->front);
    struct gpucache_stats y = stats_of(&t->eager);
    for (int i = 0; i < GPUCACHE_STAT_TYPE_COUNT; i++) {
        assert_same_stat(when, "allocation", &x.allocation[i], &y.allocation[i]);
        assert_same_stat(when, "allocated_bytes", &x.allocated_bytes[i], &y.allocated_bytes[i]);
        assert_same_stat(when, "active", &x.active[i], &y.active[i]);
        assert_same_stat(when, "active_bytes", &x.active_bytes[i], &y.active_bytes[i]);
        assert_same_stat(when, "requested_bytes", &x.requested_bytes[i], &y.requested_bytes[i]);
        assert_same_stat(when, "segment", &x.segment[i], &y.segment[i]);
        assert_same_stat(when, "reserved_bytes", &x.reserved_bytes[i], &y.reserved_bytes[i]);
    }
    assert_same_stat(when, "oversize_allocations", &x.oversize_allocations,
                     &y.oversize_allocations);
    assert_same_stat(when, "pending_bytes", &x.pending_bytes, &y.pending_bytes);
    /* What the program sees now, inactive_split included. */
    cr_assert_eq(x.inactive_split[0].current, y.inactive_split[0].current, "%s", when);
    cr_assert_eq(x.inactive_split_bytes[0].current, y.inactive_split_bytes[0].current, "%s", when);
}

struct listing {
    size_t count;
    struct gpucache_block_info blocks[64];
};

static void list_blocks(void *context, const struct gpucache_segment_info *segment)
{
    struct listing *listing = context;
    for (size_t i = 0; i < segment->block_count && listing->count < 64; i++) {
        struct gpucache_block_info block = segment->blocks[i];
        block.address -= segment->address; /* offsets: the devices differ */
        listing->blocks[listing->count++] = block;
    }
}

static void assert_same_snapshot(struct twin *t)
{
    struct listing front = {0}, eager = {0};
    cr_assert(gpucache_allocator_visit_segments(t->front.allocator, list_blocks, &front));
    cr_assert(gpucache_allocator_visit_segments(t->eager.allocator, list_blocks, &eager));
    cr_assert_eq(front.count, eager.count, "snapshots list %zu and %zu blocks", front.count,
                 eager.count);
    for (size_t i = 0; i < front.count; i++)
        cr_assert(memcmp(&front.blocks[i], &eager.blocks[i], sizeof front.blocks[i]) == 0,
                  "block %zu differs in the snapshot", i);
}

Test(front_cache, statistics_and_snapshots_read_as_if_every_free_merged_at_once)
{
    static struct twin t;
    twin_start(&t);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A);
    twin_alloc(&t, 1, 3000, STREAM_A);
    twin_alloc(&t, 2, 12 * MiB, STREAM_A);
    twin_alloc(&t, 3, 4 * KiB, STREAM_B);
    twin_free(&t, 0, STREAM_A);
    twin_free(&t, 2, STREAM_A);
    assert_same_stats(&t, "blocks waiting in the front");
    /* Hits with larger and smaller requests of the same rounded size move
     * requested_bytes and its peak. */
    twin_alloc(&t, 0, 4 * KiB - 100, STREAM_A);
    twin_alloc(&t, 2, 12 * MiB, STREAM_A);
    twin_free(&t, 0, STREAM_A);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A);
    twin_free(&t, 1, STREAM_A);
    twin_alloc(&t, 1, 3500, STREAM_A);
    assert_same_stats(&t, "after front hits");
    /* A hit that raises requested_bytes while another block waits in the
     * front: the peak is what the statistics would read, without it. */
    twin_free(&t, 2, STREAM_A);
    twin_free(&t, 1, STREAM_A);
    twin_alloc(&t, 1, 3584, STREAM_A);
    assert_same_stats(&t, "after a larger request while a block waits");
    twin_free(&t, 0, STREAM_A);
    twin_free(&t, 3, STREAM_B);
    assert_same_snapshot(&t);
    assert_same_stats(&t, "after a snapshot");
    twin_close(&t);
}

Test(front_cache, blocks_whose_synchronous_frees_completed_wait_in_the_front_as_free_blocks)
{
    static struct twin t;
    twin_start(&t);
    for (int i = 0; i < 72; i++)
        twin_alloc(&t, i, i % 2 == 0 ? 4 * KiB : 3000, STREAM_A);
    /* 64 frees close an epoch; the fence completes at once here. */
    for (int i = 0; i < 64; i++)
        twin_free_sync(&t, i);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A); /* the query that completes them */
    assert_same_stats(&t, "after the epoch completed");
    for (int i = 1; i < 8; i++)
        twin_alloc(&t, i, i % 2 == 0 ? 4 * KiB - 7 : 3000, STREAM_A);
    twin_free(&t, 70, STREAM_A); /* one waiting with deferred allocation statistics */
    twin_alloc(&t, 8, 4 * KiB, STREAM_A);
    assert_same_stats(&t, "after hits of blocks whose fence completed");
    assert_same_snapshot(&t);
    twin_close(&t);
}

/* The lanes: a block's second cycle on its stream (a hit, then its free)
 * goes through its front's lock alone. */
static uint64_t lane_cycle(struct fixture *f, size_t size, gpucache_stream stream)
{
    uint64_t a = raw_alloc(f, size, stream);
    raw_free(f, a, stream);
    cr_assert_eq(raw_alloc(f, size, stream), a, "the front serves the second request");
    return a;
}

Test(front_cache, a_block_a_lane_handed_out_is_allocated_to_every_reader)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    size_t requested = 0;
    cr_assert(gpucache_allocator_block_size(f.allocator, a, &requested));
    cr_assert_eq(requested, 4 * KiB);
    cr_assert_eq(stats_of(&f).allocation[GPUCACHE_STAT_ALL].current, 1);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_block_a_lane_handed_out_then_freed_synchronously_waits_for_every_stream)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_SYNCHRONOUS, STREAM_A),
                 GPUCACHE_SUCCESS);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a,
                  "a synchronous free waits for a fence on every stream");
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_SYNCHRONOUS, STREAM_A),
                 GPUCACHE_ERROR_INVALID_VALUE, "freed twice");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_block_a_lane_handed_out_then_freed_on_another_stream_waits_for_it)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    raw_free(&f, a, STREAM_B);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "B's fence has not completed");
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_B), a, "B's fence has not completed");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_lane_free_after_a_synchronize_began_is_not_cleared_by_it)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    struct gpucache_sync_point since = gpucache_allocator_sync_point(f.allocator);
    raw_free(&f, a, STREAM_A); /* the lane, after the synchronize began */
    gpucache_allocator_synchronized_since(f.allocator, false, STREAM_A, since);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_B), a,
                  "work stream A issued after the synchronize began may still use the block");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_lane_free_before_a_synchronize_is_cleared_by_it)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    /* A whole segment: no other free block could serve B. */
    uint64_t a = lane_cycle(&f, 20 * MiB, STREAM_A);
    raw_free(&f, a, STREAM_A); /* the lane */
    gpucache_allocator_synchronized(f.allocator, false, STREAM_A);
    cr_assert_eq(raw_alloc(&f, 20 * MiB, STREAM_B), a,
                 "stream A's work is done: another stream may take the block");
    fixture_check(&f);
    fixture_close(&f);
}

/* A hit of a block a fence freed raises the statistics under the
 * allocator's lock while another stream's front holds a block whose free
 * it deferred; the lane's later hit of that block must not pass the peak
 * without raising it. */
Test(front_cache, a_lane_hit_after_a_fenced_hit_elsewhere_raises_the_peak_it_passes)
{
    static struct twin t;
    twin_start(&t);
    accounting_driver_hold_fences(t.front.driver, true);
    accounting_driver_hold_fences(t.eager.driver, true);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A);
    for (int i = 1; i <= 64; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_B);
    for (int i = 1; i <= 64; i++)
        twin_free_sync(&t, i); /* the 64th closes the epoch; its fence waits */
    /* Tree hits bring the live count back to its peak. */
    for (int i = 65; i <= 128; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_B);
    /* Block 0 through A's front, handed out, then freed by the lane, which
     * defers its statistics. */
    twin_free(&t, 0, STREAM_A);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A);
    twin_free(&t, 0, STREAM_A);
    accounting_driver_complete_all(t.front.driver);
    accounting_driver_complete_all(t.eager.driver);
    twin_alloc(&t, 1, 4 * KiB, STREAM_B); /* completes the epoch into B's front */
    twin_alloc(&t, 0, 4 * KiB, STREAM_A); /* the lane */
    assert_same_stats(&t, "after the lane's hit");
    twin_close(&t);
}

/* The same for requested_bytes: a larger request of a block in B's front
 * leaves requested_bytes above its peak while A's front defers a decrease;
 * A's next hit, below its front's floor, takes the ordinary path, which
 * raises the peak it passes. */
Test(front_cache, a_hit_after_a_larger_request_elsewhere_raises_the_requested_peak_it_passes)
{
    static struct twin t;
    twin_start(&t);
    twin_alloc(&t, 0, 4096, STREAM_A);
    twin_alloc(&t, 1, 3000, STREAM_B);
    twin_free(&t, 0, STREAM_A);
    twin_free(&t, 1, STREAM_B);
    twin_alloc(&t, 0, 4096, STREAM_A); /* the lanes hand both out */
    twin_alloc(&t, 1, 3000, STREAM_B);
    twin_free(&t, 0, STREAM_A);
    twin_free(&t, 1, STREAM_B);
    twin_alloc(&t, 1, 3072, STREAM_B); /* another request: the ordinary path */
    twin_alloc(&t, 0, 4096, STREAM_A);
    assert_same_stats(&t, "after A's hit");
    twin_close(&t);
}

/* Synchronous frees through the lanes: a block its front handed out, freed
 * with cuMemFree, waits for a fence on every stream, under the front's lock
 * alone. */
static uint64_t lane_synchronous_frees(struct fixture *f)
{
    return gpucache_allocator_lane_synchronous_frees(f->allocator);
}

/* How many hits the fronts' lanes served so far. */
static uint64_t lane_hits(struct fixture *f)
{
    uint64_t hits, frees;
    gpucache_allocator_lane_counts(f->allocator, &hits, &frees);
    return hits;
}

static void free_synchronously(struct fixture *f, uint64_t address)
{
    cr_assert_eq(gpucache_allocator_free(f->allocator, address, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_SUCCESS);
}

/* Blocks a fence freed wait in a slot under a block freed on the stream
 * since: the lane serves that block, and leaves only the fenced ones,
 * whose hits raise the allocation statistics, to the ordinary path. */
Test(front_cache, a_lane_serves_its_slot_above_blocks_a_fence_freed)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t fenced[64];
    for (int i = 0; i < 64; i++)
        fenced[i] = raw_alloc(&f, 4 * KiB, STREAM_A);
    uint64_t e = raw_alloc(&f, 4 * KiB, STREAM_A);
    uint64_t c = raw_alloc(&f, 8 * KiB, STREAM_A);
    for (int i = 0; i < 64; i++)
        free_synchronously(&f, fenced[i]); /* the 64th records the epoch's fence */
    raw_free(&f, c, STREAM_A);
    accounting_driver_complete_all(f.driver);
    /* Due to query: the epoch's blocks fill A's slot of 4 KiB. */
    raw_free(&f, raw_alloc(&f, 8 * KiB, STREAM_A), STREAM_A);
    uint64_t hits_before = lane_hits(&f);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), fenced[63], "the newest on top");
    raw_free(&f, e, STREAM_A); /* above the other 63 */
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), e);
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "the lane left its front to the ordinary path");
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), fenced[62]);
    hits_before = lane_hits(&f);
    cr_assert_eq(hits_before, hits, "a lane took a block a fence freed");
    fixture_check(&f);
    fixture_close(&f);
}

/* A dry slot beside its own lane's fenced batch, the trees empty: the miss
 * waits for that batch (and so the older ones), not for the oldest batch
 * of all, which would refill another stream's front and leave this miss to
 * the flush. Blocks of 20 MiB are whole segments, so the trees hold none,
 * and four of them fill a batch (64 MiB). */
Test(front_cache, a_miss_beside_its_own_batch_waits_for_that_batch)
{
    struct fixture f;
    open_held(&f, 4 * GiB);
    uint64_t a[4], b[4];
    gpucache_stream streams[2] = {STREAM_A, STREAM_B};
    uint64_t *blocks[2] = {a, b};
    /* Every segment first, so that no miss flushes the fronts after. */
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 4; i++)
            blocks[s][i] = raw_alloc(&f, 20 * MiB, streams[s]);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 4; i++)
            raw_free(&f, blocks[s][i], streams[s]);
        for (int i = 0; i < 4; i++)
            blocks[s][i] = raw_alloc(&f, 20 * MiB, streams[s]); /* handed out by the front */
    }
    for (int i = 0; i < 4; i++)
        free_synchronously(&f, b[i]); /* B's batch, fenced at the fourth */
    /* The lane of A's front serves the next synchronous frees. */
    raw_free(&f, a[3], STREAM_A);
    a[3] = raw_alloc(&f, 20 * MiB, STREAM_A);
    for (int i = 0; i < 4; i++)
        free_synchronously(&f, a[i]); /* A's batch, younger */
    uint64_t reserved = accounting_driver_used_bytes(f.driver);
    cr_assert_eq(gpucache_allocator_lane_synchronous_frees(f.allocator), 8);
    uint64_t got = raw_alloc(&f, 20 * MiB, STREAM_A);
    cr_assert(got == a[0] || got == a[1] || got == a[2] || got == a[3],
              "A's miss was not served from its own batch");
    uint64_t hits_before = lane_hits(&f);
    raw_alloc(&f, 20 * MiB, STREAM_B);
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "B's front was flushed");
    cr_assert_eq(accounting_driver_used_bytes(f.driver), reserved, "the miss grew");
    fixture_check(&f);
    fixture_close(&f);
}

/* `count` cuMemAlloc + cuMemFree pairs of 4 KiB on stream A. */
static void synchronous_pairs(struct fixture *f, int count)
{
    for (int i = 0; i < count; i++)
        free_synchronously(f, raw_alloc(f, 4 * KiB, STREAM_A));
}

Test(front_cache, a_lane_frees_synchronously_and_the_block_waits_for_every_stream)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    free_synchronously(&f, a);
    cr_assert_eq(lane_synchronous_frees(&f), 1, "the lane serves the free");
    size_t requested;
    cr_assert_not(gpucache_allocator_block_size(f.allocator, a, &requested), "a is not live");
    cr_assert_eq(gpucache_allocator_free(f.allocator, a, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_ERROR_INVALID_VALUE, "freed twice");
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "no fence was recorded after the free");
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_B), a, "no fence was recorded after the free");
    fixture_check(&f);
    fixture_close(&f);
}

/* `count` blocks handed out by the lane of `stream`, with `spare` more left
 * in its front (no allocation may flush the fronts meanwhile). */
static void hand_out_on(struct fixture *f, gpucache_stream stream, uint64_t *blocks, int count,
                        int spare)
{
    uint64_t all[64];
    cr_assert_leq(count + spare, 64);
    for (int i = 0; i < count + spare; i++)
        all[i] = raw_alloc(f, 4 * KiB, stream);
    for (int i = 0; i < count + spare; i++)
        raw_free(f, all[i], stream);
    for (int i = 0; i < count; i++)
        blocks[i] = raw_alloc(f, 4 * KiB, stream);
}

/* The same on A. */
static void hand_out_through_the_lane(struct fixture *f, uint64_t *blocks, int count, int spare)
{
    hand_out_on(f, STREAM_A, blocks, count, spare);
}

Test(front_cache, a_lanes_fenced_batch_waits_for_its_fence_after_a_flush_too)
{
    enum { COUNT = 32 };
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t blocks[COUNT];
    hand_out_through_the_lane(&f, blocks, COUNT, 0);
    for (int i = 0; i < COUNT; i++)
        free_synchronously(&f, blocks[i]);
    cr_assert_gt(lane_synchronous_frees(&f), 0, "the lane serves the frees it handed out");
    int64_t closed = stats_of(&f).num_epochs_closed; /* a flush: the unfenced wait in the open epoch */
    gpucache_allocator_sync_point(f.allocator);
    for (int i = 0; i < 2 * COUNT; i++) {
        uint64_t b = raw_alloc(&f, 4 * KiB, i % 2 ? STREAM_A : STREAM_B); /* misses: flushes */
        for (int j = 0; j < COUNT; j++)
            cr_assert_neq(b, blocks[j], "before the fence completed");
    }
    cr_assert_geq(stats_of(&f).num_epochs_closed, closed);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_lanes_batch_comes_back_to_its_stream_once_its_fence_completes)
{
    enum { COUNT = 32 };
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t blocks[COUNT];
    hand_out_through_the_lane(&f, blocks, COUNT, 1); /* the spare keeps A's front from running dry */
    for (int i = 0; i < COUNT; i++)
        free_synchronously(&f, blocks[i]);
    uint64_t lane_frees = lane_synchronous_frees(&f);
    cr_assert_gt(lane_frees, 0, "the lane serves the frees it handed out");
    struct gpucache_sync_point since = gpucache_allocator_sync_point(f.allocator); /* the fence */
    (void)since;
    accounting_driver_complete_all(f.driver);
    uint64_t hits_before = lane_hits(&f);
    /* The spare first (the top of the slot), then the batch, which the
     * query of the first hit after the fence put back in the front. */
    bool from_batch = false;
    for (int n = 0; n < 3; n++) {
        uint64_t again = raw_alloc(&f, 4 * KiB, STREAM_A);
        for (int i = 0; i < COUNT; i++)
            from_batch |= again == blocks[i];
    }
    uint64_t hits_after = lane_hits(&f);
    cr_assert(from_batch, "the completed batch waits in stream A's front");
    cr_assert_geq(hits_after - hits_before, 2, "the lane serves the batch's blocks");
    fixture_check(&f);
    fixture_close(&f);
}

/* cuMemAlloc then cuMemFree of one size, again and again, as a step's
 * temporaries are: once the fences have returned blocks to the front, the
 * lanes serve both, and every 64th free records the one fence of a batch. */
Test(front_cache, repeated_synchronous_pairs_run_on_the_lanes_with_a_fence_per_64_frees)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    synchronous_pairs(&f, 2000);
    uint64_t hits_before, frees_before, hits, frees;
    gpucache_allocator_lane_counts(f.allocator, &hits_before, &frees_before);
    uint64_t synchronous_before = lane_synchronous_frees(&f);
    int64_t closed_before = stats_of(&f).num_epochs_closed;
    synchronous_pairs(&f, 6400);
    gpucache_allocator_lane_counts(f.allocator, &hits, &frees);
    cr_assert_geq(hits - hits_before, 6000, "%llu of 6400 hits were a lane's",
                  (unsigned long long)(hits - hits_before));
    cr_assert_geq(lane_synchronous_frees(&f) - synchronous_before, 6000);
    int64_t fences = stats_of(&f).num_epochs_closed - closed_before;
    cr_assert(fences >= 99 && fences <= 101, "%lld fences for 6400 frees", (long long)fences);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_device_synchronize_clears_the_lanes_synchronous_frees)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    free_synchronously(&f, a); /* unfenced: fewer than 64 */
    struct gpucache_sync_point since = gpucache_allocator_sync_point(f.allocator);
    accounting_driver_complete_all(f.driver);
    gpucache_allocator_synchronized_since(f.allocator, true, 0, since);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "the device's work before it is done");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_lanes_synchronous_frees_after_a_synchronize_began_are_not_cleared_by_it)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a = lane_cycle(&f, 4 * KiB, STREAM_A);
    struct gpucache_sync_point since = gpucache_allocator_sync_point(f.allocator);
    free_synchronously(&f, a);
    gpucache_allocator_synchronized_since(f.allocator, true, 0, since);
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_B), a, "work issued after the point may use it");
    cr_assert_neq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "work issued after the point may use it");
    fixture_check(&f);
    fixture_close(&f);
}

/* The pending statistics while a lane's synchronous frees wait unfenced:
 * the peak an epoch's completion would otherwise lower past counts them. */
Test(front_cache, pending_peaks_count_the_lanes_unfenced_frees)
{
    static struct twin t;
    twin_start(&t);
    for (int i = 0; i < 64; i++)
        twin_alloc(&t, 10 + i, 4 * KiB, STREAM_B);
    /* Six blocks in A's front, five handed out by its lane: the sixth
     * serves the allocation that completes the epoch below. */
    for (int i = 0; i < 6; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 6; i++)
        twin_free(&t, i, STREAM_A);
    for (int i = 0; i < 5; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 64; i++)
        twin_free_sync(&t, 10 + i); /* the ordinary path closes their epoch */
    for (int i = 0; i < 5; i++)
        twin_free_sync(&t, i); /* A's lane: unfenced */
    cr_assert_eq(gpucache_allocator_lane_synchronous_frees(t.front.allocator), 5);
    twin_alloc(&t, 5, 4 * KiB, STREAM_A); /* completes the epoch of 64 */
    assert_same_stats(&t, "after the epoch's completion");
    cr_assert_eq(stats_of(&t.front).pending_blocks.peak, 69);
    twin_close(&t);
}

/* A batch, its completion into the front, lane hits of its blocks and a
 * miss's flush: statistics as if the lanes' synchronous frees were the
 * ordinary path's. Compared after device synchronizes: which blocks are
 * still pending before one depends on which the lane served. */
static void twin_synchronize(struct twin *t)
{
    gpucache_allocator_synchronized(t->front.allocator, true, 0);
    gpucache_allocator_synchronized(t->eager.allocator, true, 0);
    fixture_check(&t->eager);
}

static void lanes_synchronous_frees_against_the_ordinary_ones(size_t odd_size)
{
    static struct twin t;
    twin_start(&t);
    for (int i = 0; i < 60; i++)
        twin_alloc(&t, i, i % 2 == 0 ? 4 * KiB : odd_size, STREAM_A);
    for (int i = 0; i < 60; i++)
        twin_free(&t, i, STREAM_A);
    for (int i = 0; i < 60; i++)
        twin_alloc(&t, i, i % 2 == 0 ? 4 * KiB : odd_size, STREAM_A);
    for (int i = 0; i < 60; i++)
        twin_free_sync(&t, i);
    cr_assert_geq(gpucache_allocator_lane_synchronous_frees(t.front.allocator), 40);
    twin_synchronize(&t);
    assert_same_stats(&t, "after 60 synchronous frees");
    for (int i = 0; i < 40; i++)
        twin_alloc(&t, i, i % 2 == 0 ? 4 * KiB : odd_size, STREAM_A);
    assert_same_stats(&t, "after hits of the batch's blocks");
    for (int i = 0; i < 30; i++)
        twin_free_sync(&t, i);
    twin_synchronize(&t);
    twin_alloc(&t, 100, 8 * KiB, STREAM_B);
    assert_same_stats(&t, "after more synchronous frees and a miss");
    assert_same_snapshot(&t);
    twin_close(&t);
}

/* Two sizes: the batch's blocks go back to their slots one by one. */
Test(front_cache, statistics_read_as_if_the_lanes_synchronous_frees_were_the_ordinary_ones)
{
    lanes_synchronous_frees_against_the_ordinary_ones(3000);
}

/* One size, with requests of two lengths: the batch goes back in one step. */
Test(front_cache, statistics_read_so_when_a_lanes_batch_goes_back_whole)
{
    lanes_synchronous_frees_against_the_ordinary_ones(4 * KiB - 300);
}

/* A flush while a lane's fenced batch waits for its fence: the batch's
 * blocks read as pending, and stay unusable, as ordinary synchronous frees. */
Test(front_cache, a_flush_makes_a_lanes_fenced_batch_ordinary_pending_blocks)
{
    static struct twin t;
    twin_start(&t);
    accounting_driver_hold_fences(t.front.driver, true);
    accounting_driver_hold_fences(t.eager.driver, true);
    for (int i = 0; i < 20; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 20; i++)
        twin_free(&t, i, STREAM_A);
    for (int i = 0; i < 20; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 20; i++)
        twin_free_sync(&t, i);
    cr_assert_gt(gpucache_allocator_lane_synchronous_frees(t.front.allocator), 0);
    gpucache_allocator_sync_point(t.front.allocator); /* fences the lane's batch */
    gpucache_allocator_sync_point(t.eager.allocator);
    assert_same_stats(&t, "with the batch's fence outstanding");
    assert_same_snapshot(&t);
    twin_close(&t);
}

/* During a stream capture no fence may be recorded: a lane's batch then
 * waits in the open epoch, as the ordinary path's synchronous frees do. */
Test(front_cache, a_lanes_batch_records_no_fence_during_a_capture)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    synchronous_pairs(&f, 2000);
    /* Every block back in A's front: the next 64 pairs are the lane's. */
    gpucache_allocator_synchronized(f.allocator, true, 0);
    uint64_t synchronous = lane_synchronous_frees(&f);
    unsigned long fences = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS);
    unsigned long queries = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY);
    accounting_driver_set_capture(f.driver, true);
    synchronous_pairs(&f, 64);
    cr_assert_eq(lane_synchronous_frees(&f) - synchronous, 64, "a batch's worth on the lane");
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), fences);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY), queries);
    cr_assert_gt(stats_of(&f).pending_blocks.current, 0, "the frees wait");
    accounting_driver_set_capture(f.driver, false);
    raw_alloc(&f, 2 * MiB, STREAM_A); /* a miss: the open epoch is fenced now */
    cr_assert_gt(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), fences);
    fixture_check(&f);
    fixture_close(&f);
}

/* A batch fenced before a capture began: the lane whose slot runs dry
 * during the capture neither queries nor waits for its fence, as the
 * ordinary path does not; the trees serve meanwhile. */
Test(front_cache, a_lane_asks_no_fence_during_a_capture)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    synchronous_pairs(&f, 2000);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    synchronous_pairs(&f, 40);
    gpucache_allocator_sync_point(f.allocator); /* fences the 40 in A's front */
    unsigned long queries = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY);
    unsigned long waits = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_WAIT);
    uint64_t synchronous = lane_synchronous_frees(&f);
    accounting_driver_set_capture(f.driver, true);
    synchronous_pairs(&f, 300); /* A's slot runs dry while the batch waits */
    cr_assert_gt(lane_synchronous_frees(&f) - synchronous, 0);
    synchronous_pairs(&f, 2000); /* and then the trees have no fit left */
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY), queries);
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_WAIT), waits);
    accounting_driver_set_capture(f.driver, false);
    fixture_check(&f);
    fixture_close(&f);
}

/* reuse:conservative and reuse:relaxed keep their own synchronous frees:
 * the lanes leave those to the ordinary path (a synchronize, or reuse at
 * once), and never fence. */
static void repeated_synchronous_pairs_in(const char *configuration, bool synchronizes)
{
    struct fixture f;
    fixture_start(&f, configuration, 1 * GiB);
    for (int i = 0; i < 200; i++) {
        /* The block a lane hands out after a stream-ordered free, then
         * freed with cuMemFree. */
        raw_free(&f, raw_alloc(&f, 4 * KiB, STREAM_A), STREAM_A);
        free_synchronously(&f, raw_alloc(&f, 4 * KiB, STREAM_A));
    }
    cr_assert_eq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS), 0,
                 "%s: no fence", configuration);
    cr_assert_eq(lane_synchronous_frees(&f), 0, "%s: the lanes take no cuMemFree", configuration);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.num_device_synchronizations > 0, synchronizes, "%s", configuration);
    if (!synchronizes)
        cr_assert_eq(stats.pending_blocks.current, 0, "%s: reused at once", configuration);
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, conservative_and_relaxed_modes_keep_their_synchronous_frees_off_the_lanes)
{
    repeated_synchronous_pairs_in("reuse:conservative", true);
    repeated_synchronous_pairs_in("reuse:relaxed", false);
}

/* Misses beside a lane's fenced batch (malloc_beside_front): while the
 * batch waits for its fence, the trees serve the stream's misses without a
 * flush, and the lane keeps serving the frees. */

/* Blocks handed out by A's lane, freed synchronously and fenced as a batch
 * (a device synchronize beginning fences it): A's slot is dry. Returns how
 * many, at least 32; `batch` receives them. */
static int fence_a_lanes_batch(struct fixture *f, uint64_t batch[64])
{
    hand_out_through_the_lane(f, batch, 64, 0);
    for (int i = 0; i < 64; i++)
        free_synchronously(f, batch[i]);
    int count = (int)lane_synchronous_frees(f);
    cr_assert_geq(count, 32);
    gpucache_allocator_sync_point(f->allocator);
    return count;
}

Test(front_cache, a_miss_beside_a_lanes_fenced_batch_leaves_the_lane_serving)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t batch[64];
    int count = fence_a_lanes_batch(&f, batch);
    uint64_t hits_before = lane_hits(&f);
    for (int round = 0; round < 100; round++) {
        uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
        for (int i = 0; i < 64; i++)
            cr_assert_neq(a, batch[i], "the batch's fence has not completed");
        free_synchronously(&f, a);
    }
    cr_assert_eq(lane_synchronous_frees(&f), (uint64_t)count + 100, "a miss flushed A's front");
    /* The lane's own hits stay off while its batches wait: only the trees'
     * blocks serve. */
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits, hits_before);
    cr_assert_eq(reserved(&f), 2 * MiB, "the trees' free blocks serve: nothing grows");
    fixture_check(&f);
    fixture_close(&f);
}

/* Once the trees hold no free block, the miss waits for the oldest batch,
 * as the miss chain waits for synchronous frees before growing: the
 * program waited for those frees in cuMemFree anyway. */
Test(front_cache, a_miss_beside_a_lanes_batch_waits_for_it_rather_than_grow)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t batch[64];
    int count = fence_a_lanes_batch(&f, batch);
    synchronous_pairs(&f, 2000); /* 512 blocks of 4 KiB fill the small segment */
    cr_assert_eq(lane_synchronous_frees(&f), (uint64_t)count + 2000, "a miss flushed A's front");
    cr_assert_eq(reserved(&f), 2 * MiB);
    cr_assert_gt(stats_of(&f).num_fence_waits, 0);
    fixture_check(&f);
    fixture_close(&f);
}

/* The same program on the eager twin: the allocations beside the batch
 * raise the allocation peaks as if no front deferred a decrease, while the
 * live count climbs past its old peak. Fences are held on the front twin
 * only, so its batch waits for the whole walk; requested and active bytes
 * count pending blocks, which complete at other times on the two twins, so
 * they are left out. */
Test(front_cache, allocations_beside_a_lanes_batch_raise_the_peaks_they_pass)
{
    static struct twin t;
    twin_start(&t);
    accounting_driver_hold_fences(t.front.driver, true);
    for (int i = 0; i < 64; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 64; i++)
        twin_free(&t, i, STREAM_A);
    for (int i = 0; i < 64; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 64; i++)
        twin_free_sync(&t, i);
    uint64_t lane_frees = gpucache_allocator_lane_synchronous_frees(t.front.allocator);
    gpucache_allocator_sync_point(t.front.allocator); /* fences what the lane took */
    for (int i = 0; i < 100; i++) {
        twin_alloc(&t, i, i % 3 == 0 ? 4 * KiB - 100 : 4 * KiB, STREAM_A);
        if (i % 4 == 3)
            twin_free_sync(&t, i - 1);
    }
    /* Read once at the end: reading statistics flushes the fronts. */
    /* Most of the walk's frees took the lane (a few blocks found their
     * handed-out set full): no miss flushed the front. */
    cr_assert_gt(gpucache_allocator_lane_synchronous_frees(t.front.allocator), lane_frees + 15);
    struct gpucache_stats x = stats_of(&t.front), y = stats_of(&t.eager);
    for (int s = 0; s < GPUCACHE_STAT_TYPE_COUNT; s++) {
        assert_same_stat("after the walk", "allocation", &x.allocation[s], &y.allocation[s]);
        assert_same_stat("after the walk", "allocated_bytes", &x.allocated_bytes[s],
                         &y.allocated_bytes[s]);
    }
    twin_close(&t);
}

/* cuMemFree pairs on two streams in turn: the floors a hit under the lock
 * sets share the room under the peaks among the fronts, so the other
 * stream's lane is not sent to the lock by every such hit, and a miss the
 * trees serve leaves the other stream's front as it was. */
Test(front_cache, synchronous_pairs_on_two_streams_in_turn_stay_on_their_lanes)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    /* Each stream's front first fills with blocks freed on the stream. */
    gpucache_stream streams[2] = {STREAM_A, STREAM_B};
    for (int s = 0; s < 2; s++) {
        uint64_t blocks[64];
        for (int i = 0; i < 64; i++)
            blocks[i] = raw_alloc(&f, 4 * KiB, streams[s]);
        for (int i = 0; i < 64; i++)
            raw_free(&f, blocks[i], streams[s]);
    }
    for (int i = 0; i < 4000; i++)
        free_synchronously(&f, raw_alloc(&f, 4 * KiB, streams[i % 2]));
    uint64_t hits_before = lane_hits(&f);
    for (int i = 0; i < 6400; i++)
        free_synchronously(&f, raw_alloc(&f, 4 * KiB, streams[i % 2]));
    uint64_t hits = lane_hits(&f);
    cr_assert_geq(hits - hits_before, 6000, "%llu of 6400 hits were a lane's",
                  (unsigned long long)(hits - hits_before));
    fixture_check(&f);
    fixture_close(&f);
}

/* A miss the trees serve merges back only its own stream's slots: another
 * stream's blocks wait on in its front, and its lane goes on serving. */
Test(front_cache, a_miss_on_one_stream_leaves_another_streams_front_serving)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t a = raw_alloc(&f, 4 * KiB, STREAM_A);
    raw_free(&f, raw_alloc(&f, 64 * KiB, STREAM_B), STREAM_B); /* carves B's free run */
    raw_free(&f, a, STREAM_A);
    uint64_t hits_before = lane_hits(&f);
    raw_alloc(&f, 8 * KiB, STREAM_B); /* a miss, served by B's free run */
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), a, "A's front kept its block");
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "A's lane served the hit");
    fixture_check(&f);
    fixture_close(&f);
}

/* Misses the trees serve while another stream's front holds blocks: their
 * peaks, the active ones included, are taken against what the statistics
 * read without the blocks waiting there. */
Test(front_cache, misses_beside_another_streams_front_raise_only_the_peaks_they_pass)
{
    static struct twin t;
    twin_start(&t);
    /* A's run of 256 KiB between two blocks that stay allocated. */
    twin_alloc(&t, 0, 4 * KiB, STREAM_A);
    twin_alloc(&t, 1, 256 * KiB, STREAM_A);
    twin_alloc(&t, 2, 4 * KiB, STREAM_A);
    for (int i = 3; i < 13; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_B);
    for (int i = 3; i < 13; i++)
        twin_free(&t, i, STREAM_B); /* waiting in B's front */
    twin_free(&t, 1, STREAM_A);
    uint64_t last_freed = t.front_address[12];
    /* Misses the run serves: 14 blocks live at the end, against a peak of
     * 13 before, and 24 counted while B's blocks wait in its front. */
    for (int i = 20; i < 32; i++)
        twin_alloc(&t, i, 8 * KiB, STREAM_A);
    twin_alloc(&t, 3, 4 * KiB, STREAM_B); /* 15 live */
    cr_assert_eq(t.front_address[3], last_freed, "B's front still held its blocks");
    twin_free(&t, 3, STREAM_B);
    assert_same_stats(&t, "after the misses beside B's front");
    struct gpucache_stats stats = stats_of(&t.front);
    cr_assert_eq(stats.active[GPUCACHE_STAT_ALL].peak, 15);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].peak, 15);
    twin_close(&t);
}

/* The active statistics count blocks waiting for a fence, which the
 * allocation statistics do not: misses beside another stream's front can
 * leave the active peak no room while the allocation peaks leave some. That
 * front's next hit then passes the active peak, so its lane must leave it
 * to the ordinary path, which raises it. */
Test(front_cache, a_hit_that_passes_only_the_active_peak_raises_it)
{
    static struct twin t;
    twin_start(&t);
    accounting_driver_hold_fences(t.front.driver, true);
    accounting_driver_hold_fences(t.eager.driver, true);
    for (int i = 0; i < 10; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_A);
    for (int i = 0; i < 10; i++)
        twin_free_sync(&t, i); /* active, no longer allocated */
    twin_alloc(&t, 10, 4 * KiB, STREAM_A);
    twin_alloc(&t, 11, 256 * KiB, STREAM_A);
    twin_alloc(&t, 12, 4 * KiB, STREAM_A);
    for (int i = 20; i < 25; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_B); /* peaks: 10 allocated, 18 active */
    for (int i = 20; i < 25; i++)
        twin_free(&t, i, STREAM_B); /* waiting in B's front */
    /* A pair whose hit queries the fences, so that the next is the lane's. */
    twin_alloc(&t, 20, 4 * KiB, STREAM_B);
    twin_free(&t, 20, STREAM_B);
    twin_free(&t, 11, STREAM_A);
    /* Misses served by A's run: 8 allocated, 18 active. */
    for (int i = 30; i < 36; i++)
        twin_alloc(&t, i, 8 * KiB, STREAM_A);
    twin_alloc(&t, 20, 4 * KiB, STREAM_B); /* 19 active */
    twin_free(&t, 20, STREAM_B);
    assert_same_stats(&t, "after B's hit");
    struct gpucache_stats stats = stats_of(&t.front);
    cr_assert_eq(stats.active[GPUCACHE_STAT_ALL].peak, 19);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].peak, 10);
    twin_close(&t);
}

/* A fit beside another stream's front, where that front's neighbouring
 * block waits in its slot cleared for every stream (`in_slot`), or is one
 * it handed out, freed and not cleared since: merge-at-free would not have
 * taken the fit into that stream where this stream could not take it
 * back, so the miss leaves the front serving. The layout is A's run, then
 * B's neighbour and one more block of B. */
static void fit_beside_another_front(bool in_slot)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t run = raw_alloc(&f, 16 * KiB, STREAM_A);
    uint64_t neighbour = raw_alloc(&f, 4 * KiB, STREAM_B);
    uint64_t other = raw_alloc(&f, 4 * KiB, STREAM_B);
    uint64_t handed = in_slot ? other : neighbour, waiting = in_slot ? neighbour : other;
    raw_free(&f, handed, STREAM_B);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_B), handed); /* handed out by B's lane */
    raw_free(&f, waiting, STREAM_B);                         /* waits in B's slot */
    if (in_slot)
        gpucache_allocator_synchronized(f.allocator, false, STREAM_B); /* cleared */
    raw_free(&f, run, STREAM_A);
    gpucache_allocator_synchronized(f.allocator, false, STREAM_A); /* the run is cleared */
    /* A's front holds the run; an 8 KiB miss merges it back and takes it. */
    uint64_t hits_before = lane_hits(&f);
    cr_assert_eq(raw_alloc(&f, 8 * KiB, STREAM_A), run);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_B), waiting, "B's front was flushed");
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "B's hit was not its lane's");
    fixture_check(&f);
    fixture_close(&f);
}

Test(front_cache, a_fit_beside_another_fronts_cleared_block_leaves_it_serving)
{
    fit_beside_another_front(true);
}

Test(front_cache, a_fit_beside_a_block_another_front_handed_out_leaves_it_serving)
{
    fit_beside_another_front(false);
}

/* A miss whose stream has no free block of its own takes, as the miss
 * chain would, a block of another stream that no work can still use,
 * without flushing the fronts. */
Test(front_cache, a_miss_takes_another_streams_cleared_block_beside_the_fronts)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    /* B's segment; its free rest is B's, cleared (no work used it). */
    uint64_t b = raw_alloc(&f, 4 * KiB, STREAM_B);
    raw_free(&f, b, STREAM_B);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_B), b); /* B's front hands b out */
    uint64_t reserved = accounting_driver_used_bytes(f.driver);
    uint64_t hits_before, frees_before, hits, frees;
    gpucache_allocator_lane_counts(f.allocator, &hits_before, &frees_before);
    raw_alloc(&f, 8 * KiB, STREAM_A);  /* A has no block of its own */
    raw_alloc(&f, 64 * KiB, STREAM_A); /* nor now */
    cr_assert_eq(accounting_driver_used_bytes(f.driver), reserved, "the misses grew");
    raw_free(&f, b, STREAM_B);
    gpucache_allocator_lane_counts(f.allocator, &hits, &frees);
    cr_assert_eq(frees - frees_before, 1, "B's front was flushed: b was no longer its");
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_B), b);
    fixture_check(&f);
    fixture_close(&f);
}

/* A block of max_split_size or more that the trees serve beside a claimed
 * front is not handed out by it: such blocks change oversize_allocations,
 * which a front does not defer, so their frees take the ordinary path. */
Test(front_cache, an_oversize_block_served_beside_a_front_never_enters_it)
{
    struct fixture f;
    fixture_start(&f, "max_split_size_mb:20", 1 * GiB);
    raw_free(&f, raw_alloc(&f, 40 * MiB, STREAM_A), STREAM_A);
    raw_free(&f, raw_alloc(&f, 4 * KiB, STREAM_A), STREAM_A); /* A's front is claimed */
    uint64_t hits_before, hits, frees_before, frees;
    gpucache_allocator_lane_counts(f.allocator, &hits_before, &frees_before);
    raw_free(&f, raw_alloc(&f, 40 * MiB, STREAM_A), STREAM_A); /* the trees serve it */
    gpucache_allocator_lane_counts(f.allocator, &hits, &frees);
    cr_assert_eq(frees - frees_before, 0, "the lane took the oversize block's free");
    fixture_check(&f);
    fixture_close(&f);
}

/* A miss beside another stream's front leaves one block of room under the
 * peaks: that granule goes to the other front, whose thread may be
 * between its free and its next hit, not to the front served, whose next
 * hit follows its own free. So A's next hit is its lane's. */
Test(front_cache, the_room_under_the_peaks_goes_to_the_other_fronts_first)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    /* B's own free run of 8 KiB, merged back by the flush of B's miss. */
    raw_free(&f, raw_alloc(&f, 8 * KiB, STREAM_B), STREAM_B);
    uint64_t a1 = raw_alloc(&f, 4 * KiB, STREAM_A);
    uint64_t a2 = raw_alloc(&f, 4 * KiB, STREAM_A);
    uint64_t b1 = raw_alloc(&f, 4 * KiB, STREAM_B); /* peak: 3 blocks, 12 KiB */
    raw_free(&f, b1, STREAM_B);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_B), b1); /* handed out by B's front */
    raw_free(&f, a1, STREAM_A);
    raw_free(&f, a2, STREAM_A); /* waiting in A's front */
    /* B's slot is dry: the trees serve it beside A's front, which leaves 1
     * block, 4 KiB, of room under the peaks. */
    raw_alloc(&f, 4 * KiB, STREAM_B);
    uint64_t hits_before = lane_hits(&f);
    cr_assert_eq(raw_alloc(&f, 4 * KiB, STREAM_A), a2);
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "A's hit went to the lock");
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].peak, 3);
    cr_assert_eq(stats.allocated_bytes[GPUCACHE_STAT_ALL].peak, (int64_t)(12 * KiB));
    fixture_check(&f);
    fixture_close(&f);
}

/* A miss whose best fit a neighbour waiting in another stream's front
 * would have taken in at its free (the fit is cleared for every stream)
 * waits for the flush: merge-at-free would have grown here, and so does
 * the front's allocator, with the same peaks. */
Test(front_cache, a_miss_whose_fit_another_streams_front_would_merge_flushes_first)
{
    static struct twin t;
    twin_start(&t);
    twin_alloc(&t, 0, 4 * KiB, STREAM_A); /* A's segment, with free room */
    for (int i = 1; i <= 10; i++)
        twin_alloc(&t, i, 4 * KiB, STREAM_B);
    for (int i = 1; i <= 10; i++)
        twin_free(&t, i, STREAM_B); /* waiting in B's front */
    twin_alloc(&t, 20, 8 * KiB, STREAM_A); /* a miss the trees serve */
    assert_same_stats(&t, "after the miss beside B's front");
    cr_assert_eq(stats_of(&t.front).allocation[GPUCACHE_STAT_ALL].peak, 11);
    twin_close(&t);
}

/* A thread's synchronous frees go to the lane of its latest front: a
 * lookup of `stream`'s front (a free of an address that is nobody's) makes
 * it that stream's. */
static void aim_lane_at(struct fixture *f, gpucache_stream stream)
{
    cr_assert_eq(gpucache_allocator_free(f->allocator, 512, GPUCACHE_FREE_STREAM_ORDERED, stream),
                 GPUCACHE_ALLOCATOR_NOT_OURS);
}

/* Two streams' lanes hold 128 synchronous frees at once; then A's lane
 * completes its batch by itself, without the allocator's lock. The pending
 * peaks still read the 128: a lane's frees stay within ceilings whose sum
 * with the pending values stays within the peaks, and a free past its
 * ceiling raises the peaks first. */
Test(front_cache, a_lanes_own_completion_leaves_the_pending_peaks_what_both_lanes_held)
{
    struct fixture f;
    open_held(&f, 1 * GiB);
    uint64_t a[64], b[64];
    hand_out_on(&f, STREAM_A, a, 64, 0);
    hand_out_on(&f, STREAM_B, b, 64, 0);
    aim_lane_at(&f, STREAM_A);
    for (int i = 0; i < 64; i++)
        free_synchronously(&f, a[i]);
    uint64_t on_a = lane_synchronous_frees(&f);
    cr_assert_geq(on_a, 32, "A's lane serves the frees it handed out");
    aim_lane_at(&f, STREAM_B);
    for (int i = 0; i < 64; i++)
        free_synchronously(&f, b[i]);
    cr_assert_geq(lane_synchronous_frees(&f) - on_a, 32, "B's lane serves its frees");
    gpucache_allocator_sync_point(f.allocator); /* fences both lanes' batches in their fronts */
    accounting_driver_complete_all(f.driver);
    uint64_t hits_before = lane_hits(&f);
    uint64_t again = raw_alloc(&f, 4 * KiB, STREAM_A); /* A's dry slot: its lane completes the batch */
    uint64_t hits = lane_hits(&f);
    cr_assert_eq(hits - hits_before, 1, "A's lane served the hit from its completed batch");
    bool from_batch = false;
    for (int i = 0; i < 64; i++)
        from_batch = from_batch || again == a[i];
    cr_assert(from_batch);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.pending_blocks.peak, 128);
    cr_assert_eq(stats.pending_bytes.peak, 128 * (int64_t)(4 * KiB));
    cr_assert_lt(stats.pending_blocks.current, 128, "A's batch completed");
    fixture_check(&f);
    fixture_close(&f);
}

struct lane_pairs {
    struct gpucache_allocator *allocator;
    int count;
    int failures;
    int done; /* atomic */
    uint64_t addresses[4000];
};

#define EPOCH_FREES 64 /* a lane's batch */

static int compare_addresses(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void *run_lane_pairs(void *argument)
{
    struct lane_pairs *run = argument;
    for (int i = 0; i < run->count; i++) {
        uint64_t address = 0;
        if (gpucache_allocator_malloc(run->allocator, 4 * KiB, STREAM_A, &address) !=
                GPUCACHE_SUCCESS ||
            gpucache_allocator_free(run->allocator, address, GPUCACHE_FREE_SYNCHRONOUS, 0) !=
                GPUCACHE_SUCCESS)
            run->failures++;
        run->addresses[i] = address;
    }
    __atomic_store_n(&run->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Threads on different streams share nothing but the driver in a steady
 * loop of cuMemFree pairs: the lane records its batches' fences and
 * completes them without the allocator's lock, which another thread holds
 * here throughout. */
Test(front_cache, a_lanes_synchronous_pairs_fence_and_complete_without_the_allocators_lock)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    static struct lane_pairs warm, run;
    warm = (struct lane_pairs){.allocator = f.allocator, .count = 4000};
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, run_lane_pairs, &warm), 0);
    pthread_join(thread, NULL);
    cr_assert_eq(warm.failures, 0);
    unsigned long fences = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS);
    unsigned long queries = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY);
    run = (struct lane_pairs){.allocator = f.allocator, .count = 2000};
    gpucache_allocator_hold_lock(f.allocator, true);
    cr_assert_eq(pthread_create(&thread, NULL, run_lane_pairs, &run), 0);
    for (int waited = 0; waited < 10000 && !__atomic_load_n(&run.done, __ATOMIC_ACQUIRE); waited++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    bool done = __atomic_load_n(&run.done, __ATOMIC_ACQUIRE);
    gpucache_allocator_hold_lock(f.allocator, false);
    pthread_join(thread, NULL);
    cr_assert(done, "the pairs waited for the allocator's lock");
    cr_assert_eq(run.failures, 0);
    cr_assert_geq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_ALL_STREAMS) - fences, 30,
                  "2,000 frees fence about 31 batches");
    cr_assert_geq(accounting_driver_calls(f.driver, ACCOUNTING_FENCE_QUERY) - queries, 30);
    /* A dry slot takes the completed batch back at once: the pairs circulate
     * little more than the batch that waits for its fence. */
    qsort(run.addresses, (size_t)run.count, sizeof run.addresses[0], compare_addresses);
    int distinct = 1;
    for (int i = 1; i < run.count; i++)
        distinct += run.addresses[i] != run.addresses[i - 1];
    cr_assert_leq(distinct, 2 * EPOCH_FREES, "%d blocks circulate", distinct);
    fixture_check(&f);
    fixture_close(&f);
}

/* A flush lists a lane's fenced batch after an epoch recorded later, so
 * the list is not in the order of the records: a wait for the batch must
 * wait for the epochs listed before it too, not take them as done. Here the
 * small pool's last free blocks are the batch's, and the epoch before it
 * holds 64 MiB of the large pool, which fills the device. */
Test(front_cache, a_wait_for_a_flushed_batch_waits_for_the_epochs_listed_before_it)
{
    struct fixture f;
    open_held(&f, 66 * MiB);
    for (int i = 0; i < 448; i++)
        raw_alloc(&f, 4 * KiB, STREAM_C); /* all of the small segment but A's */
    uint64_t large[4];
    for (int i = 0; i < 4; i++)
        large[i] = raw_alloc(&f, 16 * MiB, STREAM_C);
    /* After the misses, which flush the fronts. Only the blocks A's lane
     * handed out are freed: an ordinary synchronous free would join the
     * large epoch. */
    uint64_t a[64];
    bool handed_out[64];
    hand_out_on(&f, STREAM_A, a, 0, 64);
    for (int i = 0; i < 64; i++) {
        uint64_t hits_before = lane_hits(&f);
        a[i] = raw_alloc(&f, 4 * KiB, STREAM_A);
        uint64_t hits = lane_hits(&f);
        handed_out[i] = hits - hits_before == 1;
    }
    aim_lane_at(&f, STREAM_A);
    int freed = 0;
    for (int i = 0; i < 64; i++)
        if (handed_out[i]) {
            free_synchronously(&f, a[i]);
            freed++;
        }
    cr_assert_geq(freed, 32);
    cr_assert_eq(lane_synchronous_frees(&f), (uint64_t)freed);
    gpucache_allocator_sync_point(f.allocator); /* A's batch: fenced in its front */
    for (int i = 0; i < 4; i++)
        free_synchronously(&f, large[i]); /* 64 MiB: the ordinary path fences them, later */
    cr_assert_eq(stats_of(&f).pending_blocks.current, freed + 4, "a flush lists A's batch last");
    unsigned long waits = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_WAIT);
    uint64_t small = raw_alloc(&f, 4 * KiB, STREAM_C); /* waits for the small pool's epoch */
    bool from_batch = false;
    for (int i = 0; i < 64; i++)
        from_batch = from_batch || (handed_out[i] && small == a[i]);
    cr_assert(from_batch, "the batch's blocks serve once its fence completed");
    unsigned long waited = accounting_driver_calls(f.driver, ACCOUNTING_FENCE_WAIT) - waits;
    cr_assert_eq(waited, 2,
                 "%lu waits: the large epoch listed first must be waited for, not taken as done",
                 waited);
    fixture_check(&f);
    fixture_close(&f);
}

/* A long random walk of allocations and frees over several streams, with
 * every invariant and every statistic checked after each operation, and
 * every hand-out checked against the work that may still use the memory. */
#include <stdlib.h>
#include <string.h>

#include "allocator_fixture.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_report.h"

#define LIVE_MAX 384
#define STREAM_COUNT 4

struct live_block {
    uint64_t address;
    size_t size;
    gpucache_stream stream;
};

/* A freed range that GPU work issued before its free may still use: the
 * guard is a fence the test recorded just before the free, after that
 * work. The allocator may hand the range to another stream only once the
 * guard has completed (or to the freeing stream itself, for a
 * stream-ordered free). */
struct freed_range {
    uint64_t address;
    size_t size;
    gpucache_stream stream;
    bool stream_ordered;
    gpucache_fence *guard;
};

struct walk {
    struct fixture f;
    bool check_reuse_safety;
    /* Operations between invariant checks: a check merges the fronts back,
     * so a walk that checks after every operation never reaches a lane. */
    unsigned long check_interval;
    /* Most allocations ask for the size last freed on their stream, as a
     * training step's repeated shapes do: the fronts (and lanes) serve them. */
    bool repeat_sizes;
    /* Percent of operations that free (48 by default: the live count
     * wanders; fewer: it climbs, so peaks keep rising). */
    unsigned free_percent;
    size_t last_freed[STREAM_COUNT];
    struct freed_range *freed;
    size_t freed_count;
    size_t freed_capacity;
    uint64_t random_state;
    struct live_block live[LIVE_MAX];
    size_t live_count;
    size_t live_peak; /* the most blocks live at once: the allocation peak */
    gpucache_stream streams[STREAM_COUNT];
    unsigned long operations;
    unsigned long ooms;
};

static uint64_t next_random(struct walk *walk)
{
    /* xorshift64*: fixed seed, same walk on every run. */
    uint64_t x = walk->random_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    walk->random_state = x;
    return x * UINT64_C(2685821657736338717);
}

static size_t random_size(struct walk *walk)
{
    uint64_t r = next_random(walk);
    switch (r % 8) {
    case 0: case 1: case 2: return 1 + (size_t)((r >> 8) % (8 * KiB));
    case 3: case 4: return 1 + (size_t)((r >> 8) % MiB);
    case 5: case 6: return MiB + (size_t)((r >> 8) % (9 * MiB));
    default: return 10 * MiB + (size_t)((r >> 8) % (54 * MiB));
    }
}

static unsigned long operation_count(void)
{
    /* Sanitizer builds set a smaller count to stay fast; the plain build
     * does the full million. */
    const char *text = getenv("GPUCACHE_RANDOM_OPERATIONS");
    return text != NULL ? strtoul(text, NULL, 10) : 1000000ul;
}

static const struct gpucache_driver *device(const struct walk *walk)
{
    return accounting_driver_interface(walk->f.driver);
}

/* What a correct program does before cuMemFreeAsync(block, stream) on a
 * stream other than the one it used the block on: it makes the freeing
 * stream wait for that work (an event and cuStreamWaitEvent). */
static void order_use_before_free(struct walk *walk, const struct live_block *block,
                                  gpucache_stream stream)
{
    if (stream == block->stream)
        return;
    const struct gpucache_driver *d = device(walk);
    gpucache_fence *used;
    cr_assert_eq(d->fence_stream(d->context, 0, block->stream, &used), GPUCACHE_SUCCESS);
    cr_assert(accounting_driver_stream_wait(walk->f.driver, stream, used));
    d->fence_release(d->context, used);
}

static void remember_free(struct walk *walk, const struct live_block *block,
                          enum gpucache_free_kind kind, gpucache_stream stream)
{
    if (kind == GPUCACHE_FREE_STREAM_ORDERED)
        order_use_before_free(walk, block, stream);
    if (!walk->check_reuse_safety)
        return;
    if (walk->freed_count == walk->freed_capacity) {
        walk->freed_capacity = walk->freed_capacity ? walk->freed_capacity * 2 : 256;
        walk->freed = realloc(walk->freed, walk->freed_capacity * sizeof *walk->freed);
        cr_assert_not_null(walk->freed);
    }
    struct freed_range *range = &walk->freed[walk->freed_count++];
    *range = (struct freed_range){block->address, block->size, stream,
                                  kind == GPUCACHE_FREE_STREAM_ORDERED, NULL};
    const struct gpucache_driver *d = device(walk);
    gpucache_result result = kind == GPUCACHE_FREE_STREAM_ORDERED
                                 ? d->fence_stream(d->context, 0, stream, &range->guard)
                                 : d->fence_all_streams(d->context, 0, &range->guard);
    cr_assert_eq(result, GPUCACHE_SUCCESS);
}

static bool guard_complete(const struct walk *walk, const struct freed_range *range)
{
    const struct gpucache_driver *d = device(walk);
    return d->fence_query(d->context, range->guard) == GPUCACHE_SUCCESS;
}

static void forget_freed(struct walk *walk, size_t index)
{
    const struct gpucache_driver *d = device(walk);
    d->fence_release(d->context, walk->freed[index].guard);
    walk->freed[index] = walk->freed[--walk->freed_count];
}

/* Drops the ranges whose guard completed: nothing can touch them now. */
static void forget_completed(struct walk *walk, bool all)
{
    for (size_t i = 0; i < walk->freed_count;) {
        if (all || guard_complete(walk, &walk->freed[i]))
            forget_freed(walk, i);
        else
            i++;
    }
}

static void check_reuse_safety(struct walk *walk, uint64_t address, size_t size,
                               gpucache_stream stream)
{
    for (size_t i = 0; i < walk->freed_count;) {
        const struct freed_range *range = &walk->freed[i];
        bool overlaps = address < range->address + range->size &&
                        range->address < address + size;
        if (!overlaps || (range->stream_ordered && range->stream == stream)) {
            i++;
            continue;
        }
        cr_assert(guard_complete(walk, range),
                  "operation %lu: 0x%llx given to stream 0x%llx while work before its %s free "
                  "on stream 0x%llx may still use it",
                  walk->operations, (unsigned long long)address, (unsigned long long)stream,
                  range->stream_ordered ? "stream-ordered" : "synchronous",
                  (unsigned long long)range->stream);
        forget_freed(walk, i);
    }
}

static bool overlaps_live(const struct walk *walk, uint64_t address, size_t size)
{
    for (size_t i = 0; i < walk->live_count; i++) {
        const struct live_block *b = &walk->live[i];
        if (address < b->address + b->size && b->address < address + size)
            return true;
    }
    return false;
}

static void do_alloc(struct walk *walk)
{
    size_t size = random_size(walk);
    size_t which = (size_t)(next_random(walk) % STREAM_COUNT);
    gpucache_stream stream = walk->streams[which];
    if (walk->repeat_sizes && walk->last_freed[which] != 0 && next_random(walk) % 4 != 0)
        size = walk->last_freed[which];
    uint64_t address = 0;
    gpucache_result result = gpucache_allocator_malloc(walk->f.allocator, size, stream, &address);
    if (result == GPUCACHE_ERROR_OUT_OF_MEMORY) {
        walk->ooms++;
        return;
    }
    cr_assert_eq(result, GPUCACHE_SUCCESS);
    cr_assert_not(overlaps_live(walk, address, size),
                  "operation %lu: 0x%llx (+%zu) overlaps a live block", walk->operations,
                  (unsigned long long)address, size);
    check_reuse_safety(walk, address, size, stream);
    walk->live[walk->live_count++] = (struct live_block){address, size, stream};
    if (walk->live_count > walk->live_peak)
        walk->live_peak = walk->live_count;
}

/* The allocation count and its peak are the program's alone, wherever the
 * allocator keeps its blocks: what the walk counted itself. */
static void check_allocation_count(struct walk *walk)
{
    struct gpucache_stats stats = stats_of(&walk->f);
    const struct gpucache_stat *count = &stats.allocation[GPUCACHE_STAT_ALL];
    cr_assert_eq(count->current, (int64_t)walk->live_count,
                 "operation %lu: %lld blocks allocated, %zu live", walk->operations,
                 (long long)count->current, walk->live_count);
    cr_assert_eq(count->peak, (int64_t)walk->live_peak,
                 "operation %lu: allocation peak %lld, %zu blocks were live at most",
                 walk->operations, (long long)count->peak, walk->live_peak);
}

static void do_free(struct walk *walk)
{
    size_t index = (size_t)(next_random(walk) % walk->live_count);
    struct live_block block = walk->live[index];
    walk->live[index] = walk->live[--walk->live_count];
    uint64_t how = next_random(walk) % 4;
    enum gpucache_free_kind kind = how == 0 ? GPUCACHE_FREE_SYNCHRONOUS : GPUCACHE_FREE_STREAM_ORDERED;
    gpucache_stream stream = how == 1 ? walk->streams[next_random(walk) % STREAM_COUNT] : block.stream;
    remember_free(walk, &block, kind, stream);
    cr_assert_eq(gpucache_allocator_free(walk->f.allocator, block.address, kind, stream),
                 GPUCACHE_SUCCESS, "operation %lu", walk->operations);
    for (int i = 0; i < STREAM_COUNT; i++)
        if (walk->streams[i] == block.stream)
            walk->last_freed[i] = block.size;
}

static void do_event(struct walk *walk)
{
    uint64_t r = next_random(walk);
    switch (r % 16) {
    case 0: accounting_driver_complete_all(walk->f.driver); break;
    case 1:
        /* The program synchronized: its work is done, and the allocator hears of it. */
        accounting_driver_complete_all(walk->f.driver);
        gpucache_allocator_synchronized(walk->f.allocator, true, 0);
        break;
    case 2: {
        gpucache_stream stream = walk->streams[(r >> 8) % STREAM_COUNT];
        accounting_driver_complete_stream(walk->f.driver, stream);
        gpucache_allocator_synchronized(walk->f.allocator, false, stream);
        break;
    }
    case 3: gpucache_allocator_empty_cache(walk->f.allocator); break;
    case 4: {
        /* Retire a stream: its live blocks are freed first, as a program
         * must before destroying the stream they are used on. */
        size_t which = (size_t)((r >> 8) % STREAM_COUNT);
        gpucache_stream old = walk->streams[which];
        for (size_t i = 0; i < walk->live_count;) {
            if (walk->live[i].stream == old) {
                remember_free(walk, &walk->live[i], GPUCACHE_FREE_STREAM_ORDERED, old);
                cr_assert_eq(gpucache_allocator_free(walk->f.allocator, walk->live[i].address,
                                                     GPUCACHE_FREE_STREAM_ORDERED, old),
                             GPUCACHE_SUCCESS);
                walk->live[i] = walk->live[--walk->live_count];
            } else {
                i++;
            }
        }
        gpucache_allocator_stream_destroyed(walk->f.allocator, old);
        walk->streams[which] = old + 0x10;
        break;
    }
    default:
        accounting_driver_complete_stream(walk->f.driver, walk->streams[(r >> 8) % STREAM_COUNT]);
        break;
    }
    forget_completed(walk, false);
}

static void run_walk(struct walk *walk, unsigned long operations)
{
    char why[256];
    for (walk->operations = 0; walk->operations < operations; walk->operations++) {
        uint64_t choice = next_random(walk) % 100;
        if (choice < 2)
            do_event(walk);
        else if (walk->live_count > 0 &&
                 (choice < 2 + walk->free_percent || walk->live_count == LIVE_MAX))
            do_free(walk);
        else
            do_alloc(walk);
        if (walk->operations % walk->check_interval != 0)
            continue;
        if (!gpucache_allocator_check(walk->f.allocator, why, sizeof why))
            cr_assert_fail("operation %lu: %s", walk->operations, why);
        check_allocation_count(walk);
    }
    for (size_t i = 0; i < walk->live_count; i++)
        cr_assert_eq(gpucache_allocator_free(walk->f.allocator, walk->live[i].address,
                                             GPUCACHE_FREE_SYNCHRONOUS, 0),
                     GPUCACHE_SUCCESS);
    walk->live_count = 0;
    forget_completed(walk, true);
    accounting_driver_complete_all(walk->f.driver);
    gpucache_allocator_synchronized(walk->f.allocator, true, 0);
    gpucache_allocator_empty_cache(walk->f.allocator);
    cr_assert(gpucache_allocator_check(walk->f.allocator, why, sizeof why), "%s", why);
    struct gpucache_stats stats = stats_of(&walk->f);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_ALL].current, 0,
                 "everything is free and ready: empty_cache returns it all");
    /* The walk went through the interesting paths. */
    cr_assert_gt(stats.inactive_split[GPUCACHE_STAT_ALL].allocated, 0);
    cr_assert_gt(stats.pending_blocks.allocated, 0);
    cr_assert_gt(stats.num_device_free, 0);
    char json[8192];
    gpucache_stats_to_json(&stats, json, sizeof json);
    cr_log_info("%lu operations, %lu out-of-memory results: %s", walk->operations, walk->ooms, json);
}

static struct walk *start_walk(uint64_t seed)
{
    struct walk *walk = calloc(1, sizeof *walk);
    walk->random_state = seed;
    walk->check_reuse_safety = true;
    walk->check_interval = 1;
    walk->free_percent = 48;
    for (int i = 0; i < STREAM_COUNT; i++)
        walk->streams[i] = (gpucache_stream)(i * 0x1000);
    fixture_defaults(&walk->f);
    return walk;
}

static void finish_walk(struct walk *walk)
{
    free(walk->freed);
    fixture_close(&walk->f);
    free(walk);
}

Test(randomized, a_million_operations_over_four_streams, .timeout = 110)
{
    struct walk *walk = start_walk(UINT64_C(0x9E3779B97F4A7C15));
    fixture_open(&walk->f, 6 * GiB);
    accounting_driver_hold_fences(walk->f.driver, true);
    run_walk(walk, operation_count());
    finish_walk(walk);
}

Test(randomized, the_lanes_with_checks_every_97_operations, .timeout = 110)
{
    struct walk *walk = start_walk(UINT64_C(0xC0FFEE));
    walk->check_interval = 97;
    walk->repeat_sizes = true;
    fixture_open(&walk->f, 6 * GiB);
    accounting_driver_hold_fences(walk->f.driver, true);
    run_walk(walk, operation_count());
    uint64_t hits = 0, frees = 0;
    gpucache_allocator_lane_counts(walk->f.allocator, &hits, &frees);
    uint64_t synchronous = gpucache_allocator_lane_synchronous_frees(walk->f.allocator);
    cr_log_info("lanes: %llu hits, %llu frees (%llu synchronous)", (unsigned long long)hits,
                (unsigned long long)frees, (unsigned long long)synchronous);
    /* About one operation in 200 is a lane's hit and one in 1,000 a lane's
     * free here (a miss merges the fronts back and ends what they handed
     * out); a tenth of that proves the walk reaches them. */
    cr_assert_gt(hits, operation_count() / 2000, "the walk must reach the lanes' hits");
    cr_assert_gt(frees, operation_count() / 10000, "the walk must reach the lanes' frees");
    /* A quarter of the frees are synchronous: about one operation in 2,700
     * is a lane's synchronous free. */
    cr_assert_gt(synchronous, operation_count() / 30000,
                 "the walk must reach the lanes' synchronous frees");
    finish_walk(walk);
}

/* Peaks: short walks whose live count climbs, each on a new allocator,
 * so that new peaks come often while blocks wait in the fronts and the
 * lanes serve hits. */
Test(randomized, the_lanes_while_the_live_count_climbs, .timeout = 110)
{
    unsigned long walks = operation_count() / 4000;
    uint64_t hits_total = 0;
    for (unsigned long i = 0; i < walks; i++) {
        struct walk *walk = start_walk(UINT64_C(0x5EED0000) + i);
        walk->check_interval = 13;
        walk->repeat_sizes = true;
        walk->free_percent = 44;
        fixture_open(&walk->f, 6 * GiB);
        accounting_driver_hold_fences(walk->f.driver, true);
        run_walk(walk, 4000);
        uint64_t hits = 0, frees = 0;
        gpucache_allocator_lane_counts(walk->f.allocator, &hits, &frees);
        hits_total += hits;
        finish_walk(walk);
    }
    cr_assert_gt(hits_total, walks * 4, "the walks must reach the lanes' hits");
}

Test(randomized, a_tight_device_with_every_limit_set, .timeout = 110)
{
    struct walk *walk = start_walk(12345);
    walk->f.config.max_split_size = 40 * MiB;
    walk->f.config.max_non_split_rounding = 24 * MiB;
    walk->f.config.per_process_memory_fraction = 0.75;
    walk->f.config.garbage_collection_threshold = 0.6;
    for (int i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        walk->f.config.roundup_power2_divisions[i] = i < 4 ? 4 : 2;
    fixture_open(&walk->f, 1 * GiB);
    accounting_driver_hold_fences(walk->f.driver, true);
    run_walk(walk, operation_count() / 5);
    cr_assert_gt(walk->ooms, 0, "the walk must reach the out-of-memory paths");
    finish_walk(walk);
}

Test(randomized, conservative_and_relaxed_modes, .timeout = 110)
{
    enum gpucache_reuse_mode modes[] = {GPUCACHE_REUSE_CONSERVATIVE, GPUCACHE_REUSE_RELAXED};
    for (int m = 0; m < 2; m++) {
        struct walk *walk = start_walk(777 + (uint64_t)m);
        walk->f.config.reuse = modes[m];
        /* Relaxed mode reuses synchronous frees at once by design. */
        walk->check_reuse_safety = modes[m] != GPUCACHE_REUSE_RELAXED;
        fixture_open(&walk->f, 4 * GiB);
        accounting_driver_hold_fences(walk->f.driver, true);
        run_walk(walk, operation_count() / 10);
        finish_walk(walk);
    }
}

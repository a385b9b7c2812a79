/* Several threads share one device allocator: each allocates on its own
 * stream and frees blocks that other threads allocated; then each runs pairs
 * on its own stream (the fronts' lanes, which take no allocator lock) while
 * another thread flushes the fronts, and no address is ever handed out twice
 * at once. A plain program
 * rather than a Criterion suite: Criterion's runner does not start under
 * ThreadSanitizer, and this test exists for that build. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"

#define THREADS 4
#define ROUNDS 20000
#define SLOTS 64
#define MiB ((size_t)1 << 20)

struct shared {
    struct gpucache_allocator *allocator;
    _Atomic uint64_t slots[SLOTS]; /* blocks handed between threads; 0: empty */
    atomic_ulong failures;
};

struct worker {
    struct shared *shared;
    int index;
};

static int failed(const char *what)
{
    fprintf(stderr, "allocator threads: %s\n", what);
    return 1;
}

static void *work(void *argument)
{
    struct worker *worker = argument;
    struct shared *shared = worker->shared;
    gpucache_stream stream = (gpucache_stream)(0x1000 * (worker->index + 1));
    uint64_t seed = (uint64_t)worker->index * 7919 + 1;
    for (int round = 0; round < ROUNDS; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t size = (seed >> 40) % 3 == 0 ? 1 + (seed >> 20) % (12 * MiB)
                                            : 1 + (seed >> 20) % (64 << 10);
        uint64_t address = 0;
        if (gpucache_allocator_malloc(shared->allocator, size, stream, &address) !=
            GPUCACHE_SUCCESS) {
            atomic_fetch_add(&shared->failures, 1);
            continue;
        }
        /* Swap it into a shared slot and free whatever another thread left. */
        uint64_t previous = atomic_exchange(&shared->slots[(seed >> 8) % SLOTS], address);
        if (previous != 0) {
            enum gpucache_free_kind kind =
                (seed >> 4) % 2 ? GPUCACHE_FREE_STREAM_ORDERED : GPUCACHE_FREE_SYNCHRONOUS;
            if (gpucache_allocator_free(shared->allocator, previous, kind, stream) !=
                GPUCACHE_SUCCESS)
                atomic_fetch_add(&shared->failures, 1);
        }
        if (round % 1000 == 0)
            gpucache_allocator_synchronized(shared->allocator, false, stream);
    }
    return NULL;
}

/* Live addresses of the lane phase: one bucket per 512-byte unit (hashed),
 * claimed with relaxed atomics so that the check adds no ordering between
 * the threads that ThreadSanitizer could take for the allocator's. A bucket
 * another address holds is not checked. */
#define LIVE_BUCKETS ((size_t)1 << 20)
static _Atomic uint64_t live_addresses[LIVE_BUCKETS];
static atomic_int stop_disturbing;

static _Atomic uint64_t *live_bucket(uint64_t address)
{
    return &live_addresses[((address >> 9) * 0x9E3779B97F4A7C15u) >> 44];
}

/* False when `address` is live already: handed out twice. */
static bool live_insert(uint64_t address)
{
    uint64_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(live_bucket(address), &expected, address,
                                                memory_order_relaxed, memory_order_relaxed))
        return true;
    return expected != address;
}

static void live_remove(uint64_t address)
{
    uint64_t expected = address;
    atomic_compare_exchange_strong_explicit(live_bucket(address), &expected, 0,
                                            memory_order_relaxed, memory_order_relaxed);
}

#define LANE_ROUNDS 40000
#define LANE_HELD 8

static void *lane_work(void *argument)
{
    struct worker *worker = argument;
    struct shared *shared = worker->shared;
    gpucache_stream stream = (gpucache_stream)(0x1000 * (worker->index + 1));
    static const size_t sizes[] = {512, 4096, 4000, 65536, MiB};
    uint64_t held[LANE_HELD] = {0};
    uint64_t seed = (uint64_t)worker->index * 104729 + 3;
    for (int round = 0; round < LANE_ROUNDS; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        int slot = (int)((seed >> 33) % LANE_HELD);
        if (held[slot] == 0) {
            uint64_t address = 0;
            size_t size = sizes[(seed >> 40) % (sizeof sizes / sizeof sizes[0])];
            if (gpucache_allocator_malloc(shared->allocator, size, stream, &address) !=
                    GPUCACHE_SUCCESS ||
                !live_insert(address)) {
                atomic_fetch_add(&shared->failures, 1);
                continue;
            }
            held[slot] = address;
            continue;
        }
        uint64_t address = held[slot];
        held[slot] = 0;
        live_remove(address);
        /* Mostly on its own stream or synchronously (the lanes); sometimes
         * on another stream (the ordinary path, with the block a front
         * handed out). */
        unsigned draw = (unsigned)(seed >> 50) % 16;
        enum gpucache_free_kind kind =
            draw == 0 || draw >= 12 ? GPUCACHE_FREE_SYNCHRONOUS : GPUCACHE_FREE_STREAM_ORDERED;
        gpucache_stream on = draw == 1 ? (gpucache_stream)0x77000 : stream;
        if (gpucache_allocator_free(shared->allocator, address, kind, on) != GPUCACHE_SUCCESS)
            atomic_fetch_add(&shared->failures, 1);
    }
    for (int slot = 0; slot < LANE_HELD; slot++)
        if (held[slot] != 0) {
            live_remove(held[slot]);
            if (gpucache_allocator_free(shared->allocator, held[slot],
                                        GPUCACHE_FREE_STREAM_ORDERED, stream) != GPUCACHE_SUCCESS)
                atomic_fetch_add(&shared->failures, 1);
        }
    return NULL;
}

/* The ordinary paths that flush the fronts while the lanes run. */
static void *disturb(void *argument)
{
    struct shared *shared = argument;
    struct gpucache_stats stats;
    char why[256];
    for (unsigned i = 0; !atomic_load(&stop_disturbing); i++) {
        switch (i % 4) {
        case 0: gpucache_allocator_get_stats(shared->allocator, &stats); break;
        case 1: gpucache_allocator_empty_cache(shared->allocator); break;
        case 2:
            if (!gpucache_allocator_check(shared->allocator, why, sizeof why)) {
                fprintf(stderr, "allocator threads: %s\n", why);
                atomic_fetch_add(&shared->failures, 1);
            }
            break;
        default: {
            struct gpucache_sync_point since = gpucache_allocator_sync_point(shared->allocator);
            gpucache_allocator_synchronized_since(shared->allocator, true, 0, since);
        }
        }
    }
    return NULL;
}

static int run_lanes(struct gpucache_allocator *allocator)
{
    static struct shared shared;
    shared.allocator = allocator;
    pthread_t threads[THREADS], disturber;
    struct worker workers[THREADS];
    if (pthread_create(&disturber, NULL, disturb, &shared) != 0)
        return failed("cannot start a thread");
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.shared = &shared, .index = i};
        if (pthread_create(&threads[i], NULL, lane_work, &workers[i]) != 0)
            return failed("cannot start a thread");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    atomic_store(&stop_disturbing, 1);
    pthread_join(disturber, NULL);
    if (atomic_load(&shared.failures) != 0)
        return failed("lanes: a malloc or free failed, or an address was handed out twice");
    uint64_t hits = 0, frees = 0;
    gpucache_allocator_lane_counts(allocator, &hits, &frees);
    uint64_t synchronous = gpucache_allocator_lane_synchronous_frees(allocator);
    if (hits < 1000 || frees < 1000 || synchronous < 500)
        return failed("lanes: the threads did not reach the lanes");
    printf("allocator threads: the lanes served %llu hits and %llu frees (%llu synchronous)\n",
           (unsigned long long)hits, (unsigned long long)frees,
           (unsigned long long)synchronous);
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(allocator, &stats);
    if (stats.allocation[GPUCACHE_STAT_ALL].current != 0)
        return failed("lanes: blocks still allocated after every one was freed");
    char why[256];
    if (!gpucache_allocator_check(allocator, why, sizeof why))
        return failed(why);
    return 0;
}

int main(void)
{
    static struct shared shared;
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    struct accounting_driver *driver = accounting_driver_create((uint64_t)64 << 30, 0);
    shared.allocator = gpucache_allocator_create(&config, accounting_driver_interface(driver), 0);
    if (driver == NULL || shared.allocator == NULL)
        return failed("cannot create the allocator");
    accounting_driver_hold_fences(driver, true);

    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.shared = &shared, .index = i};
        if (pthread_create(&threads[i], NULL, work, &workers[i]) != 0)
            return failed("cannot start a thread");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    if (atomic_load(&shared.failures) != 0)
        return failed("a malloc or free failed");

    char why[256];
    if (!gpucache_allocator_check(shared.allocator, why, sizeof why))
        return failed(why);
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(shared.allocator, &stats);
    int64_t live = 0;
    for (int i = 0; i < SLOTS; i++)
        live += atomic_load(&shared.slots[i]) != 0;
    if (stats.allocation[GPUCACHE_STAT_ALL].current != live)
        return failed("allocation.all.current differs from the blocks still held");
    for (int i = 0; i < SLOTS; i++) {
        uint64_t address = atomic_load(&shared.slots[i]);
        if (address != 0 && gpucache_allocator_free(shared.allocator, address,
                                                    GPUCACHE_FREE_SYNCHRONOUS, 0) != 0)
            return failed("a final free failed");
    }
    if (run_lanes(shared.allocator) != 0)
        return 1;
    gpucache_allocator_synchronized(shared.allocator, true, 0);
    gpucache_allocator_empty_cache(shared.allocator);
    gpucache_allocator_get_stats(shared.allocator, &stats);
    if (stats.reserved_bytes[GPUCACHE_STAT_ALL].current != 0)
        return failed("memory is still reserved after everything was freed");
    if (!gpucache_allocator_check(shared.allocator, why, sizeof why))
        return failed(why);
    gpucache_allocator_destroy(shared.allocator);
    accounting_driver_destroy(driver);
    printf("allocator threads: %d threads x %d rounds, then %d x %d with the lanes, consistent\n",
           THREADS, ROUNDS, THREADS, LANE_ROUNDS);
    return 0;
}

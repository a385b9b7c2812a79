/* Several threads share one device allocator: each allocates on its own
 * stream and frees blocks that other threads allocated. A plain program
 * rather than a Criterion suite: Criterion's runner does not start under
 * ThreadSanitizer, and this test exists for that build. */
#include <pthread.h>
#include <stdatomic.h>
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
    gpucache_allocator_synchronized(shared.allocator, true, 0);
    gpucache_allocator_empty_cache(shared.allocator);
    gpucache_allocator_get_stats(shared.allocator, &stats);
    if (stats.reserved_bytes[GPUCACHE_STAT_ALL].current != 0)
        return failed("memory is still reserved after everything was freed");
    if (!gpucache_allocator_check(shared.allocator, why, sizeof why))
        return failed(why);
    gpucache_allocator_destroy(shared.allocator);
    accounting_driver_destroy(driver);
    printf("allocator threads: %d threads x %d rounds, consistent\n", THREADS, ROUNDS);
    return 0;
}

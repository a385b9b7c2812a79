/* Several threads share one device allocator: each allocates on its own
 * stream and frees blocks that other threads allocated. */
#include <pthread.h>
#include <stdatomic.h>

#include "allocator_fixture.h"

#define THREADS 4
#define ROUNDS 20000
#define SLOTS 64

struct shared {
    struct fixture f;
    _Atomic uint64_t slots[SLOTS]; /* blocks handed between threads; 0: empty */
    atomic_ulong failures;
};

struct worker {
    struct shared *shared;
    int index;
};

static void *work(void *argument)
{
    struct worker *worker = argument;
    struct shared *shared = worker->shared;
    gpucache_stream stream = (gpucache_stream)(0x1000 * (worker->index + 1));
    uint64_t seed = (uint64_t)worker->index * 7919 + 1;
    for (int round = 0; round < ROUNDS; round++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        size_t size = (seed >> 40) % 3 == 0 ? 1 + (seed >> 20) % (12 * MiB) : 1 + (seed >> 20) % (64 * KiB);
        uint64_t address = 0;
        if (gpucache_allocator_malloc(shared->f.allocator, size, stream, &address) !=
            GPUCACHE_SUCCESS) {
            atomic_fetch_add(&shared->failures, 1);
            continue;
        }
        /* Swap it into a shared slot and free whatever another thread left. */
        uint64_t previous = atomic_exchange(&shared->slots[(seed >> 8) % SLOTS], address);
        if (previous != 0) {
            enum gpucache_free_kind kind =
                (seed >> 4) % 2 ? GPUCACHE_FREE_STREAM_ORDERED : GPUCACHE_FREE_SYNCHRONOUS;
            if (gpucache_allocator_free(shared->f.allocator, previous, kind, stream) !=
                GPUCACHE_SUCCESS)
                atomic_fetch_add(&shared->failures, 1);
        }
        if (round % 1000 == 0)
            gpucache_allocator_synchronized(shared->f.allocator, false, stream);
    }
    return NULL;
}

Test(threads, concurrent_malloc_and_free_keep_the_allocator_consistent, .timeout = 110)
{
    static struct shared shared;
    fixture_defaults(&shared.f);
    fixture_open(&shared.f, 64 * GiB);
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){.shared = &shared, .index = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    cr_assert_eq(atomic_load(&shared.failures), 0);
    fixture_check(&shared.f);
    int64_t live = 0;
    for (int i = 0; i < SLOTS; i++)
        live += atomic_load(&shared.slots[i]) != 0;
    cr_assert_eq(stats_of(&shared.f).allocation[GPUCACHE_STAT_ALL].current, live);
    for (int i = 0; i < SLOTS; i++) {
        uint64_t address = atomic_load(&shared.slots[i]);
        if (address != 0)
            free_sync(&shared.f, address);
    }
    gpucache_allocator_synchronized(shared.f.allocator, true, 0);
    gpucache_allocator_empty_cache(shared.f.allocator);
    cr_assert_eq(reserved(&shared.f), 0);
    fixture_close(&shared.f);
}

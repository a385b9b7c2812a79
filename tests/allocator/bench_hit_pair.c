/* Cache-hit malloc + free pair, in nanoseconds: the median over many
 * batches, for one thread and for two or four threads sharing the
 * allocator, each on its own stream, on an empty cache or among 10^6 live
 * blocks of varied sizes with free holes between them.
 *
 *   bench_hit_pair [batches [case]]
 *
 * `case` (1-9) runs one line of the table only. The timed pairs run in
 * run_pairs() alone, so that an instruction count of them is one command:
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=run_pairs \
 *       bench_hit_pair 50 4
 * gives the instructions of 50 000 pairs (divide the total by that). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"

#define MAX_BATCHES 100001
#define PAIRS_PER_BATCH 1000
#define WARM_UP_PAIRS 10000
#define MAX_THREADS 4

static int batches = 2001;

struct run {
    struct gpucache_allocator *allocator;
    pthread_barrier_t *start; /* the threads measure at the same time */
    gpucache_stream stream;
    size_t size;
    enum gpucache_free_kind kind;
    double median_ns;
    int64_t started_ns;
    int64_t finished_ns;
};

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Kept out of line and unspecialized (no clone under another name):
 * callgrind counts exactly this function's instructions. */
#if defined(__clang__)
#define OUT_OF_LINE __attribute__((noinline))
#else
#define OUT_OF_LINE __attribute__((noipa))
#endif
static OUT_OF_LINE void run_pairs(const struct run *run, int pairs)
{
    uint64_t address;
    for (int i = 0; i < pairs; i++) {
        if (gpucache_allocator_malloc(run->allocator, run->size, run->stream, &address) != 0)
            abort();
        gpucache_allocator_free(run->allocator, address, run->kind, run->stream);
    }
}

static void *measure(void *argument)
{
    struct run *run = argument;
    double *per_pair = malloc((size_t)batches * sizeof *per_pair);
    if (per_pair == NULL)
        abort();
    /* Warm up: the first pair creates the segment, later ones hit. */
    for (int i = 0; i < WARM_UP_PAIRS; i++) {
        uint64_t address;
        if (gpucache_allocator_malloc(run->allocator, run->size, run->stream, &address) != 0)
            abort();
        gpucache_allocator_free(run->allocator, address, run->kind, run->stream);
    }
    pthread_barrier_wait(run->start);
    run->started_ns = now_ns();
    for (int batch = 0; batch < batches; batch++) {
        int64_t start = now_ns();
        run_pairs(run, PAIRS_PER_BATCH);
        per_pair[batch] = (double)(now_ns() - start) / PAIRS_PER_BATCH;
    }
    run->finished_ns = now_ns();
    qsort(per_pair, (size_t)batches, sizeof per_pair[0], compare_doubles);
    run->median_ns = per_pair[batches / 2];
    free(per_pair);
    return NULL;
}

/* `count` blocks on `stream`, of sizes from 512 B to 1 MiB with one in 64
 * of 2-8 MiB, every third freed again (on its stream): the free trees then
 * hold a third of them as holes between live blocks. Statistics are read
 * at the end, which merges back whatever waits in a front, as an ordinary
 * program's reads would. */
static void populate(struct gpucache_allocator *allocator, gpucache_stream stream, long count)
{
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (long i = 0; i < count; i++) {
        state = state * 6364136223846793005u + 1442695040888963407u;
        uint64_t draw = state >> 33;
        size_t size = (draw & 63) == 0 ? ((size_t)2 << 20) + (size_t)(draw % (6u << 20))
                                       : 512 + (size_t)(draw % (1u << 20));
        uint64_t address;
        if (gpucache_allocator_malloc(allocator, size, stream, &address) != 0)
            abort();
        if (i % 3 == 2)
            gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, stream);
    }
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(allocator, &stats);
    fprintf(stderr, "%ld blocks: %lld live, %lld segments, %.1f GiB reserved\n", count,
            (long long)stats.allocation[0].current, (long long)stats.segment[0].current,
            (double)stats.reserved_bytes[0].current / (1 << 30));
}

static void report(const char *what, size_t size, enum gpucache_free_kind kind, int threads,
                   long live)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    struct accounting_driver *driver = accounting_driver_create((uint64_t)1 << 46, 0);
    struct gpucache_allocator *allocator =
        gpucache_allocator_create(&config, accounting_driver_interface(driver), 0);
    if (live > 0)
        populate(allocator, (gpucache_stream)0x1000, live);
    struct run runs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        runs[i] = (struct run){allocator, &start, (gpucache_stream)(0x1000 * (i + 1)), size, kind,
                               0, 0, 0};
        pthread_create(&ids[i], NULL, measure, &runs[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(ids[i], NULL);
    /* With several threads the per-thread medians hide the time a thread
     * waits for the lock, so the wall time per pair of all threads counts. */
    int64_t first_start = runs[0].started_ns, last_finish = runs[0].finished_ns;
    for (int i = 1; i < threads; i++) {
        if (runs[i].started_ns < first_start)
            first_start = runs[i].started_ns;
        if (runs[i].finished_ns > last_finish)
            last_finish = runs[i].finished_ns;
    }
    double wall_per_pair = (double)(last_finish - first_start) /
                           ((double)threads * batches * PAIRS_PER_BATCH);
    printf("%-44s%s %d thread%s: median %6.1f ns per pair", what,
           live > 0 ? ", 10^6 live" : "", threads, threads == 1 ? " " : "s", runs[0].median_ns);
    for (int i = 1; i < threads; i++)
        printf(" (thread %d: %.1f)", i + 1, runs[i].median_ns);
    printf(", wall %6.1f ns per pair of all threads\n", wall_per_pair);
    /* Which path the pairs took: a slow figure with few lane hits is the
     * ordinary path's, not the lanes'. */
    uint64_t lane_hits, lane_frees;
    gpucache_allocator_lane_counts(allocator, &lane_hits, &lane_frees);
    double pairs = (double)threads * ((double)batches * PAIRS_PER_BATCH + WARM_UP_PAIRS);
    fprintf(stderr, "  lanes: %.1f %% of hits, %.1f %% of frees\n", 100.0 * (double)lane_hits / pairs,
            100.0 * (double)lane_frees / pairs);
    pthread_barrier_destroy(&start);
    gpucache_allocator_destroy(allocator);
    accounting_driver_destroy(driver);
}

struct bench_case {
    const char *what;
    size_t size;
    enum gpucache_free_kind kind;
    int threads;
    long live; /* blocks allocated (a third freed again) before measuring */
};

static const struct bench_case cases[] = {
    {"4 KiB, cuMemFreeAsync on the same stream", 4096, GPUCACHE_FREE_STREAM_ORDERED, 1, 0},
    {"4 KiB, cuMemFreeAsync on the same stream", 4096, GPUCACHE_FREE_STREAM_ORDERED, 2, 0},
    {"32 MiB, cuMemFreeAsync on the same stream", (size_t)32 << 20,
     GPUCACHE_FREE_STREAM_ORDERED, 1, 0},
    {"4 KiB, cuMemFree (epochs, fences complete)", 4096, GPUCACHE_FREE_SYNCHRONOUS, 1, 0},
    {"4 KiB, cuMemFree (epochs, fences complete)", 4096, GPUCACHE_FREE_SYNCHRONOUS, 2, 0},
    /* 1.5 * 10^6 allocated, a third freed: 10^6 live blocks. */
    {"4 KiB, cuMemFreeAsync on the same stream", 4096, GPUCACHE_FREE_STREAM_ORDERED, 1, 1500000},
    {"4 KiB, cuMemFree (epochs, fences complete)", 4096, GPUCACHE_FREE_SYNCHRONOUS, 1, 1500000},
    {"4 KiB, cuMemFreeAsync on the same stream", 4096, GPUCACHE_FREE_STREAM_ORDERED, 4, 0},
    {"4 KiB, cuMemFree (epochs, fences complete)", 4096, GPUCACHE_FREE_SYNCHRONOUS, 4, 0},
};
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

int main(int argc, char **argv)
{
    int only = 0;
    if (argc > 1)
        batches = atoi(argv[1]);
    if (argc > 2)
        only = atoi(argv[2]);
    if (argc > 3 || batches < 1 || batches > MAX_BATCHES || only < 0 || only > CASE_COUNT) {
        fprintf(stderr, "usage: %s [batches (1-%d, default 2001) [case (1-%d, default all)]]\n",
                argv[0], MAX_BATCHES, CASE_COUNT);
        return 2;
    }
    for (int i = 0; i < CASE_COUNT; i++)
        if (only == 0 || only == i + 1)
            report(cases[i].what, cases[i].size, cases[i].kind, cases[i].threads, cases[i].live);
    return 0;
}

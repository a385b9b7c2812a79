/* The cost of a recorded event: cache-hit malloc + free pairs (each records
 * alloc, free_requested and free_completed) without an observer and with the
 * event log as the allocator's observer, in interleaved batches so that a
 * loaded machine slows both alike.
 *
 *   bench_events [batches [mode]]     mode: both (default), off, log
 *
 * Prints the median ns per pair of each mode and, for `both`, the ns added
 * per recorded event. Instructions: run one mode under callgrind, toggling
 * collection on run_pairs:
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=run_pairs \
 *       bench_events 20 off          (then 20 log)
 * each counts 20 000 pairs; (log - off) / (events printed) is the cost of
 * one recorded event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_config.h"
#include "gpucache_event_log.h"

#define PAIRS_PER_BATCH 1000
#define WARM_UP_PAIRS 10000
#define STREAM ((gpucache_stream)0x1000)

#if defined(__clang__)
#define OUT_OF_LINE __attribute__((noinline))
#else
#define OUT_OF_LINE __attribute__((noipa))
#endif

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

static inline void pairs_of(struct gpucache_allocator *allocator, int pairs)
{
    uint64_t address;
    for (int i = 0; i < pairs; i++) {
        if (gpucache_allocator_malloc(allocator, 4096, STREAM, &address) != 0)
            abort();
        gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, STREAM);
    }
}

static OUT_OF_LINE void run_pairs(struct gpucache_allocator *allocator, int pairs)
{
    pairs_of(allocator, pairs);
}

struct setup {
    struct accounting_driver *driver;
    struct gpucache_allocator *allocator;
    struct gpucache_event_log *log; /* NULL: no observer */
};

static struct setup make(bool observed)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    struct setup setup = {accounting_driver_create((uint64_t)1 << 40, 0), NULL, NULL};
    setup.allocator = gpucache_allocator_create(&config, accounting_driver_interface(setup.driver), 0);
    if (observed) {
        setup.log = gpucache_event_log_create(0);
        gpucache_allocator_set_observer(setup.allocator, gpucache_event_log_observe, setup.log);
    }
    pairs_of(setup.allocator, WARM_UP_PAIRS);
    /* The warm-up's events are not timed; keep the chunks for reuse. */
    if (setup.log)
        gpucache_event_log_clear(setup.log);
    return setup;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 2001;
    const char *mode = argc > 2 ? argv[2] : "both";
    bool run_off = strcmp(mode, "log") != 0, run_log = strcmp(mode, "off") != 0;
    struct setup off = make(false), on = make(true);
    double *off_ns = calloc((size_t)batches, sizeof *off_ns);
    double *on_ns = calloc((size_t)batches, sizeof *on_ns);
    size_t events = 0;
    if (!off_ns || !on_ns || batches < 1)
        return 1;
    for (int batch = 0; batch < batches; batch++) {
        if (run_off) {
            int64_t start = now_ns();
            run_pairs(off.allocator, PAIRS_PER_BATCH);
            off_ns[batch] = (double)(now_ns() - start) / PAIRS_PER_BATCH;
        }
        if (run_log) {
            int64_t start = now_ns();
            run_pairs(on.allocator, PAIRS_PER_BATCH);
            on_ns[batch] = (double)(now_ns() - start) / PAIRS_PER_BATCH;
            /* Steady state, as under the library's limit: the chunks are
             * reused, so first touches of new log memory are not timed. */
            events += gpucache_event_log_count(on.log);
            gpucache_event_log_clear(on.log);
        }
    }
    double per_pair = run_log ? (double)events / ((double)batches * PAIRS_PER_BATCH) : 0;
    qsort(off_ns, (size_t)batches, sizeof *off_ns, compare_doubles);
    qsort(on_ns, (size_t)batches, sizeof *on_ns, compare_doubles);
    printf("events recorded %zu (%.2f per pair)\n", events, per_pair);
    if (run_off)
        printf("off: %.1f ns per pair (median of %d batches)\n", off_ns[batches / 2], batches);
    if (run_log)
        printf("log: %.1f ns per pair\n", on_ns[batches / 2]);
    if (run_off && run_log && per_pair > 0)
        printf("added per recorded event: %.1f ns\n",
               (on_ns[batches / 2] - off_ns[batches / 2]) / per_pair);
    gpucache_event_log_destroy(on.log);
    free(off_ns);
    free(on_ns);
    return 0;
}

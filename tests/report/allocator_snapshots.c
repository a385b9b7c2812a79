/* Runs a seeded workload through the caching allocator (accounting driver,
 * no GPU) with an event log attached, and writes the snapshot the library
 * would write, so the tests can check it with the viewer-faithful checker and
 * read it back with `gpucache replay`.
 *
 *   allocator_snapshots MODE CONF CAPACITY_MIB OUT.json OUT.pickle STATS.json
 *
 * MODE: mixed      streams, synchronous and cross-stream frees, fences held
 *                  back so some blocks end pending, empty_cache now and then
 *       sameStream only stream-ordered frees on the allocating stream (the
 *                  replay then makes exactly the same requests)
 *       oom        allocates until the allocator runs out of memory and
 *                  writes the snapshot at that moment, before any free
 *       abandon    the allocator forgets its segments (context gone) and a
 *                  new one continues on the same log
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"
#include "gpucache_report.h"

#define MiB (UINT64_C(1) << 20)
#define LIVE_MAX 256

static uint64_t random_state = 88172645463325252u;

static uint64_t next_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* Mostly small and medium requests, some large and oversize ones. */
static size_t random_size(void)
{
    switch (next_random() % 8) {
    case 0: case 1: case 2: return 1 + next_random() % 4096;
    case 3: case 4: return 4096 + next_random() % MiB;
    case 5: case 6: return MiB + next_random() % (12 * MiB);
    default: return 12 * MiB + next_random() % (40 * MiB);
    }
}

static const gpucache_stream streams[] = {0, 0xA000, 0xB000};

struct live {
    uint64_t address;
    gpucache_stream stream;
};

struct run {
    struct gpucache_allocator *allocator;
    struct accounting_driver *driver;
    struct live live[LIVE_MAX];
    size_t live_count;
    bool out_of_memory;
};

static void free_one(struct run *run, bool same_stream_only)
{
    size_t index = next_random() % run->live_count;
    struct live victim = run->live[index];
    run->live[index] = run->live[--run->live_count];
    unsigned how = same_stream_only ? 0 : (unsigned)(next_random() % 3);
    gpucache_result result =
        how == 0   ? gpucache_allocator_free(run->allocator, victim.address,
                                             GPUCACHE_FREE_STREAM_ORDERED, victim.stream)
        : how == 1 ? gpucache_allocator_free(run->allocator, victim.address,
                                             GPUCACHE_FREE_SYNCHRONOUS, 0)
                   : gpucache_allocator_free(run->allocator, victim.address,
                                             GPUCACHE_FREE_STREAM_ORDERED,
                                             streams[next_random() % 3]);
    if (result != GPUCACHE_SUCCESS) {
        fprintf(stderr, "free of 0x%llx failed: %d\n", (unsigned long long)victim.address,
                result);
        exit(1);
    }
}

/* One step: usually an allocation while room is left, else a free. */
static void step(struct run *run, bool same_stream_only, bool stop_at_oom)
{
    bool allocate = run->live_count == 0 ||
                    (run->live_count < LIVE_MAX && next_random() % 100 < (stop_at_oom ? 80 : 55));
    if (!allocate) {
        free_one(run, same_stream_only);
        return;
    }
    gpucache_stream stream = streams[next_random() % 3];
    uint64_t address = 0;
    gpucache_result result = gpucache_allocator_malloc(run->allocator, random_size(), stream,
                                                       &address);
    if (result == GPUCACHE_SUCCESS)
        run->live[run->live_count++] = (struct live){address, stream};
    else if (result == GPUCACHE_ERROR_OUT_OF_MEMORY)
        run->out_of_memory = true;
}

static bool write_file(const char *path, bool (*write)(int, void *), void *context)
{
    int fd = gpucache_report_open(path, (long)getpid(), false, "test output");
    if (fd < 0)
        return false;
    bool written = write(fd, context);
    gpucache_report_close(fd);
    return written;
}

struct snapshot_job {
    const struct gpucache_snapshot_source *source;
    enum gpucache_snapshot_encoding encoding;
};

static bool write_snapshot(int fd, void *context)
{
    struct snapshot_job *job = context;
    return gpucache_snapshot_write_allocators(fd, job->encoding, job->source);
}

static bool write_stats(int fd, void *context)
{
    char json[16384];
    size_t length = gpucache_stats_to_json(context, json, sizeof json);
    return length < sizeof json && write(fd, json, length) == (ssize_t)length;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: allocator_snapshots MODE CONF CAPACITY_MIB OUT.json OUT.pickle "
                        "STATS.json\n");
        return 2;
    }
    const char *mode = argv[1];
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    if (gpucache_config_parse(NULL, argv[2], &config, &error) != 0) {
        fprintf(stderr, "%s\n", error.message);
        return 2;
    }
    uint64_t capacity = strtoull(argv[3], NULL, 10) * MiB;
    struct gpucache_event_log *log = gpucache_event_log_create(0);
    struct run run = {.driver = accounting_driver_create(capacity, 0)};
    run.allocator = gpucache_allocator_create(&config, accounting_driver_interface(run.driver), 0);
    gpucache_allocator_set_observer(run.allocator, gpucache_event_log_observe, log);

    bool mixed = strcmp(mode, "mixed") == 0 || strcmp(mode, "abandon") == 0;
    bool oom = strcmp(mode, "oom") == 0;
    if (mixed)
        accounting_driver_hold_fences(run.driver, true);
    for (int index = 0; index < 3000 && !(oom && run.out_of_memory); index++) {
        step(&run, !mixed, oom);
        if (mixed && index % 97 == 0)
            accounting_driver_complete_stream(run.driver, streams[next_random() % 3]);
        if (mixed && index % 499 == 0)
            gpucache_allocator_empty_cache(run.allocator);
        if (strcmp(mode, "abandon") == 0 && index == 1500) {
            gpucache_allocator_abandon(run.allocator);
            run.live_count = 0;
            run.allocator =
                gpucache_allocator_create(&config, accounting_driver_interface(run.driver), 0);
            gpucache_allocator_set_observer(run.allocator, gpucache_event_log_observe, log);
        }
    }
    if (oom && !run.out_of_memory) {
        fprintf(stderr, "the workload never ran out of memory\n");
        return 1;
    }
    char why[256];
    if (!gpucache_allocator_check(run.allocator, why, sizeof why)) {
        fprintf(stderr, "allocator invariant: %s\n", why);
        return 1;
    }
    struct gpucache_snapshot_source source = {&run.allocator, 1, log, &config, argv[2], NULL};
    struct snapshot_job json = {&source, GPUCACHE_SNAPSHOT_JSON};
    struct snapshot_job pickle = {&source, GPUCACHE_SNAPSHOT_PICKLE};
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(run.allocator, &stats);
    bool ok = write_file(argv[4], write_snapshot, &json) &&
              write_file(argv[5], write_snapshot, &pickle) &&
              write_file(argv[6], write_stats, &stats);
    gpucache_allocator_set_observer(run.allocator, NULL, NULL);
    accounting_driver_hold_fences(run.driver, false);
    gpucache_allocator_destroy(run.allocator);
    accounting_driver_destroy(run.driver);
    gpucache_event_log_destroy(log);
    return ok ? 0 : 1;
}

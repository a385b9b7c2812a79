/* Replay throughput: each trace in the folder given (the shared PyTorch
 * snapshots), and a synthetic trace shaped like RMM's random_allocations
 * benchmark, is read once, then replayed with the default configuration on
 * an 80 GiB simulated device until a second has passed; the figure is events
 * replayed per second of the replay loop, and per second including the
 * allocator's creation and teardown. Then `gpucache replay TRACE` prints the
 * native-mode table of each shared trace. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "command_replay.h"
#include "gpucache_config.h"
#include "replay_run.h"
#include "snapshot_reader.h"
#include "trace_loader.h"

#define DEVICE_MEMORY (UINT64_C(80) << 30)
#define MINIMUM_SECONDS 1.0
#define MAX_TRACES 64

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static int compare_names(const void *left, const void *right)
{
    return strcmp(*(char *const *)left, *(char *const *)right);
}

static bool measure(const char *name, const struct replay_trace *trace, double read_seconds,
                    const struct gpucache_config *config)
{
    double loop_seconds = 0, total_seconds = 0;
    size_t runs = 0;
    double start = now_seconds();
    while (total_seconds < MINIMUM_SECONDS) {
        struct replay_outcome outcome;
        if (!replay_run(trace, config, DEVICE_MEMORY, NULL, &outcome) || !outcome.completed) {
            fprintf(stderr, "%s: the replay did not complete\n", name);
            return false;
        }
        loop_seconds += outcome.seconds;
        runs++;
        total_seconds = now_seconds() - start;
    }
    double events = (double)trace->event_count * (double)runs;
    printf("%-32s %7zu events  read %7.2f ms  replay %6.2f M events/s (loop)  %6.2f M events/s "
           "(with allocator setup)  %zu runs\n",
           name, trace->event_count, read_seconds * 1e3, events / loop_seconds / 1e6,
           events / total_seconds / 1e6, runs);
    return true;
}

static bool measure_file(const char *path, const struct gpucache_config *config)
{
    struct replay_trace trace;
    struct read_error error;
    double start = now_seconds();
    if (!trace_load(path, SNAPSHOT_ANY_DEVICE, &trace, &error)) {
        fprintf(stderr, "%s: %s\n", path, error.message);
        return false;
    }
    double read_seconds = now_seconds() - start;
    bool ok =
        measure(strrchr(path, '/') ? strrchr(path, '/') + 1 : path, &trace, read_seconds, config);
    replay_trace_destroy(&trace);
    return ok;
}

/* RMM's random_allocations pattern: allocate with probability 73 % while
 * fewer than 1000 allocations and 16000 MiB are live, else free a random live
 * one; sizes uniform in [1 B, 64 MiB]; a fixed seed. */
static bool measure_synthetic(size_t event_count, const struct gpucache_config *config)
{
    enum { MAX_LIVE = 1000 };
    const uint64_t max_size = UINT64_C(64) << 20, max_live_bytes = UINT64_C(16000) << 20;
    uint64_t live_address[MAX_LIVE], live_size[MAX_LIVE], live_bytes = 0,
                                                          state = 0x9E3779B97F4A7C15;
    size_t live = 0;
    struct replay_trace trace;
    struct replay_trace_builder builder;
    struct read_error error;
    double start = now_seconds();
    replay_builder_init(&builder, &trace, "synthetic");
    for (size_t index = 0; index < event_count; index++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        struct replay_record record = {
            .time_us = -1,
            .position = {.origin = REPLAY_ORIGIN_CSV_LINE, .major = (uint32_t)index + 2}};
        bool allocate =
            live == 0 || (state % 100 < 73 && live < MAX_LIVE && live_bytes < max_live_bytes);
        if (allocate) {
            record.action = REPLAY_ALLOC;
            record.size = 1 + (state >> 20) % max_size;
            record.address = (uint64_t)(index + 1) << 27; /* unique, as a fresh pointer */
            live_address[live] = record.address;
            live_size[live++] = record.size;
            live_bytes += record.size;
        } else {
            size_t victim = (size_t)((state >> 32) % live);
            record.action = REPLAY_FREE;
            record.address = live_address[victim];
            record.size = live_size[victim];
            live_bytes -= live_size[victim];
            live_address[victim] = live_address[--live];
            live_size[victim] = live_size[live];
        }
        if (!replay_builder_add(&builder, &record, &error)) {
            fprintf(stderr, "synthetic trace: %s\n", error.message);
            replay_builder_abandon(&builder);
            return false;
        }
    }
    if (!replay_builder_finish(&builder, &error)) {
        fprintf(stderr, "synthetic trace: %s\n", error.message);
        return false;
    }
    bool ok = measure("synthetic (RMM random_allocations)", &trace, now_seconds() - start, config);
    replay_trace_destroy(&trace);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACES_DIR (holding pytorch-snapshots/*.pickle)\n", argv[0]);
        return 2;
    }
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    printf("replay throughput, default configuration, %.0f GiB simulated device\n",
           (double)(DEVICE_MEMORY >> 30));
    int status = measure_synthetic(1000000, &config) ? 0 : 1;

    char folder[4096];
    snprintf(folder, sizeof folder, "%s/pytorch-snapshots", argv[1]);
    DIR *directory = opendir(folder);
    if (!directory) {
        printf("no shared traces at %s\n", folder);
        return status;
    }
    char *paths[MAX_TRACES];
    size_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(directory)) && count < MAX_TRACES) {
        size_t length = strlen(entry->d_name);
        if (length > 7 && strcmp(entry->d_name + length - 7, ".pickle") == 0) {
            paths[count] = malloc(strlen(folder) + length + 2);
            sprintf(paths[count++], "%s/%s", folder, entry->d_name);
        }
    }
    closedir(directory);
    qsort(paths, count, sizeof *paths, compare_names);
    for (size_t index = 0; index < count; index++)
        if (!measure_file(paths[index], &config))
            status = 1;
    for (size_t index = 0; index < count && status == 0; index++) {
        printf("\n$ gpucache replay %s\n", paths[index]);
        fflush(stdout);
        char *arguments[] = {"replay", paths[index], NULL};
        status = command_replay(2, arguments);
    }
    for (size_t index = 0; index < count; index++)
        free(paths[index]);
    return status;
}

/* Replay throughput: each trace in the folder given (the shared PyTorch
 * snapshots) is read once, then replayed with the default configuration on
 * an 80 GiB simulated device until a second has passed; the figure is events
 * replayed per second of the replay loop, and per second including the
 * allocator's creation and teardown. Then `gpucache replay TRACE` prints the
 * native-mode table of each trace. */
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

static bool measure(const char *path, const struct gpucache_config *config)
{
    struct replay_trace trace;
    struct replay_error error;
    double start = now_seconds();
    if (!trace_load(path, SNAPSHOT_ANY_DEVICE, &trace, &error)) {
        fprintf(stderr, "%s: %s\n", path, error.message);
        return false;
    }
    double read_seconds = now_seconds() - start;
    double loop_seconds = 0, total_seconds = 0;
    size_t runs = 0;
    start = now_seconds();
    while (total_seconds < MINIMUM_SECONDS) {
        struct replay_outcome outcome;
        if (!replay_run(&trace, config, DEVICE_MEMORY, NULL, &outcome) || !outcome.completed) {
            fprintf(stderr, "%s: the replay did not complete\n", path);
            replay_trace_destroy(&trace);
            return false;
        }
        loop_seconds += outcome.seconds;
        runs++;
        total_seconds = now_seconds() - start;
    }
    double events = (double)trace.event_count * (double)runs;
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%-32s %6zu events  read %7.2f ms  replay %6.2f M events/s (loop)  %6.2f M events/s "
           "(with allocator setup)  %zu runs\n",
           name, trace.event_count, read_seconds * 1e3, events / loop_seconds / 1e6,
           events / total_seconds / 1e6, runs);
    replay_trace_destroy(&trace);
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACES_DIR (holding pytorch-snapshots/*.pickle)\n", argv[0]);
        return 2;
    }
    char folder[4096];
    snprintf(folder, sizeof folder, "%s/pytorch-snapshots", argv[1]);
    DIR *directory = opendir(folder);
    if (!directory) {
        printf("skipped: no shared traces at %s\n", folder);
        return 77;
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

    struct gpucache_config config;
    gpucache_config_defaults(&config);
    int status = 0;
    printf("replay throughput, default configuration, %.0f GiB simulated device\n",
           (double)(DEVICE_MEMORY >> 30));
    for (size_t index = 0; index < count; index++)
        if (!measure(paths[index], &config))
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

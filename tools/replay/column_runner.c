#include "column_runner.h"

#include "gpucache_report.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gpucache_config.h"
#include "replay_run.h"

/* Slices of the trace an SVG curve is drawn with: finer than a page shows. */
#define SVG_SLICES 1000

/* One progress line for all configurations, rewritten at most ten times a
 * second by whichever thread reports. */
struct progress_board {
    pthread_mutex_t lock;
    const struct replay_column *columns;
    size_t count;
    double *fraction; /* of each configuration's current replay */
    double last_shown;
};

struct column_progress {
    struct progress_board *board;
    size_t column;
};

struct shared_run {
    const struct replay_trace *trace;
    const struct gpucache_config *configs;
    struct replay_column *columns;
    size_t count;
    const struct column_run_options *options;
    struct progress_board *board; /* NULL without progress */
    atomic_size_t next_column;
    atomic_bool out_of_memory;
};

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void show_progress(void *context, size_t done, size_t total)
{
    struct column_progress *progress = context;
    struct progress_board *board = progress->board;
    pthread_mutex_lock(&board->lock);
    board->fraction[progress->column] = total ? (double)done / (double)total : 1.0;
    double now = now_seconds();
    if (done == total || now - board->last_shown >= 0.1) {
        board->last_shown = now;
        fputs("\r\033[Kgpucache replay:", stderr);
        for (size_t column = 0; column < board->count; column++)
            fprintf(stderr, "%s %s %3.0f%%", column ? " |" : "", board->columns[column].label,
                    100 * board->fraction[column]);
        fflush(stderr);
    }
    pthread_mutex_unlock(&board->lock);
}

static bool allocate_timeline(struct replay_timeline *timeline, size_t event_count)
{
    size_t slices = event_count < SVG_SLICES ? (event_count ? event_count : 1) : SVG_SLICES;
    *timeline = (struct replay_timeline){
        .bucket_count = slices,
        .allocated = calloc(slices, sizeof *timeline->allocated),
        .reserved = calloc(slices, sizeof *timeline->reserved),
    };
    return timeline->allocated && timeline->reserved;
}

bool column_snapshot_path(const char *path, size_t index, size_t count, char *out, size_t size)
{
    if (count == 1) {
        int length = snprintf(out, size, "%s", path);
        return length >= 0 && (size_t)length < size;
    }
    char tag[32];
    snprintf(tag, sizeof tag, "-%zu", index + 1);
    return gpucache_report_tagged_path(path, tag, out, size);
}

static bool run_column(struct shared_run *run, size_t index)
{
    const struct column_run_options *options = run->options;
    struct replay_column *column = &run->columns[index];
    struct column_progress context = {.board = run->board, .column = index};
    struct replay_progress progress = {.report = show_progress, .context = &context};
    const struct replay_progress *shown = run->board ? &progress : NULL;
    struct replay_timeline *timeline = options->timelines ? &column->timeline : NULL;
    if (timeline && !allocate_timeline(timeline, run->trace->event_count))
        return false;
    struct replay_observers observers = {
        .progress = shown, .timeline = timeline, .final_state = true};
    char snapshot_path[4096];
    if (options->snapshot_path) {
        if (!column_snapshot_path(options->snapshot_path, index, run->count, snapshot_path,
                                  sizeof snapshot_path))
            snapshot_path[0] = '\0';
        observers.snapshot_path = snapshot_path;
        observers.snapshot_settings = run->columns[index].configuration;
    }
    if (!replay_run(run->trace, &run->configs[index], options->device_memory, &observers,
                    &column->outcome))
        return false;
    column->searched = options->min_device;
    return !options->min_device ||
           replay_find_smallest_device(run->trace, &run->configs[index], options->device_memory,
                                       shown, &column->smallest_device);
}

static void *worker(void *argument)
{
    struct shared_run *run = argument;
    for (;;) {
        size_t index = atomic_fetch_add(&run->next_column, 1);
        if (index >= run->count || atomic_load(&run->out_of_memory))
            return NULL;
        if (!run_column(run, index))
            atomic_store(&run->out_of_memory, true);
    }
}

bool run_columns(const struct replay_trace *trace, const struct gpucache_config *configs,
                 struct replay_column *columns, size_t count,
                 const struct column_run_options *options)
{
    struct progress_board board = {.columns = columns, .count = count, .last_shown = -1};
    struct shared_run run = {
        .trace = trace, .configs = configs, .columns = columns, .count = count, .options = options};
    atomic_init(&run.next_column, 0);
    atomic_init(&run.out_of_memory, false);
    if (options->progress) {
        board.fraction = calloc(count ? count : 1, sizeof *board.fraction);
        if (!board.fraction)
            return false;
        pthread_mutex_init(&board.lock, NULL);
        run.board = &board;
    }
    long processors = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = processors > 0 ? (size_t)processors : 1;
    threads = threads < count ? threads : count;
    pthread_t *helpers = calloc(threads ? threads : 1, sizeof *helpers);
    size_t started = 0;
    /* This thread works too; helpers take the other configurations. */
    while (helpers && started + 1 < threads &&
           pthread_create(&helpers[started], NULL, worker, &run) == 0)
        started++;
    worker(&run);
    for (size_t index = 0; index < started; index++)
        pthread_join(helpers[index], NULL);
    free(helpers);
    if (run.board) {
        fputs("\r\033[K", stderr);
        pthread_mutex_destroy(&board.lock);
        free(board.fraction);
    }
    return !atomic_load(&run.out_of_memory);
}

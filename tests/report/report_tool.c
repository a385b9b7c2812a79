/* Writes reports from fixed or seeded inputs so the Python tests can check
 * them against independent readers (json, pickle, a reimplementation of
 * PyTorch's memory_summary formatting, xmllint).
 *
 *   report_tool summary SEED STATS_JSON SUMMARY_TXT [abbreviated]
 *   report_tool snapshot SCENARIO OUT.json OUT.pickle   (SCENARIO: native, expandable, broken)
 *   report_tool trace OUT_COMPACT OUT_CSV
 *   report_tool svg OUT.svg LABEL...
 *   report_tool report PATTERN                           (the statistics report)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucache_config.h"
#include "gpucache_report.h"

static int create(const char *path)
{
    int fd = gpucache_report_open(path, (long)getpid(), false, "test output");
    if (fd < 0)
        exit(1);
    return fd;
}

/* xorshift: reproducible values of every magnitude the table must format. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

static int64_t random_value(uint64_t *state)
{
    unsigned digits = (unsigned)(next_random(state) % 16);
    uint64_t limit = 1;
    while (digits--)
        limit *= 10;
    return (int64_t)(next_random(state) % limit);
}

static void random_stat(struct gpucache_stat *stat, uint64_t *state)
{
    stat->current = random_value(state);
    stat->peak = random_value(state);
    stat->allocated = random_value(state);
    stat->freed = random_value(state);
}

static int write_summary(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    uint64_t state = strtoull(argv[2], NULL, 10) * 2654435761u + 1;
    struct gpucache_stats stats;
    memset(&stats, 0, sizeof stats);
    struct gpucache_stat *arrays[] = {stats.allocation,     stats.segment,
                                      stats.active,         stats.inactive_split,
                                      stats.allocated_bytes, stats.reserved_bytes,
                                      stats.active_bytes,   stats.inactive_split_bytes,
                                      stats.requested_bytes};
    for (size_t array = 0; array < sizeof arrays / sizeof *arrays; array++)
        for (int type = 0; type < GPUCACHE_STAT_TYPE_COUNT; type++)
            random_stat(&arrays[array][type], &state);
    random_stat(&stats.oversize_allocations, &state);
    random_stat(&stats.oversize_segments, &state);
    stats.num_ooms = random_value(&state);
    stats.num_alloc_retries = random_value(&state);
    stats.max_split_size = -1;

    char json[16384], table[8192];
    size_t length = gpucache_stats_to_json(&stats, json, sizeof json);
    int fd = create(argv[3]);
    if (write(fd, json, length) != (ssize_t)length)
        return 1;
    gpucache_report_close(fd);
    length = gpucache_stats_to_summary(&stats, (int)(state % 8), argc > 5, table, sizeof table);
    fd = create(argv[4]);
    if (write(fd, table, length) != (ssize_t)length)
        return 1;
    gpucache_report_close(fd);
    return 0;
}

/* A scripted history and the final state it leads to, by hand, as the
 * allocator would report them. */
struct scenario {
    struct gpucache_event events[128];
    size_t count;
    uint64_t time_ns;
};

static void event(struct scenario *scenario, enum gpucache_event_action action, uint64_t address,
                  uint64_t size, uint64_t stream)
{
    scenario->time_ns += 1500;
    scenario->events[scenario->count++] = (struct gpucache_event){
        .time_ns = scenario->time_ns, .address = address, .size = size, .stream = stream,
        .thread = 4242, .device = 0, .action = (uint8_t)action};
}

#define MiB (UINT64_C(1) << 20)

static int write_snapshot(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *kind = argv[2];
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    struct scenario scenario = {.time_ns = UINT64_C(1700000000) * 1000000000u};
    struct gpucache_snapshot_builder builder;
    const uint64_t small = 0x7f0000000000, large = 0x7f0000400000, expandable = 0x7f1000000000;
    if (strcmp(kind, "native") == 0 || strcmp(kind, "broken") == 0) {
        event(&scenario, GPUCACHE_EVENT_SEGMENT_ALLOC, small, 2 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_ALLOC, small, 500, 0);
        event(&scenario, GPUCACHE_EVENT_ALLOC, small + 512, 1000, 0);
        event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, small, 500, 0);
        event(&scenario, GPUCACHE_EVENT_FREE_COMPLETED, small, 500, 0);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_ALLOC, large, 20 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_ALLOC, large, 8 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_ALLOC, large + 8 * MiB, 4 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, large + 8 * MiB, 4 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_OOM, 3 * MiB, 64 * MiB, 0);
        /* Integers on each side of every pickle integer encoding's limit. */
        event(&scenario, GPUCACHE_EVENT_OOM, 255, 256, 0);
        event(&scenario, GPUCACHE_EVENT_OOM, 65535, 65536, 0);
        event(&scenario, GPUCACHE_EVENT_OOM, INT32_MAX, UINT64_C(1) << 31, 0);
        event(&scenario, GPUCACHE_EVENT_OOM, UINT64_C(1) << 40, (UINT64_C(1) << 53) - 1, 0);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_ALLOC, 0x7f0002000000, 2 * MiB, 0);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_FREE, 0x7f0002000000, 2 * MiB, 0);
        if (strcmp(kind, "broken") == 0)
            /* A free of a block the final state does not hold as allocated. */
            event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, small, 500, 0);
        gpucache_snapshot_builder_init(&builder, &config, "max_split_size_mb:128");
        gpucache_snapshot_builder_segment(&builder, 0, large, 0, false, true);
        gpucache_snapshot_builder_block(&builder, 8 * MiB, 8 * MiB, GPUCACHE_BLOCK_ACTIVE_ALLOCATED);
        gpucache_snapshot_builder_block(&builder, 4 * MiB, 4 * MiB,
                                        GPUCACHE_BLOCK_ACTIVE_PENDING_FREE);
        gpucache_snapshot_builder_block(&builder, 8 * MiB, 0, GPUCACHE_BLOCK_INACTIVE);
        gpucache_snapshot_builder_segment(&builder, 0, small, 0, false, false);
        gpucache_snapshot_builder_block(&builder, 512, 0, GPUCACHE_BLOCK_INACTIVE);
        gpucache_snapshot_builder_block(&builder, 1024, 1000, GPUCACHE_BLOCK_ACTIVE_ALLOCATED);
        gpucache_snapshot_builder_block(&builder, 2 * MiB - 1536, 0, GPUCACHE_BLOCK_INACTIVE);
    } else if (strcmp(kind, "expandable") == 0) {
        config.expandable_segments = true;
        const uint64_t other = expandable + (UINT64_C(1) << 36);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_MAP, expandable, 20 * MiB, 7);
        event(&scenario, GPUCACHE_EVENT_ALLOC, expandable, 16 * MiB, 7);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_MAP, expandable + 20 * MiB, 20 * MiB, 7);
        event(&scenario, GPUCACHE_EVENT_ALLOC, expandable + 16 * MiB, 16 * MiB, 7);
        event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, expandable, 16 * MiB, 7);
        event(&scenario, GPUCACHE_EVENT_FREE_COMPLETED, expandable, 16 * MiB, 7);
        /* A second segment on another stream, emptied and unmapped again. */
        event(&scenario, GPUCACHE_EVENT_SEGMENT_MAP, other, 2 * MiB, 9);
        event(&scenario, GPUCACHE_EVENT_ALLOC, other, 4096, 9);
        event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, other, 4096, 9);
        event(&scenario, GPUCACHE_EVENT_FREE_COMPLETED, other, 4096, 9);
        event(&scenario, GPUCACHE_EVENT_SEGMENT_UNMAP, other, 2 * MiB, 9);
        gpucache_snapshot_builder_init(&builder, &config, "expandable_segments:True");
        gpucache_snapshot_builder_segment(&builder, 0, expandable, 7, true, true);
        gpucache_snapshot_builder_block(&builder, 16 * MiB, 0, GPUCACHE_BLOCK_INACTIVE);
        gpucache_snapshot_builder_block(&builder, 16 * MiB, 16 * MiB,
                                        GPUCACHE_BLOCK_ACTIVE_ALLOCATED);
        gpucache_snapshot_builder_block(&builder, 8 * MiB, 0, GPUCACHE_BLOCK_INACTIVE);
    } else {
        fprintf(stderr, "unknown scenario %s\n", kind);
        return 2;
    }
    gpucache_snapshot_builder_trace(&builder, 0, scenario.events, scenario.count);
    const struct gpucache_snapshot *snapshot = gpucache_snapshot_builder_finish(&builder);
    if (!snapshot)
        return 1;
    int fd = create(argv[3]);
    bool written = gpucache_snapshot_write_json(fd, snapshot);
    gpucache_report_close(fd);
    fd = create(argv[4]);
    written = gpucache_snapshot_write_pickle(fd, snapshot) && written;
    gpucache_report_close(fd);
    gpucache_snapshot_builder_free(&builder);
    return written ? 0 : 1;
}

static int write_traces(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    /* 5 microseconds before midnight UTC: the trace crosses it. */
    struct scenario scenario = {.time_ns = UINT64_C(1700006400) * 1000000000u - 5000};
    event(&scenario, GPUCACHE_EVENT_SEGMENT_ALLOC, 0x7f0000000000, 2 * MiB, 0);
    event(&scenario, GPUCACHE_EVENT_ALLOC, 0x7f0000000000, 500, 0);
    event(&scenario, GPUCACHE_EVENT_ALLOC, 0x7f0000000200, 700, 0x5555aaaa0000);
    scenario.events[scenario.count - 1].block_size = 1024;
    event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, 0x7f0000000000, 500, 0);
    event(&scenario, GPUCACHE_EVENT_FREE_COMPLETED, 0x7f0000000000, 500, 0);
    event(&scenario, GPUCACHE_EVENT_OOM, 12345, 1 << 30, 0);
    event(&scenario, GPUCACHE_EVENT_FREE_REQUESTED, 0x7f0000000200, 700, 0x5555aaaa0000);
    int fd = create(argv[2]);
    bool written = gpucache_trace_write_compact(fd, scenario.events, scenario.count, NULL);
    gpucache_report_close(fd);
    fd = create(argv[3]);
    written = gpucache_trace_write_rmm_csv(fd, scenario.events, scenario.count) && written;
    gpucache_report_close(fd);
    return written ? 0 : 1;
}

/* Reads a compact trace and prints one event per line, or the error. */
static int read_trace(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    FILE *file = fopen(argv[2], "r");
    if (!file)
        return 2;
    static char text[1 << 20];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    char error[256] = "";
    size_t count;
    struct gpucache_event *events = gpucache_trace_read_compact(text, &count, error, sizeof error);
    if (error[0]) {
        printf("error: %s\n", error);
        return 1;
    }
    for (size_t index = 0; index < count; index++)
        printf("%s %d 0x%llx %llu 0x%llx %u %llu %llu\n",
               gpucache_event_action_name(events[index].action), events[index].device,
               (unsigned long long)events[index].address, (unsigned long long)events[index].size,
               (unsigned long long)events[index].stream, events[index].thread,
               (unsigned long long)events[index].time_ns,
               (unsigned long long)events[index].block_size);
    free(events);
    return 0;
}

static int write_svg(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    size_t series_count = (size_t)argc - 3;
    struct gpucache_memory_series *series = calloc(series_count, sizeof *series);
    struct gpucache_memory_sample *samples[16] = {0};
    for (size_t index = 0; index < series_count && index < 16; index++) {
        /* A sawtooth of allocations under a reserve that grows in steps,
         * different per series, with thousands of points per pixel column. */
        struct gpucache_event *events = calloc(20000, sizeof *events);
        size_t count = 0;
        uint64_t time = 0, reserved = 0;
        for (int step = 0; step < 5000; step++) {
            time += 100000 + (uint64_t)index * 5000;
            uint64_t address = 0x7f0000000000 + (uint64_t)step * MiB;
            if (step % 1000 == 0) {
                events[count++] = (struct gpucache_event){
                    .time_ns = time, .address = 0x7e0000000000 + reserved,
                    .size = (index + 1) * 40 * MiB, .thread = 1,
                    .action = GPUCACHE_EVENT_SEGMENT_ALLOC};
                reserved += (index + 1) * 40 * MiB;
            }
            events[count++] = (struct gpucache_event){
                .time_ns = time, .address = address, .size = MiB * (uint64_t)(step % 7 + 1),
                .thread = 1, .action = GPUCACHE_EVENT_ALLOC};
            events[count++] = (struct gpucache_event){
                .time_ns = time + 50000, .address = address,
                .size = MiB * (uint64_t)(step % 7 + 1), .thread = 1,
                .action = GPUCACHE_EVENT_FREE_REQUESTED};
        }
        samples[index] = gpucache_memory_curve(events, count, &series[index].count);
        series[index].samples = samples[index];
        series[index].label = argv[3 + index];
        free(events);
    }
    int fd = create(argv[2]);
    bool written = gpucache_svg_write(fd, "memory of test <program> & friends", "seconds", series,
                                      series_count);
    gpucache_report_close(fd);
    for (size_t index = 0; index < 16; index++)
        free(samples[index]);
    free(series);
    return written ? 0 : 1;
}

static int write_report(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    if (gpucache_config_parse(NULL, "max_split_size_mb:64,pinned_num_register_threads:4", &config,
                              &error) != 0)
        return 1;
    struct gpucache_bypass_counts counts = {{0}};
    counts.calls[GPUCACHE_BYPASS_FOREIGN_POINTER] = 3;
    counts.calls[GPUCACHE_BYPASS_GRAPH_CAPTURE] = 2;
    struct gpucache_device_report devices[2] = {{.device = 0}, {.device = 1}};
    devices[0].stats.allocated_bytes[GPUCACHE_STAT_ALL].peak = 123456789;
    devices[0].stats.num_ooms = 2;
    devices[0].events_recorded = 10;
    devices[1].stats.reserved_bytes[GPUCACHE_STAT_LARGE_POOL].current = 20 << 20;
    devices[1].events_dropped = 4;
    struct gpucache_report report = {.pid = 77, .config = &config, .bypass_counts = &counts,
                                     .devices = devices, .device_count = 2};
    int fd = gpucache_report_open(argv[2], 77, true, "report");
    if (fd < 0)
        return 3;
    bool written = gpucache_report_write_json(fd, &report);
    gpucache_report_close(fd);
    return written ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "summary") == 0)
        return write_summary(argc, argv);
    if (strcmp(argv[1], "snapshot") == 0)
        return write_snapshot(argc, argv);
    if (strcmp(argv[1], "trace") == 0)
        return write_traces(argc, argv);
    if (strcmp(argv[1], "read-trace") == 0)
        return read_trace(argc, argv);
    if (strcmp(argv[1], "svg") == 0)
        return write_svg(argc, argv);
    if (strcmp(argv[1], "report") == 0)
        return write_report(argc, argv);
    fprintf(stderr, "report_tool: unknown mode %s\n", argv[1]);
    return 2;
}

/* Statistics: PyTorch's names and update rules, and the JSON writer. */
#include <string.h>

#include "allocator_fixture.h"
#include "gpucache_report.h"

static long long json_value(const char *json, const char *name)
{
    char key[96];
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *found = strstr(json, key);
    cr_assert_not_null(found, "%s missing from %s", name, json);
    return strtoll(found + strlen(key), NULL, 10);
}

Test(stats, allocations_move_allocated_active_requested_and_reserved)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    uint64_t small = alloc(&f, 1000);
    uint64_t large = alloc(&f, 3 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].current, 2);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_SMALL_POOL].current, 1);
    cr_assert_eq(stats.allocated_bytes[GPUCACHE_STAT_SMALL_POOL].current, 1024);
    cr_assert_eq(stats.requested_bytes[GPUCACHE_STAT_SMALL_POOL].current, 1000);
    cr_assert_eq(stats.allocated_bytes[GPUCACHE_STAT_LARGE_POOL].current, 3 * MiB);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_ALL].current, 22 * MiB);
    cr_assert_eq(stats.segment[GPUCACHE_STAT_ALL].current, 2);
    cr_assert_eq(stats.num_device_alloc, 2);
    free_on(&f, small, 0);
    free_on(&f, large, 0);
    stats = stats_of(&f);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].current, 0);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].peak, 2);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].allocated, 2);
    cr_assert_eq(stats.allocation[GPUCACHE_STAT_ALL].freed, 2);
    cr_assert_eq(stats.active_bytes[GPUCACHE_STAT_ALL].current, 0);
    cr_assert_eq(stats.reserved_bytes[GPUCACHE_STAT_ALL].current, 22 * MiB);
    fixture_close(&f);
}

Test(stats, pending_blocks_stay_active_until_their_fence)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    accounting_driver_hold_fences(f.driver, true);
    uint64_t a = alloc(&f, 5 * MiB);
    free_sync(&f, a);
    struct gpucache_stats stats = stats_of(&f);
    cr_assert_eq(stats.allocated_bytes[GPUCACHE_STAT_ALL].current, 0);
    cr_assert_eq(stats.active_bytes[GPUCACHE_STAT_ALL].current, 5 * MiB);
    cr_assert_eq(stats.pending_bytes.current, 5 * MiB);
    cr_assert_eq(stats.pending_blocks.current, 1);
    gpucache_allocator_synchronized(f.allocator, true, 0);
    stats = stats_of(&f);
    cr_assert_eq(stats.active_bytes[GPUCACHE_STAT_ALL].current, 0);
    cr_assert_eq(stats.pending_bytes.current, 0);
    cr_assert_eq(stats.pending_bytes.peak, 5 * MiB);
    fixture_close(&f);
}

Test(stats, json_uses_pytorch_flattened_sorted_names)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    alloc(&f, 3 * MiB);
    struct gpucache_stats stats = stats_of(&f);
    size_t needed = gpucache_stats_to_json(&stats, NULL, 0);
    char *json = malloc(needed + 1);
    cr_assert_eq(gpucache_stats_to_json(&stats, json, needed + 1), needed);
    cr_assert_eq(json[0], '{');
    cr_assert_eq(json[needed - 1], '}');
    cr_assert_eq(json_value(json, "allocated_bytes.all.current"), 3 * MiB);
    cr_assert_eq(json_value(json, "reserved_bytes.large_pool.peak"), 20 * MiB);
    cr_assert_eq(json_value(json, "segment.small_pool.current"), 0);
    cr_assert_eq(json_value(json, "max_split_size"), -1);
    cr_assert_eq(json_value(json, "num_device_alloc"), 1);
    json_value(json, "num_alloc_retries");
    json_value(json, "num_sync_all_streams");
    json_value(json, "inactive_split_bytes.all.freed");
    json_value(json, "oversize_segments.current");
    json_value(json, "gpucache.pending_bytes.current");
    json_value(json, "gpucache.driver_nanoseconds");
    /* Sorted: each name is after the one before it. */
    const char *previous = NULL;
    for (const char *quote = strchr(json, '"'); quote != NULL;
         quote = strchr(strchr(quote + 1, '"') + 1, '"')) {
        if (previous != NULL)
            cr_assert_gt(strcmp(quote, previous), 0, "names out of order near %.40s", quote);
        previous = quote;
    }
    char small_buffer[16];
    cr_assert_eq(gpucache_stats_to_json(&stats, small_buffer, sizeof small_buffer), needed);
    cr_assert_eq(strlen(small_buffer), sizeof small_buffer - 1, "truncated, still terminated");
    free(json);
    fixture_close(&f);
}

Test(stats, summary_is_pytorchs_memory_summary_table)
{
    struct fixture f;
    fixture_start(&f, NULL, 1 * GiB);
    alloc(&f, 3 * MiB);
    alloc(&f, 1000);
    struct gpucache_stats stats = stats_of(&f);
    stats.num_ooms = 2;
    size_t needed = gpucache_stats_to_summary(&stats, 1, false, NULL, 0);
    char *table = malloc(needed + 1);
    cr_assert_eq(gpucache_stats_to_summary(&stats, 1, false, table, needed + 1), needed);
    const char *expected_lines[] = {
        "|===========================================================================|",
        "|                  PyTorch CUDA memory summary, device ID 1                 |",
        "|---------------------------------------------------------------------------|",
        "|            CUDA OOMs: 2            |        cudaMalloc retries: 0         |",
        "|===========================================================================|",
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
        "|---------------------------------------------------------------------------|",
        "| Allocated memory      |   3073 KiB |   3073 KiB |   3073 KiB |      0 B   |",
        "|       from large pool |   3072 KiB |   3072 KiB |   3072 KiB |      0 B   |",
        "|       from small pool |      1 KiB |      1 KiB |      1 KiB |      0 B   |",
    };
    const char *line = table;
    for (size_t i = 0; i < sizeof expected_lines / sizeof expected_lines[0]; i++) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end);
        cr_assert_eq((size_t)(end - line), strlen(expected_lines[i]), "line %zu: %.*s", i,
                     (int)(end - line), line);
        cr_assert_eq(strncmp(line, expected_lines[i], (size_t)(end - line)), 0,
                     "line %zu is\n%.*s\nexpected\n%s", i, (int)(end - line), line,
                     expected_lines[i]);
        line = end + 1;
    }
    cr_assert_not_null(strstr(table, "\n| Allocations           |       2    |       2    |"
                                     "       2    |       0    |\n"));
    /* PyTorch steps up a unit only from 768 of the next one. */
    cr_assert_not_null(strstr(table, "\n| GPU reserved memory   |  22528 KiB |  22528 KiB |"
                                     "  22528 KiB |      0 B   |\n"));
    cr_assert_not_null(strstr(table, "\n| Oversize GPU segments |       0    |       0    |"
                                     "       0    |       0    |\n"));
    /* Every line is 75 columns between two bars: 9 metrics of 3 rows, 2 single rows. */
    size_t lines = 0;
    for (line = table; *line != '\0'; line = strchr(line, '\n') + 1, lines++)
        cr_assert_eq(strchr(line, '\n') - line, 77);
    cr_assert_eq(lines, 6 + 9 * 4 + 2 * 2 + 1);
    size_t abbreviated = gpucache_stats_to_summary(&stats, 1, true, NULL, 0);
    cr_assert_eq(abbreviated, needed - 9 * 2 * 78, "abbreviated drops the pool rows");
    free(table);
    fixture_close(&f);
}

Test(stats, summary_units_follow_the_all_row)
{
    struct gpucache_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.allocated_bytes[GPUCACHE_STAT_ALL].current = (int64_t)GiB;
    stats.allocated_bytes[GPUCACHE_STAT_SMALL_POOL].current = 5 * (int64_t)MiB;
    stats.allocation[GPUCACHE_STAT_ALL].allocated = 800000;
    stats.allocation[GPUCACHE_STAT_LARGE_POOL].allocated = 1500;
    char table[8192];
    gpucache_stats_to_summary(&stats, 0, false, table, sizeof table);
    cr_assert_not_null(strstr(table, "| Allocated memory      |   1024 MiB |      0 B   |"));
    cr_assert_not_null(strstr(table, "|       from small pool |      5 MiB |      0 B   |"),
                       "sub-rows share the all row's unit:\n%s", table);
    cr_assert_not_null(strstr(table, "| Allocations           |       0    |       0    |"
                                     "     800 K  |"));
    cr_assert_not_null(strstr(table, "|       from large pool |       0    |       0    |"
                                     "       1 K  |"));
}

/* gpucache_stats_to_summary: the table torch.cuda.memory_summary() prints,
 * to the character, so that tools comparing PyTorch runs read ours too. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpucache_stats.h"

#define TABLE_WIDTH 75

struct text {
    char *out;
    size_t capacity;
    size_t length;
};

static void append(struct text *text, const char *format, ...)
{
    char *at = text->length < text->capacity ? text->out + text->length : NULL;
    size_t room = text->length < text->capacity ? text->capacity - text->length : 0;
    va_list arguments;
    va_start(arguments, format);
    int written = vsnprintf(at, room, format, arguments);
    va_end(arguments);
    if (written > 0)
        text->length += (size_t)written;
}

static void rule(struct text *text, char character)
{
    char line[TABLE_WIDTH + 1];
    memset(line, character, TABLE_WIDTH);
    line[TABLE_WIDTH] = '\0';
    append(text, "|%s|\n", line);
}

static int64_t floor_divide(int64_t value, int64_t divisor)
{
    int64_t quotient = value / divisor;
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient;
}

/* A byte count in the unit chosen from `reference` (the `all` row's value
 * of the same column): PyTorch steps up while the reference is at least
 * 768 of the current unit's next step. */
static void format_size(char cell[32], int64_t size, int64_t reference)
{
    static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t unit = 0;
    double scaled_reference = (double)reference;
    while (unit + 1 < sizeof units / sizeof units[0] && scaled_reference >= 768.0 * 1024) {
        unit++;
        size = floor_divide(size, 1024);
        scaled_reference /= 1024;
    }
    snprintf(cell, 32, "%6lld %s", (long long)size, units[unit]);
}

static void format_count(char cell[32], int64_t count, int64_t reference)
{
    static const char *const units[] = {" ", "K", "M"};
    size_t unit = 0;
    double scaled_reference = (double)reference;
    while (unit + 1 < sizeof units / sizeof units[0] && scaled_reference >= 750.0 * 1000) {
        unit++;
        count = floor_divide(count, 1000);
        scaled_reference /= 1000;
    }
    snprintf(cell, 32, "%7lld %s ", (long long)count, units[unit]);
}

typedef void (*cell_formatter)(char cell[32], int64_t value, int64_t reference);

static void row(struct text *text, const char *name, const struct gpucache_stat *stat,
                const struct gpucache_stat *reference, cell_formatter format)
{
    char cells[4][32];
    format(cells[0], stat->current, reference->current);
    format(cells[1], stat->peak, reference->peak);
    format(cells[2], stat->allocated, reference->allocated);
    format(cells[3], stat->freed, reference->freed);
    append(text, "| %-21s | %s | %s | %s | %s |\n", name, cells[0], cells[1], cells[2], cells[3]);
}

size_t gpucache_stats_to_summary(const struct gpucache_stats *stats, int device, bool abbreviated,
                                 char *out, size_t capacity)
{
    struct text text = {out, capacity, 0};
    if (capacity > 0)
        out[0] = '\0';
    rule(&text, '=');
    append(&text, "| %16s PyTorch CUDA memory summary, device ID %-17d |\n", "", device);
    rule(&text, '-');
    append(&text, "|  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  |\n", "",
           (long long)stats->num_ooms, "", (long long)stats->num_alloc_retries);
    rule(&text, '=');
    append(&text, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");

    const struct {
        const struct gpucache_stat *array;
        const char *name;
        cell_formatter format;
    } metrics[] = {
        {stats->allocated_bytes, "Allocated memory", format_size},
        {stats->active_bytes, "Active memory", format_size},
        {stats->requested_bytes, "Requested memory", format_size},
        {stats->reserved_bytes, "GPU reserved memory", format_size},
        {stats->inactive_split_bytes, "Non-releasable memory", format_size},
        {stats->allocation, "Allocations", format_count},
        {stats->active, "Active allocs", format_count},
        {stats->segment, "GPU reserved segments", format_count},
        {stats->inactive_split, "Non-releasable allocs", format_count},
    };
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const struct gpucache_stat *all = &metrics[i].array[GPUCACHE_STAT_ALL];
        rule(&text, '-');
        row(&text, metrics[i].name, all, all, metrics[i].format);
        if (abbreviated)
            continue;
        row(&text, "      from large pool", &metrics[i].array[GPUCACHE_STAT_LARGE_POOL], all,
            metrics[i].format);
        row(&text, "      from small pool", &metrics[i].array[GPUCACHE_STAT_SMALL_POOL], all,
            metrics[i].format);
    }
    rule(&text, '-');
    row(&text, "Oversize allocations", &stats->oversize_allocations, &stats->oversize_allocations,
        format_count);
    rule(&text, '-');
    row(&text, "Oversize GPU segments", &stats->oversize_segments, &stats->oversize_segments,
        format_count);
    rule(&text, '=');
    return text.length;
}

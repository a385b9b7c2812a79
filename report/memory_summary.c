/* gpucache_memory_summary: torch.cuda.memory_summary()'s table, character for
 * character, so users can diff it against a PyTorch run. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpucache_report.h"

struct text {
    char *out;
    size_t capacity;
    size_t length;
};

static void append(struct text *text, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void append(struct text *text, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    char *at = text->length < text->capacity ? text->out + text->length : NULL;
    size_t room = text->length < text->capacity ? text->capacity - text->length : 0;
    int written = vsnprintf(at, room, format, arguments);
    va_end(arguments);
    if (written > 0)
        text->length += (size_t)written;
}

/* Python's // on possibly negative values. */
static int64_t floor_divide(int64_t value, int64_t divisor)
{
    int64_t quotient = value / divisor;
    return quotient * divisor != value && (value < 0) ? quotient - 1 : quotient;
}

/* PyTorch's _format_size: the unit steps up while the row's reference value
 * (the "all" row of the column) is at least 768 of the next unit down. */
static void format_size(char cell[32], int64_t value, int64_t reference)
{
    static const char *const units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t unit = 0;
    double scaled_reference = (double)reference;
    while (unit + 1 < sizeof units / sizeof *units && scaled_reference >= 768 * 1024) {
        unit++;
        value = floor_divide(value, 1024);
        scaled_reference /= 1024;
    }
    snprintf(cell, 32, "%6" PRId64 " %s", value, units[unit]);
}

/* PyTorch's _format_count: steps of 1000 from a reference of 750,000. */
static void format_count(char cell[32], int64_t value, int64_t reference)
{
    static const char *const units[] = {" ", "K", "M"};
    size_t unit = 0;
    double scaled_reference = (double)reference;
    while (unit + 1 < sizeof units / sizeof *units && scaled_reference >= 750 * 1000) {
        unit++;
        value = floor_divide(value, 1000);
        scaled_reference /= 1000;
    }
    snprintf(cell, 32, "%7" PRId64 " %s ", value, units[unit]);
}

typedef void cell_formatter(char cell[32], int64_t value, int64_t reference);

static void row(struct text *text, const char *name, const struct gpucache_stat *stat,
                const struct gpucache_stat *reference, cell_formatter *format)
{
    char cells[4][32];
    format(cells[0], stat->current, reference->current);
    format(cells[1], stat->peak, reference->peak);
    format(cells[2], stat->allocated, reference->allocated);
    format(cells[3], stat->freed, reference->freed);
    append(text, "| %-21s | %s | %s | %s | %s |\n", name, cells[0], cells[1], cells[2], cells[3]);
}

static void rule(struct text *text, char character)
{
    char line[76];
    memset(line, character, 75);
    line[75] = '\0';
    append(text, "|%s|\n", line);
}

size_t gpucache_memory_summary(const struct gpucache_stats *stats, int device, bool abbreviated,
                               char *out, size_t capacity)
{
    struct text text = {out, capacity, 0};
    if (capacity)
        out[0] = '\0';
    const struct {
        const struct gpucache_stat *array;
        const char *name;
        cell_formatter *format;
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

    rule(&text, '=');
    /* PyTorch's title and OOM lines: their widths are PyTorch's, so the title
     * line is one column short of the others, as in PyTorch. */
    append(&text, "|%18sPyTorch CUDA memory summary, device ID %-17d |\n", "", device);
    rule(&text, '-');
    append(&text, "|%12sCUDA OOMs: %-12" PRId64 " | %6s cudaMalloc retries: %-8" PRId64 "  |\n",
           "", stats->num_ooms, "", stats->num_alloc_retries);
    rule(&text, '=');
    append(&text, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
    for (size_t index = 0; index < sizeof metrics / sizeof *metrics; index++) {
        const struct gpucache_stat *all = &metrics[index].array[GPUCACHE_STAT_ALL];
        rule(&text, '-');
        row(&text, metrics[index].name, all, all, metrics[index].format);
        if (!abbreviated) {
            row(&text, "      from large pool", &metrics[index].array[GPUCACHE_STAT_LARGE_POOL],
                all, metrics[index].format);
            row(&text, "      from small pool", &metrics[index].array[GPUCACHE_STAT_SMALL_POOL],
                all, metrics[index].format);
        }
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

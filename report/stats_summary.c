/* gpucache_stats_to_summary: the table torch.cuda.memory_summary() prints,
 * to the character, so that tools comparing PyTorch runs read ours too. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpucache_report.h"

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

/* How a column's cells are scaled: PyTorch picks the unit from `reference`
 * (the `all` row's value of the same column), stepping up while that is
 * at least `threshold` of the current unit, and divides with the floor. */
struct unit_scale {
    const char *const *units;
    size_t unit_count;
    int64_t step;
    double threshold;
    const char *format; /* value, unit */
};

static const char *const size_units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
static const struct unit_scale bytes_scale = {size_units, 6, 1024, 768.0 * 1024, "%6lld %s"};
static const char *const count_units[] = {" ", "K", "M"};
static const struct unit_scale count_scale = {count_units, 3, 1000, 750.0 * 1000, "%7lld %s "};

static void format_cell(char cell[32], const struct unit_scale *scale, int64_t value,
                        int64_t reference)
{
    size_t unit = 0;
    double scaled_reference = (double)reference;
    while (unit + 1 < scale->unit_count && scaled_reference >= scale->threshold) {
        unit++;
        value = floor_divide(value, scale->step);
        scaled_reference /= (double)scale->step;
    }
    snprintf(cell, 32, scale->format, (long long)value, scale->units[unit]);
}

static void row(struct text *text, const char *name, const struct gpucache_stat *stat,
                const struct gpucache_stat *reference, const struct unit_scale *scale)
{
    char cells[4][32];
    format_cell(cells[0], scale, stat->current, reference->current);
    format_cell(cells[1], scale, stat->peak, reference->peak);
    format_cell(cells[2], scale, stat->allocated, reference->allocated);
    format_cell(cells[3], scale, stat->freed, reference->freed);
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
        const struct unit_scale *scale;
    } metrics[] = {
        {stats->allocated_bytes, "Allocated memory", &bytes_scale},
        {stats->active_bytes, "Active memory", &bytes_scale},
        {stats->requested_bytes, "Requested memory", &bytes_scale},
        {stats->reserved_bytes, "GPU reserved memory", &bytes_scale},
        {stats->inactive_split_bytes, "Non-releasable memory", &bytes_scale},
        {stats->allocation, "Allocations", &count_scale},
        {stats->active, "Active allocs", &count_scale},
        {stats->segment, "GPU reserved segments", &count_scale},
        {stats->inactive_split, "Non-releasable allocs", &count_scale},
    };
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const struct gpucache_stat *all = &metrics[i].array[GPUCACHE_STAT_ALL];
        rule(&text, '-');
        row(&text, metrics[i].name, all, all, metrics[i].scale);
        if (abbreviated)
            continue;
        row(&text, "      from large pool", &metrics[i].array[GPUCACHE_STAT_LARGE_POOL], all,
            metrics[i].scale);
        row(&text, "      from small pool", &metrics[i].array[GPUCACHE_STAT_SMALL_POOL], all,
            metrics[i].scale);
    }
    rule(&text, '-');
    row(&text, "Oversize allocations", &stats->oversize_allocations, &stats->oversize_allocations,
        &count_scale);
    rule(&text, '-');
    row(&text, "Oversize GPU segments", &stats->oversize_segments, &stats->oversize_segments,
        &count_scale);
    rule(&text, '=');
    return text.length;
}

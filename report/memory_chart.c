/* Memory over time as SVG: the allocated and reserved curves of several
 * configurations on one time axis, with a title, axes, units and a legend,
 * so the file is readable without the terminal output that came with it. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_report.h"
#include "report_output.h"

struct gpucache_memory_sample *gpucache_memory_curve(const struct gpucache_event *events,
                                                     size_t count, size_t *sample_count)
{
    *sample_count = 0;
    struct gpucache_memory_sample *samples = malloc((count + 1) * sizeof *samples);
    if (!samples)
        return NULL;
    uint64_t start = count ? events[0].time_ns : 0;
    int64_t allocated = 0, reserved = 0;
    samples[(*sample_count)++] = (struct gpucache_memory_sample){0, 0, 0};
    for (size_t index = 0; index < count; index++) {
        const struct gpucache_event *event = &events[index];
        int64_t size = (int64_t)event->size;
        /* Allocated is allocated_bytes, the block sizes, as in every table;
         * a version-1 trace knows only the requested sizes. */
        int64_t block = event->block_size ? (int64_t)event->block_size : size;
        switch (event->action) {
        case GPUCACHE_EVENT_ALLOC:
            allocated += block;
            break;
        case GPUCACHE_EVENT_FREE_REQUESTED:
            /* allocated_bytes drops at the program's free, as in PyTorch. */
            allocated -= block;
            break;
        case GPUCACHE_EVENT_SEGMENT_ALLOC:
        case GPUCACHE_EVENT_SEGMENT_MAP:
            reserved += size;
            break;
        case GPUCACHE_EVENT_SEGMENT_FREE:
        case GPUCACHE_EVENT_SEGMENT_UNMAP:
            reserved -= size;
            break;
        default:
            continue;
        }
        double time = event->time_ns >= start ? (double)(event->time_ns - start) / 1e9 : 0;
        samples[(*sample_count)++] = (struct gpucache_memory_sample){
            time, allocated > 0 ? (uint64_t)allocated : 0, reserved > 0 ? (uint64_t)reserved : 0};
    }
    return samples;
}

const char *gpucache_format_bytes(uint64_t bytes, char *buffer, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t unit = 0;
    double value = (double)bytes;
    while (value >= 1024 && unit + 1 < sizeof units / sizeof *units) {
        value /= 1024;
        unit++;
    }
    if (unit == 0)
        snprintf(buffer, size, "%" PRIu64 " B", bytes);
    else
        snprintf(buffer, size, "%.2f %s", value, units[unit]);
    return buffer;
}

/* The plot's frame; the legend goes below it, as tall as it needs, so no
 * label is ever cut. */
enum { WIDTH = 1000, HEIGHT = 560, LEFT = 100, RIGHT = 40, TOP = 56, BOTTOM = 70 };
/* Legend text: characters per line (12px sans-serif averages well under
 * 8px a character, so a line of this many fits the picture's width), and
 * the distance between lines. */
enum { LEGEND_CHARACTERS = 110, LEGEND_LINE = 18 };

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static void write_escaped(struct report_output *output, const char *text)
{
    for (; *text; text++) {
        switch (*text) {
        case '&': report_output_string(output, "&amp;"); break;
        case '<': report_output_string(output, "&lt;"); break;
        case '>': report_output_string(output, "&gt;"); break;
        case '"': report_output_string(output, "&quot;"); break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            if ((unsigned char)*text >= 0x20 || *text == '\t')
                report_output_bytes(output, text, 1);
        }
    }
}

/* A step of 1, 2, 2.5 or 5 times a power of ten giving about `ticks` ticks. */
static double nice_step(double range, int ticks)
{
    double raw = range / ticks;
    double power = pow(10, floor(log10(raw)));
    const double factors[] = {1, 2, 2.5, 5, 10};
    for (size_t index = 0; index < sizeof factors / sizeof *factors; index++)
        if (factors[index] * power >= raw)
            return factors[index] * power;
    return 10 * power;
}

struct axes {
    double time_max;
    double bytes_max;
    double unit; /* bytes per unit of the y labels */
    const char *unit_name;
};

static double x_of(const struct axes *axes, double time)
{
    return LEFT + (WIDTH - LEFT - RIGHT) * (axes->time_max > 0 ? time / axes->time_max : 0);
}

static double y_of(const struct axes *axes, uint64_t bytes)
{
    return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * ((double)bytes / axes->bytes_max);
}

static void write_axes(struct report_output *output, const struct axes *axes,
                       const char *time_label)
{
    double x0 = LEFT, x1 = WIDTH - RIGHT, y0 = HEIGHT - BOTTOM, y1 = TOP;
    report_output_format(output,
                         "<g stroke=\"#000\" stroke-width=\"1\">"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                         x0, y0, x1, y0, x0, y0, x0, y1);
    double step = nice_step(axes->bytes_max / axes->unit, 5);
    for (double value = 0; value * axes->unit <= axes->bytes_max * 1.0001; value += step) {
        double y = y_of(axes, (uint64_t)(value * axes->unit));
        report_output_format(output,
                             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#ddd\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
                             x0, y, x1, y, x0 - 6, y + 4, value, axes->unit_name);
    }
    step = axes->time_max > 0 ? nice_step(axes->time_max, 6) : 1;
    for (double time = 0; time <= axes->time_max * 1.0001; time += step) {
        double x = x_of(axes, time);
        report_output_format(output,
                             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#000\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                             x, y0, x, y0 + 5, x, y0 + 20, time);
        if (axes->time_max <= 0)
            break;
    }
    report_output_format(output,
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", (x0 + x1) / 2,
                         HEIGHT - 24);
    write_escaped(output, time_label);
    report_output_format(output,
                         "</text>\n<text transform=\"translate(22 %.1f) rotate(-90)\" "
                         "text-anchor=\"middle\">memory (%s)</text>\n",
                         (y0 + y1) / 2, axes->unit_name);
}

/* A step curve; samples that fall on the same pixel column keep their
 * extremes so a peak stays visible however long the run. */
static void write_curve(struct report_output *output, const struct axes *axes,
                        const struct gpucache_memory_series *series, bool reserved,
                        const char *colour)
{
    /* As `gpucache replay --svg` draws them: reserved solid, allocated dashed. */
    report_output_format(output,
                         "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
                         colour, reserved ? "2" : "1.5",
                         reserved ? "" : " stroke-dasharray=\"6 4\"");
    double last_y = y_of(axes, 0);
    long column = -1;
    double column_low = 0, column_high = 0;
    for (size_t index = 0; index < series->count; index++) {
        const struct gpucache_memory_sample *sample = &series->samples[index];
        double x = x_of(axes, sample->time);
        double y = y_of(axes, reserved ? sample->reserved : sample->allocated);
        long pixel = lround(x);
        if (pixel == column) {
            if (y < column_high)
                column_high = y;
            if (y > column_low)
                column_low = y;
            last_y = y;
            continue;
        }
        if (column >= 0)
            report_output_format(output, "%ld,%.1f %ld,%.1f %ld,%.1f ", column, column_low, column,
                                 column_high, column, last_y);
        report_output_format(output, "%ld,%.1f ", pixel, last_y);
        column = pixel;
        column_low = column_high = last_y = y;
    }
    if (column >= 0)
        report_output_format(output, "%ld,%.1f %ld,%.1f %ld,%.1f %d,%.1f", column, column_low,
                             column, column_high, column, last_y, WIDTH - RIGHT, last_y);
    /* A tooltip naming the curve and its peak. */
    uint64_t peak = 0;
    for (size_t index = 0; index < series->count; index++) {
        uint64_t value = reserved ? series->samples[index].reserved
                                  : series->samples[index].allocated;
        peak = value > peak ? value : peak;
    }
    char peak_text[64];
    report_output_string(output, "\"><title>");
    write_escaped(output, series->label);
    report_output_format(output, ": %s, peak %s</title></polyline>\n",
                         reserved ? "reserved" : "allocated",
                         gpucache_format_bytes(peak, peak_text, sizeof peak_text));
}

/* A cross where a series stopped early, on its reserved curve. */
static void write_stop(struct report_output *output, const struct axes *axes,
                       const struct gpucache_memory_series *series, const char *colour)
{
    uint64_t reserved = 0;
    for (size_t index = 0; index < series->count && series->samples[index].time <= series->stop_time;
         index++)
        reserved = series->samples[index].reserved;
    double x = x_of(axes, series->stop_time), y = y_of(axes, reserved);
    report_output_format(output,
                         "<path d=\"M%.1f,%.1f l10,10 m0,-10 l-10,10\" stroke=\"%s\" "
                         "stroke-width=\"2\"><title>",
                         x - 5, y - 5, colour);
    write_escaped(output, series->label);
    report_output_string(output, ": ");
    write_escaped(output, series->stop_note);
    report_output_string(output, "</title></path>\n");
}

/* The next piece of `text` from `*start` that fits `width` characters,
 * broken after a ',' or a space when it must be; returns its length and
 * moves `*start` past it. */
static size_t next_piece(const char **start, size_t width)
{
    const char *text = *start;
    size_t length = strlen(text);
    if (length <= width) {
        *start = text + length;
        return length;
    }
    size_t cut = width;
    while (cut > width / 2 && text[cut - 1] != ',' && text[cut - 1] != ' ')
        cut--;
    if (cut <= width / 2)
        cut = width;
    *start = text + cut;
    return cut;
}

/* Lines the legend needs for `series`: the label, wrapped, then its peaks. */
static unsigned legend_entry_lines(const struct gpucache_memory_series *series)
{
    unsigned lines = 0;
    const char *cursor = series->label;
    do {
        next_piece(&cursor, LEGEND_CHARACTERS - 4);
        lines++;
    } while (*cursor);
    return lines + 1;
}

static unsigned legend_height(const struct gpucache_memory_series *series, size_t series_count)
{
    unsigned lines = 1;
    for (size_t index = 0; index < series_count; index++)
        lines += legend_entry_lines(&series[index]);
    return lines * LEGEND_LINE + (unsigned)series_count * 6 + 16;
}

static void write_legend(struct report_output *output,
                         const struct gpucache_memory_series *series, size_t series_count,
                         const uint64_t *peaks_allocated, const uint64_t *peaks_reserved)
{
    int x = LEFT, y = HEIGHT + 4;
    report_output_format(output,
                         "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">solid: reserved, dashed: "
                         "allocated</text>\n",
                         x, y);
    for (size_t index = 0; index < series_count; index++) {
        const char *colour = palette[index % (sizeof palette / sizeof *palette)];
        y += LEGEND_LINE + 6;
        report_output_format(output,
                             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                             "stroke-width=\"3\"/>\n",
                             x, y - 4, x + 20, y - 4, colour);
        /* The whole configuration string, wrapped: a label is never cut. */
        const char *cursor = series[index].label;
        bool first = true;
        do {
            const char *piece = cursor;
            size_t length = next_piece(&cursor, LEGEND_CHARACTERS - 4);
            if (!first)
                y += LEGEND_LINE;
            first = false;
            char text[LEGEND_CHARACTERS + 1];
            snprintf(text, sizeof text, "%.*s", (int)length, piece);
            report_output_format(output, "<text x=\"%d\" y=\"%d\">", x + 26, y);
            write_escaped(output, text);
            report_output_string(output, "</text>\n");
        } while (*cursor);
        char allocated[64], reserved[64];
        y += LEGEND_LINE;
        report_output_format(output,
                             "<text x=\"%d\" y=\"%d\" font-size=\"11\">peak %s "
                             "allocated, %s reserved</text>\n",
                             x + 26, y,
                             gpucache_format_bytes(peaks_allocated[index], allocated,
                                                   sizeof allocated),
                             gpucache_format_bytes(peaks_reserved[index], reserved,
                                                   sizeof reserved));
    }
}

bool gpucache_svg_write(int fd, const char *title, const char *time_label,
                        const struct gpucache_memory_series *series, size_t series_count)
{
    struct report_output output;
    report_output_init(&output, fd);
    uint64_t *peaks = calloc(2 * (series_count + 1), sizeof *peaks);
    if (!peaks) {
        report_output_finish(&output);
        return false;
    }
    uint64_t *peaks_reserved = peaks + series_count + 1;
    struct axes axes = {.time_max = 0, .bytes_max = 0};
    for (size_t index = 0; index < series_count; index++) {
        for (size_t sample = 0; sample < series[index].count; sample++) {
            const struct gpucache_memory_sample *point = &series[index].samples[sample];
            if (point->allocated > peaks[index])
                peaks[index] = point->allocated;
            if (point->reserved > peaks_reserved[index])
                peaks_reserved[index] = point->reserved;
            if (point->time > axes.time_max)
                axes.time_max = point->time;
        }
        double highest = (double)(peaks[index] > peaks_reserved[index] ? peaks[index]
                                                                        : peaks_reserved[index]);
        if (highest > axes.bytes_max)
            axes.bytes_max = highest;
    }
    static const char *const unit_names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t unit = 0;
    axes.unit = 1;
    while (unit + 1 < sizeof unit_names / sizeof *unit_names && axes.bytes_max >= axes.unit * 1024) {
        axes.unit *= 1024;
        unit++;
    }
    axes.unit_name = unit_names[unit];
    if (axes.bytes_max <= 0)
        axes.bytes_max = 1;
    /* Headroom so the highest curve does not sit on the frame. */
    axes.bytes_max *= 1.05;

    int height = HEIGHT + (int)legend_height(series, series_count);
    report_output_format(&output,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                         "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                         "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                         "<text x=\"%d\" y=\"28\" font-size=\"16\" font-weight=\"bold\">",
                         WIDTH, height, WIDTH, height, LEFT);
    write_escaped(&output, title);
    report_output_string(&output, "</text>\n");
    write_axes(&output, &axes, time_label);
    for (size_t index = 0; index < series_count; index++) {
        const char *colour = palette[index % (sizeof palette / sizeof *palette)];
        write_curve(&output, &axes, &series[index], true, colour);
        write_curve(&output, &axes, &series[index], false, colour);
        if (series[index].stop_note)
            write_stop(&output, &axes, &series[index], colour);
    }
    write_legend(&output, series, series_count, peaks, peaks_reserved);
    report_output_string(&output, "</svg>\n");
    free(peaks);
    return report_output_finish(&output);
}

#include "replay_svg.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* Layout in SVG user units. */
#define WIDTH 960.0
#define PLOT_LEFT 90.0
#define PLOT_TOP 50.0
#define PLOT_WIDTH 840.0
#define PLOT_HEIGHT 380.0
#define LEGEND_LINE 20.0
#define TICKS 5

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

/* Writes `text` with the five XML special characters escaped. */
static void write_escaped(FILE *out, const char *text)
{
    for (; *text; text++) {
        switch (*text) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            fputc(*text, out);
        }
    }
}

/* The smallest 1, 2 or 5 times a power of ten at least `rough`. */
static double nice_step(double rough)
{
    double power = pow(10, floor(log10(rough)));
    for (int index = 0; index < 3; index++) {
        static const double multiples[] = {1, 2, 5};
        if (multiples[index] * power >= rough)
            return multiples[index] * power;
    }
    return 10 * power;
}

struct scale {
    double maximum;   /* the axis ends here, in the axis unit */
    double step;      /* between ticks, in the axis unit */
    double unit;      /* bytes (or events) per axis unit */
    const char *name; /* the axis unit's name */
};

static struct scale bytes_scale(uint64_t largest)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    struct scale scale = {.unit = 1, .name = names[0]};
    for (size_t index = 1; index < sizeof names / sizeof *names && largest >= 1024 * scale.unit;
         index++) {
        scale.unit *= 1024;
        scale.name = names[index];
    }
    double top = largest > 0 ? (double)largest / scale.unit : 1;
    scale.step = nice_step(top / TICKS);
    scale.maximum = ceil(top / scale.step) * scale.step;
    return scale;
}

static double x_of(double event, double events)
{
    return PLOT_LEFT + PLOT_WIDTH * event / events;
}

static double y_of(uint64_t bytes, const struct scale *scale)
{
    return PLOT_TOP + PLOT_HEIGHT * (1 - (double)bytes / scale->unit / scale->maximum);
}

static void write_axes(FILE *out, const struct scale *y, double events)
{
    fprintf(out, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
    for (double tick = 0; tick <= y->maximum + y->step / 2; tick += y->step) {
        double position = PLOT_TOP + PLOT_HEIGHT * (1 - tick / y->maximum);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
                PLOT_LEFT, position, PLOT_LEFT + PLOT_WIDTH, position, PLOT_LEFT - 6, position + 4,
                tick, y->name);
    }
    double step = nice_step(events / TICKS);
    for (double tick = 0; tick <= events; tick += step)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
                x_of(tick, events), PLOT_TOP + PLOT_HEIGHT + 18, tick);
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">events</text>\n"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333\"/>\n</g>\n",
            PLOT_LEFT + PLOT_WIDTH / 2, PLOT_TOP + PLOT_HEIGHT + 36, PLOT_LEFT, PLOT_TOP,
            PLOT_WIDTH, PLOT_HEIGHT);
}

/* One curve: each slice drawn flat at its largest value. */
static void write_curve(FILE *out, const struct replay_column *column, const uint64_t *values,
                        const char *what, const char *colour, const char *dash,
                        const struct scale *y, double events)
{
    const struct replay_timeline *timeline = &column->timeline;
    double slice = events / (double)timeline->bucket_count;
    uint64_t peak = 0;
    fprintf(out,
            "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s "
            "points=\"",
            what, colour, dash);
    for (size_t bucket = 0; bucket < timeline->buckets_reached; bucket++) {
        double y_position = y_of(values[bucket], y);
        fprintf(out, "%.1f,%.1f %.1f,%.1f ", x_of((double)bucket * slice, events), y_position,
                x_of((double)(bucket + 1) * slice, events), y_position);
        peak = values[bucket] > peak ? values[bucket] : peak;
    }
    char peak_text[64];
    fprintf(out, "\"><title>");
    write_escaped(out, column->label);
    fprintf(out, ": %s, peak %s</title></polyline>\n", what,
            replay_format_bytes(peak, peak_text, sizeof peak_text));
}

/* A cross where the configuration ran out of memory. */
static void write_failure(FILE *out, const struct replay_column *column, const char *colour,
                          const struct scale *y, double events)
{
    const struct replay_outcome *outcome = &column->outcome;
    double x = x_of((double)outcome->failed_event, events);
    double y_position = y_of((uint64_t)outcome->stats.reserved_bytes[GPUCACHE_STAT_ALL].current, y);
    fprintf(out,
            "<path class=\"failure\" d=\"M%.1f,%.1f l10,10 m0,-10 l-10,10\" stroke=\"%s\" "
            "stroke-width=\"2\"><title>",
            x - 5, y_position - 5, colour);
    write_escaped(out, column->label);
    fprintf(out, ": stopped at event %zu</title></path>\n", outcome->failed_event);
}

static void write_legend(FILE *out, const struct replay_report *report, double top)
{
    for (size_t index = 0; index < report->column_count; index++) {
        const char *colour = colours[index % (sizeof colours / sizeof *colours)];
        double y = top + LEGEND_LINE * (double)index;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"5,3\"/>"
                "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
                PLOT_LEFT, y, PLOT_LEFT + 24, y, colour, PLOT_LEFT + 30, y, PLOT_LEFT + 54, y,
                colour, PLOT_LEFT + 62, y + 4);
        write_escaped(out, report->columns[index].label);
        fprintf(out, " (solid: reserved, dashed: allocated)</text>\n");
    }
}

void replay_write_svg(FILE *out, const struct replay_report *report)
{
    uint64_t largest = 0;
    for (size_t index = 0; index < report->column_count; index++) {
        const struct replay_timeline *timeline = &report->columns[index].timeline;
        for (size_t bucket = 0; bucket < timeline->buckets_reached; bucket++) {
            largest = timeline->reserved[bucket] > largest ? timeline->reserved[bucket] : largest;
            largest = timeline->allocated[bucket] > largest ? timeline->allocated[bucket] : largest;
        }
    }
    struct scale y = bytes_scale(largest);
    double events = report->trace->event_count > 0 ? (double)report->trace->event_count : 1;
    double legend_top = PLOT_TOP + PLOT_HEIGHT + 64;
    double height = legend_top + LEGEND_LINE * (double)report->column_count + 10;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.1f\" y=\"28\" font-size=\"15\">gpucache replay: ",
            WIDTH, height, WIDTH, height, PLOT_LEFT);
    write_escaped(out, report->trace_path);
    fprintf(out, "</text>\n");
    write_axes(out, &y, events);
    for (size_t index = 0; index < report->column_count; index++) {
        const struct replay_column *column = &report->columns[index];
        const char *colour = colours[index % (sizeof colours / sizeof *colours)];
        write_curve(out, column, column->timeline.reserved, "reserved", colour, "", &y, events);
        write_curve(out, column, column->timeline.allocated, "allocated", colour,
                    " stroke-dasharray=\"5,3\"", &y, events);
        if (!column->outcome.completed)
            write_failure(out, column, colour, &y, events);
    }
    write_legend(out, report, legend_top);
    fprintf(out, "</svg>\n");
}

/* The statistics report: configuration, pass-through counts and every
 * device's memory_stats() as one JSON object. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gpucache_config.h"
#include "gpucache_report.h"
#include "report_output.h"

static const char *const reason_names[GPUCACHE_BYPASS_REASON_COUNT] = {
    [GPUCACHE_BYPASS_CONFIGURED] = "configured",
    [GPUCACHE_BYPASS_ASYNC_BACKEND] = "async_backend",
    [GPUCACHE_BYPASS_FOREIGN_POINTER] = "foreign_pointer",
    [GPUCACHE_BYPASS_EXPLICIT_POOL] = "explicit_pool",
    [GPUCACHE_BYPASS_GRAPH_CAPTURE] = "graph_capture",
    [GPUCACHE_BYPASS_AFTER_FORK] = "after_fork",
    [GPUCACHE_BYPASS_NO_ALLOCATOR] = "no_allocator",
};

const char *gpucache_bypass_reason_name(enum gpucache_bypass_reason reason)
{
    return (unsigned)reason < GPUCACHE_BYPASS_REASON_COUNT ? reason_names[reason] : "?";
}

/* A writer of the size_t f(subject, out, capacity) kind: writes at most
 * `capacity` bytes and returns the length it needed. */
typedef size_t json_filler(const void *subject, char *out, size_t capacity);

static size_t fill_configuration(const void *config, char *out, size_t capacity)
{
    return gpucache_config_to_json(config, out, capacity);
}

static size_t fill_stats(const void *stats, char *out, size_t capacity)
{
    return gpucache_stats_to_json(stats, out, capacity);
}

/* Containers whose compact form is longer than this are written one member
 * per line; shorter ones stay on one line. */
#define INLINE_WIDTH 80

static void indent(struct report_output *output, unsigned level)
{
    report_output_string(output, "\n");
    for (unsigned i = 0; i < level; i++)
        report_output_string(output, "  ");
}

/* For each '{' or '[' of `text`, the length of its container written
 * compactly (", " and ": " between members), at the bracket's offset. */
static size_t *compact_lengths(const char *text, size_t length)
{
    size_t *lengths = calloc(length + 1, sizeof *lengths);
    size_t *open = calloc(length + 1, sizeof *open);
    size_t *so_far = calloc(length + 1, sizeof *so_far);
    if (!lengths || !open || !so_far) {
        free(lengths);
        free(open);
        free(so_far);
        return NULL;
    }
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        size_t width = 1;
        if (in_string) {
            if (c == '\\' && i + 1 < length) {
                i++;
                width = 2;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            width = 0;
        } else if (c == '"') {
            in_string = true;
        } else if (c == ',' || c == ':') {
            width = 2;
        } else if (c == '{' || c == '[') {
            open[depth] = i;
            so_far[depth] = 0;
            depth++;
            continue;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
            lengths[open[depth]] = so_far[depth] + 2;
            width = lengths[open[depth]];
            if (depth > 0)
                so_far[depth - 1] += width;
            continue;
        }
        if (depth > 0)
            so_far[depth - 1] += width;
    }
    free(open);
    free(so_far);
    return lengths;
}

/* Appends the JSON `text` (compact or not) two spaces per level from
 * `level`, long containers one member per line. */
static void write_pretty(struct report_output *output, const char *text, size_t length,
                         unsigned level)
{
    size_t *lengths = compact_lengths(text, length);
    if (!lengths) {
        output->failed = true;
        return;
    }
    bool expanded[64] = {false};
    unsigned depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (in_string) {
            size_t run = 1;
            if (c == '\\' && i + 1 < length)
                run = 2;
            else if (c == '"')
                in_string = false;
            report_output_bytes(output, text + i, run);
            i += run - 1;
            continue;
        }
        switch (c) {
        case ' ': case '\n': case '\t': case '\r':
            break;
        case '"':
            in_string = true;
            report_output_bytes(output, &c, 1);
            break;
        case '{': case '[': {
            bool empty = lengths[i] <= 2;
            bool expand = !empty && lengths[i] > INLINE_WIDTH && depth < 63;
            report_output_bytes(output, &c, 1);
            if (depth < 63)
                expanded[++depth] = expand;
            if (expand)
                indent(output, level + depth);
            break;
        }
        case '}': case ']':
            if (depth > 0 && expanded[depth])
                indent(output, level + depth - 1);
            if (depth > 0)
                depth--;
            report_output_bytes(output, &c, 1);
            break;
        case ',':
            report_output_string(output, ",");
            if (expanded[depth])
                indent(output, level + depth);
            else
                report_output_string(output, " ");
            break;
        case ':':
            report_output_string(output, ": ");
            break;
        default:
            report_output_bytes(output, &c, 1);
        }
    }
    free(lengths);
}

/* Appends what `fill` writes, laid out from `level`, with a second try
 * when 16 KiB was too small. */
static void write_filled(struct report_output *output, json_filler *fill, const void *subject,
                         unsigned level)
{
    size_t capacity = 16 * 1024;
    for (int attempt = 0; attempt < 2; attempt++) {
        char *text = malloc(capacity);
        if (!text) {
            output->failed = true;
            return;
        }
        size_t needed = fill(subject, text, capacity);
        if (needed < capacity) {
            write_pretty(output, text, needed, level);
            free(text);
            return;
        }
        free(text);
        capacity = needed + 1;
    }
    output->failed = true;
}

bool gpucache_report_write_json(int fd, const struct gpucache_report *report)
{
    struct report_output output;
    report_output_init(&output, fd);
    report_output_format(&output, "{\n  \"pid\": %ld,\n  \"configuration\": ", report->pid);
    if (report->config)
        write_filled(&output, fill_configuration, report->config, 1);
    else
        report_output_string(&output, "null");
    report_output_string(&output, ",\n  \"passthrough_calls\": {");
    for (int reason = 0; reason < GPUCACHE_BYPASS_REASON_COUNT; reason++)
        report_output_format(&output, "%s\n    \"%s\": %" PRIu64, reason ? "," : "",
                             gpucache_bypass_reason_name(reason),
                             report->bypass_counts ? report->bypass_counts->calls[reason] : 0);
    report_output_string(&output, "\n  },\n  \"devices\": [");
    for (size_t index = 0; index < report->device_count; index++) {
        const struct gpucache_device_report *device = &report->devices[index];
        report_output_format(&output, "%s\n    {\n      \"device\": %d,\n      \"stats\": ",
                             index ? "," : "", device->device);
        write_filled(&output, fill_stats, &device->stats, 3);
        report_output_format(&output,
                             ",\n      \"events\": {\"recorded\": %" PRIu64 ", \"dropped\": %" PRIu64
                             "}\n    }",
                             device->events_recorded, device->events_dropped);
    }
    report_output_string(&output, report->device_count ? "\n  ]\n}\n" : "]\n}\n");
    return report_output_finish(&output);
}

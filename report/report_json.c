/* The statistics report: configuration, pass-through counts and every
 * device's memory_stats() as one JSON object. */
#include <inttypes.h>
#include <stdlib.h>

#include "gpucache_config.h"
#include "gpucache_report.h"
#include "report_output.h"

static const char *const reason_names[GPUCACHE_PASSTHROUGH_REASON_COUNT] = {
    [GPUCACHE_PASSTHROUGH_CONFIGURED] = "configured",
    [GPUCACHE_PASSTHROUGH_ASYNC_BACKEND] = "async_backend",
    [GPUCACHE_PASSTHROUGH_FOREIGN_POINTER] = "foreign_pointer",
    [GPUCACHE_PASSTHROUGH_EXPLICIT_POOL] = "explicit_pool",
    [GPUCACHE_PASSTHROUGH_GRAPH_CAPTURE] = "graph_capture",
    [GPUCACHE_PASSTHROUGH_AFTER_FORK] = "after_fork",
    [GPUCACHE_PASSTHROUGH_NO_ALLOCATOR] = "no_allocator",
};

const char *gpucache_passthrough_reason_name(enum gpucache_passthrough_reason reason)
{
    return (unsigned)reason < GPUCACHE_PASSTHROUGH_REASON_COUNT ? reason_names[reason] : "?";
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

/* Appends what `fill` writes, with a second try when 16 KiB was too small. */
static void write_filled(struct report_output *output, json_filler *fill, const void *subject)
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
            report_output_bytes(output, text, needed);
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
    report_output_format(&output, "{\"pid\": %ld, \"configuration\": ", report->pid);
    if (report->config)
        write_filled(&output, fill_configuration, report->config);
    else
        report_output_string(&output, "null");
    report_output_string(&output, ", \"passthrough_calls\": {");
    for (int reason = 0; reason < GPUCACHE_PASSTHROUGH_REASON_COUNT; reason++)
        report_output_format(&output, "%s\"%s\": %" PRIu64, reason ? ", " : "",
                             gpucache_passthrough_reason_name(reason),
                             report->passthrough ? report->passthrough->calls[reason] : 0);
    report_output_string(&output, "}, \"devices\": [");
    for (size_t index = 0; index < report->device_count; index++) {
        const struct gpucache_device_report *device = &report->devices[index];
        report_output_format(&output, "%s{\"device\": %d, \"stats\": ", index ? ", " : "",
                             device->device);
        write_filled(&output, fill_stats, &device->stats);
        report_output_format(&output,
                             ", \"events\": {\"recorded\": %" PRIu64 ", \"dropped\": %" PRIu64 "}}",
                             device->events_recorded, device->events_dropped);
    }
    report_output_string(&output, "]}\n");
    return report_output_finish(&output);
}

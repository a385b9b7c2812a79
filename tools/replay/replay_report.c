#include "replay_report.h"

#include "gpucache_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_driver.h"
#include "gpucache_json.h"

#define CELL_SIZE 64

const char *replay_format_bytes(uint64_t bytes, char *buffer, size_t size)
{
    return gpucache_format_bytes(bytes, buffer, size);
}

static int64_t peak_allocated(const struct replay_outcome *outcome)
{
    return outcome->stats.allocated_bytes[GPUCACHE_STAT_ALL].peak;
}

static int64_t peak_reserved(const struct replay_outcome *outcome)
{
    return outcome->stats.reserved_bytes[GPUCACHE_STAT_ALL].peak;
}

/* Peak allocated over peak reserved; 1 when nothing was reserved. */
static double utilisation(const struct replay_outcome *outcome)
{
    int64_t reserved = peak_reserved(outcome);
    return reserved > 0 ? (double)peak_allocated(outcome) / (double)reserved : 1.0;
}

/* Every time the host waited for the device: whole-device synchronizations
 * and waits on one fence. */
static int64_t synchronizations(const struct replay_outcome *outcome)
{
    return outcome->stats.num_device_synchronizations + outcome->stats.num_fence_waits;
}

enum row {
    ROW_PEAK_ALLOCATED,
    ROW_PEAK_RESERVED,
    ROW_UTILISATION,
    ROW_FRAGMENTATION,
    ROW_DRIVER_ALLOCATIONS,
    ROW_DRIVER_FREES,
    ROW_DRIVER_CALLS,
    ROW_RETRIES,
    ROW_OOMS,
    ROW_SYNCHRONIZATIONS,
    ROW_COMPLETED,
    ROW_SMALLEST_DEVICE,
    ROW_COUNT
};

static const char *const row_names[ROW_COUNT] = {
    [ROW_PEAK_ALLOCATED] = "peak allocated",
    [ROW_PEAK_RESERVED] = "peak reserved",
    [ROW_UTILISATION] = "utilisation",
    [ROW_FRAGMENTATION] = "fragmentation",
    [ROW_DRIVER_ALLOCATIONS] = "driver allocations",
    [ROW_DRIVER_FREES] = "driver frees",
    [ROW_DRIVER_CALLS] = "driver calls",
    [ROW_RETRIES] = "retries",
    [ROW_OOMS] = "OOMs",
    [ROW_SYNCHRONIZATIONS] = "synchronizations",
    [ROW_COMPLETED] = "completed",
    [ROW_SMALLEST_DEVICE] = "smallest device",
};

/* The value of a row that counts events. */
static int64_t row_count(const struct replay_outcome *outcome, enum row row)
{
    switch (row) {
    case ROW_DRIVER_ALLOCATIONS:
        return outcome->stats.num_device_alloc;
    case ROW_DRIVER_FREES:
        return outcome->stats.num_device_free;
    case ROW_DRIVER_CALLS:
        return (int64_t)outcome->driver_calls;
    case ROW_RETRIES:
        return outcome->stats.num_alloc_retries;
    case ROW_OOMS:
        return outcome->stats.num_ooms;
    default:
        return synchronizations(outcome);
    }
}

static void format_cell(const struct replay_column *column, enum row row, char *cell)
{
    const struct replay_outcome *outcome = &column->outcome;
    switch (row) {
    case ROW_PEAK_ALLOCATED:
        replay_format_bytes((uint64_t)peak_allocated(outcome), cell, CELL_SIZE);
        break;
    case ROW_PEAK_RESERVED:
        replay_format_bytes((uint64_t)peak_reserved(outcome), cell, CELL_SIZE);
        break;
    case ROW_UTILISATION:
        snprintf(cell, CELL_SIZE, "%.2f%%", 100 * utilisation(outcome));
        break;
    case ROW_FRAGMENTATION:
        snprintf(cell, CELL_SIZE, "%.2f%%", 100 * (1 - utilisation(outcome)));
        break;
    case ROW_DRIVER_ALLOCATIONS:
    case ROW_DRIVER_FREES:
    case ROW_DRIVER_CALLS:
    case ROW_RETRIES:
    case ROW_OOMS:
    case ROW_SYNCHRONIZATIONS:
        snprintf(cell, CELL_SIZE, "%" PRId64, row_count(outcome, row));
        break;
    case ROW_COMPLETED:
        if (outcome->completed)
            snprintf(cell, CELL_SIZE, "yes");
        else
            snprintf(cell, CELL_SIZE, "no, at event %zu", outcome->failed_event);
        break;
    case ROW_SMALLEST_DEVICE:
        if (column->smallest_device)
            replay_format_bytes(column->smallest_device, cell, CELL_SIZE);
        else
            snprintf(cell, CELL_SIZE, "over 1 PiB");
        break;
    case ROW_COUNT:
        break;
    }
}

/* "1 free", "2 frees". */
static const char *plural(size_t count, const char *one, const char *many)
{
    return count == 1 ? one : many;
}

static void print_header(FILE *out, const struct replay_report *report)
{
    const struct replay_trace *trace = report->trace;
    char capacity[CELL_SIZE];
    fprintf(out, "trace   %s (%s", report->trace_path, trace->format);
    if (strcmp(trace->format, "PyTorch snapshot") == 0)
        fprintf(out, ", device %d", trace->device);
    fprintf(out,
            ")\nevents  %zu: %zu %s, %zu %s, %zu %s alive before the recording "
            "(inferred), %zu %s\n",
            trace->event_count, trace->alloc_count,
            plural(trace->alloc_count, "allocation", "allocations"), trace->free_count,
            plural(trace->free_count, "free", "frees"), trace->inferred_count,
            plural(trace->inferred_count, "allocation", "allocations"), trace->stream_count,
            plural(trace->stream_count, "stream", "streams"));
    fprintf(out, "device  %s simulated\n\n",
            replay_format_bytes(report->device_memory, capacity, sizeof capacity));
}

/* What stopped a configuration: running out of memory is the expected
 * case; any other refusal by the allocator is named with its result code. */
static const char *failure_kind(const struct replay_outcome *outcome,
                                const struct replay_event *event, char *buffer, size_t size)
{
    if (event->action == REPLAY_ALLOC && outcome->failed_result == GPUCACHE_ERROR_OUT_OF_MEMORY)
        return "out of memory";
    snprintf(buffer, size, "the allocator refused the %s (result %d)",
             event->action == REPLAY_ALLOC ? "allocation" : "free", outcome->failed_result);
    return buffer;
}

/* Describes where and why a configuration stopped. */
static void print_failure(FILE *out, const struct replay_report *report,
                          const struct replay_column *column)
{
    const struct replay_outcome *outcome = &column->outcome;
    const struct replay_event *event = &report->trace->events[outcome->failed_event];
    char where[64], kind[64], size[CELL_SIZE], allocated[CELL_SIZE], reserved[CELL_SIZE];
    replay_position_format(event->position, where, sizeof where);
    fprintf(out,
            "%s: %s at event %zu (%s%s): %" PRIu64 " bytes (%s) on stream 0x%" PRIx64
            ", with %s allocated and %s reserved\n",
            column->label, failure_kind(outcome, event, kind, sizeof kind), outcome->failed_event,
            event->inferred ? "allocation alive before the recording, from " : "", where,
            event->size, replay_format_bytes(event->size, size, sizeof size),
            report->trace->streams[event->stream_index],
            replay_format_bytes((uint64_t)outcome->stats.allocated_bytes[GPUCACHE_STAT_ALL].current,
                                allocated, sizeof allocated),
            replay_format_bytes((uint64_t)outcome->stats.reserved_bytes[GPUCACHE_STAT_ALL].current,
                                reserved, sizeof reserved));
    const struct replay_final_state *state = &outcome->final_state;
    uint64_t cached = 0;
    for (size_t index = 0; index < state->block_count; index++)
        if (state->blocks[index].state == GPUCACHE_BLOCK_INACTIVE)
            cached += state->blocks[index].size;
    char cached_text[CELL_SIZE], largest[CELL_SIZE];
    fprintf(
        out, "%*s  then %zu %s, %s free in the cache, the largest free block %s\n",
        (int)strlen(column->label), "", state->segment_count,
        plural(state->segment_count, "segment", "segments"),
        replay_format_bytes(cached, cached_text, sizeof cached_text),
        replay_format_bytes(replay_final_state_largest_free_block(state), largest, sizeof largest));
}

void replay_print_table(FILE *out, const struct replay_report *report)
{
    print_header(out, report);
    size_t columns = report->column_count;
    bool searched = columns > 0 && report->columns[0].searched;
    size_t rows = searched ? ROW_COUNT : ROW_SMALLEST_DEVICE;
    size_t cell_count = rows * columns;
    char(*cells)[CELL_SIZE] = calloc(cell_count > 0 ? cell_count : 1, CELL_SIZE);
    int *widths = calloc(columns ? columns : 1, sizeof *widths);
    if (!cells || !widths) {
        free(cells);
        free(widths);
        fprintf(out, "(out of host memory while printing the table)\n");
        return;
    }
    int label_width = 0;
    for (size_t row = 0; row < rows; row++)
        if ((int)strlen(row_names[row]) > label_width)
            label_width = (int)strlen(row_names[row]);
    for (size_t column = 0; column < columns; column++) {
        widths[column] = (int)strlen(report->columns[column].label);
        for (size_t row = 0; row < rows; row++) {
            char *cell = cells[row * columns + column];
            format_cell(&report->columns[column], (enum row)row, cell);
            if ((int)strlen(cell) > widths[column])
                widths[column] = (int)strlen(cell);
        }
    }
    fprintf(out, "%-*s", label_width, "");
    for (size_t column = 0; column < columns; column++)
        fprintf(out, "  %*s", widths[column], report->columns[column].label);
    fputc('\n', out);
    for (size_t row = 0; row < rows; row++) {
        fprintf(out, "%-*s", label_width, row_names[row]);
        for (size_t column = 0; column < columns; column++)
            fprintf(out, "  %*s", widths[column], cells[row * columns + column]);
        fputc('\n', out);
    }
    free(cells);
    free(widths);
    bool blank_printed = false;
    for (size_t column = 0; column < columns; column++) {
        if (report->columns[column].outcome.completed)
            continue;
        if (!blank_printed)
            fputc('\n', out);
        blank_printed = true;
        print_failure(out, report, &report->columns[column]);
    }
}

static void file_bytes(void *sink, const char *bytes, size_t length)
{
    fwrite(bytes, 1, length, sink);
}

static void print_json_string(FILE *out, const char *text)
{
    gpucache_json_string(text, file_bytes, out);
}

static void print_json_stats(FILE *out, const struct gpucache_stats *stats)
{
    char small[8192];
    size_t needed = gpucache_stats_to_json(stats, small, sizeof small);
    if (needed < sizeof small) {
        fputs(small, out);
        return;
    }
    char *large = malloc(needed + 1);
    if (large) {
        gpucache_stats_to_json(stats, large, needed + 1);
        fputs(large, out);
        free(large);
    } else {
        fputs("null", out);
    }
}

static const char *block_state_name(enum gpucache_block_state state)
{
    switch (state) {
    case GPUCACHE_BLOCK_ACTIVE_ALLOCATED:
        return "active_allocated";
    case GPUCACHE_BLOCK_ACTIVE_PENDING_FREE:
        return "active_pending_free";
    default:
        return "inactive";
    }
}

/* The allocator's segments when the replay ended, with the field names of a
 * memory snapshot's `segments` (frames and pool ids left out). */
static void print_json_segments(FILE *out, const struct replay_final_state *state)
{
    fputs("[", out);
    for (size_t index = 0; index < state->segment_count; index++) {
        const struct gpucache_segment_info *segment = &state->segments[index];
        fprintf(out,
                "%s\n      {\"address\": %" PRIu64
                ", \"total_size\": %zu, \"allocated_size\": %zu, "
                "\"active_size\": %zu, \"requested_size\": %zu, \"stream\": %" PRIu64
                ", \"segment_type\": \"%s\", \"is_expandable\": %s, \"blocks\": [",
                index ? "," : "", segment->address, segment->total_size, segment->allocated_size,
                segment->active_size, segment->requested_size, (uint64_t)segment->stream,
                segment->small_pool ? "small" : "large", segment->expandable ? "true" : "false");
        for (size_t block = 0; block < segment->block_count; block++) {
            const struct gpucache_block_info *info = &segment->blocks[block];
            fprintf(out,
                    "%s{\"address\": %" PRIu64 ", \"size\": %zu, \"requested_size\": %zu, "
                    "\"state\": \"%s\"}",
                    block ? ", " : "", info->address, info->size, info->requested_size,
                    block_state_name(info->state));
        }
        fputs("]}", out);
    }
    fputs(state->segment_count ? "\n     ]" : "]", out);
}

static void print_json_column(FILE *out, const struct replay_report *report,
                              const struct replay_column *column)
{
    const struct replay_outcome *outcome = &column->outcome;
    fputs("    {\"configuration\": ", out);
    print_json_string(out, column->configuration);
    fprintf(out, ",\n     \"completed\": %s,\n     \"failed_request\": ",
            outcome->completed ? "true" : "false");
    if (outcome->completed) {
        fputs("null", out);
    } else {
        const struct replay_event *event = &report->trace->events[outcome->failed_event];
        char where[64];
        fprintf(out, "{\"event\": %zu, \"position\": ", outcome->failed_event);
        print_json_string(out, replay_position_format(event->position, where, sizeof where));
        fprintf(
            out,
            ", \"action\": \"%s\", \"inferred\": %s, \"size\": %" PRIu64 ", \"stream\": %" PRIu64
            ", \"result\": %d, \"out_of_memory\": %s}",
            event->action == REPLAY_ALLOC ? "alloc" : "free", event->inferred ? "true" : "false",
            event->size, report->trace->streams[event->stream_index], outcome->failed_result,
            event->action == REPLAY_ALLOC && outcome->failed_result == GPUCACHE_ERROR_OUT_OF_MEMORY
                ? "true"
                : "false");
    }
    fprintf(out, ",\n     \"utilisation\": %.6f,\n     \"fragmentation\": %.6f,\n",
            utilisation(outcome), 1 - utilisation(outcome));
    fprintf(out, "     \"synchronizations\": %" PRId64 ",\n", synchronizations(outcome));
    fprintf(out, "     \"driver_calls\": %" PRIu64 ",\n", outcome->driver_calls);
    if (column->searched)
        fprintf(out, "     \"smallest_device_memory\": %" PRIu64 ",\n", column->smallest_device);
    fprintf(out, "     \"replay_seconds\": %.6f,\n     \"stats\": ", outcome->seconds);
    print_json_stats(out, &outcome->stats);
    fprintf(out, ",\n     \"largest_free_block\": %" PRIu64 ",\n     \"segments\": ",
            replay_final_state_largest_free_block(&outcome->final_state));
    print_json_segments(out, &outcome->final_state);
    fputc('}', out);
}

void replay_print_json(FILE *out, const struct replay_report *report)
{
    const struct replay_trace *trace = report->trace;
    fputs("{\"trace\": ", out);
    print_json_string(out, report->trace_path);
    fputs(",\n \"format\": ", out);
    print_json_string(out, trace->format);
    fprintf(out,
            ",\n \"device\": %d,\n \"events\": %zu,\n \"allocations\": %zu,\n"
            " \"frees\": %zu,\n \"inferred_allocations\": %zu,\n \"streams\": %zu,\n"
            " \"peak_live_bytes\": %" PRIu64 ",\n \"device_memory\": %" PRIu64 ",\n"
            " \"configurations\": [\n",
            trace->device, trace->event_count, trace->alloc_count, trace->free_count,
            trace->inferred_count, trace->stream_count, trace->peak_live_bytes,
            report->device_memory);
    for (size_t column = 0; column < report->column_count; column++) {
        print_json_column(out, report, &report->columns[column]);
        fputs(column + 1 < report->column_count ? ",\n" : "\n", out);
    }
    fputs(" ]\n}\n", out);
}

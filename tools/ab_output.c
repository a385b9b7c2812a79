/* `gpucache ab`'s output: the table and the JSON of the runs' figures. */
#include "ab_output.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_json.h"
#include "gpucache_report.h"

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int compare_integers(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

enum row {
    ROW_TIME_MEDIAN,
    ROW_TIME_RANGE,
    ROW_PEAK_ALLOCATED,
    ROW_PEAK_RESERVED,
    ROW_UTILISATION,
    ROW_DRIVER_ALLOCATIONS,
    ROW_DRIVER_FREES,
    ROW_SYNCHRONIZATIONS,
    ROW_RETRIES,
    ROW_OOMS,
    ROW_EXIT_STATUS,
    ROW_COUNT
};

static const char *const row_names[ROW_COUNT] = {
    "wall time (median)", "wall time (range)", "peak allocated", "peak reserved",
    "utilisation",        "driver allocations", "driver frees",  "synchronizations",
    "retries",            "OOMs",               "exit status",
};

/* The lower median of one figure over the successful runs. */
static uint64_t median_figure(const struct ab_column *column, size_t offset)
{
    uint64_t values[AB_MAX_REPEAT];
    size_t count = 0;
    for (size_t index = 0; index < column->runs_done; index++)
        if (program_succeeded(&column->runs[index]))
            memcpy(&values[count++], (const char *)&column->runs[index].figures + offset,
                   sizeof values[0]);
    qsort(values, count, sizeof values[0], compare_integers);
    return count ? values[(count - 1) / 2] : 0;
}

static size_t succeeded_runs(const struct ab_column *column)
{
    size_t count = 0;
    for (size_t index = 0; index < column->runs_done; index++)
        count += program_succeeded(&column->runs[index]);
    return count;
}

static void format_cell(const struct ab_column *column, enum row row, char *cell, size_t size)
{
    if (row == ROW_EXIT_STATUS) {
        size_t length = 0;
        cell[0] = '\0';
        for (size_t index = 0; index < column->runs_done && length < size; index++) {
            char status[32];
            const struct program_result *run = &column->runs[index];
            const char *text = run->started && !run->signal
                                   ? (snprintf(status, sizeof status, "%d", run->exit_status), status)
                                   : program_status_text(run, status, sizeof status);
            length += (size_t)snprintf(cell + length, size - length, "%s%s", index ? " " : "",
                                       text);
        }
        return;
    }
    if (succeeded_runs(column) == 0) {
        snprintf(cell, size, "failed");
        return;
    }
    double times[AB_MAX_REPEAT];
    size_t count = 0;
    for (size_t index = 0; index < column->runs_done; index++)
        if (program_succeeded(&column->runs[index]))
            times[count++] = column->runs[index].seconds;
    qsort(times, count, sizeof times[0], compare_doubles);
    uint64_t allocated = median_figure(column, offsetof(struct program_figures, peak_allocated));
    uint64_t reserved = median_figure(column, offsetof(struct program_figures, peak_reserved));
    switch (row) {
    case ROW_TIME_MEDIAN:
        snprintf(cell, size, "%.3f s",
                 count % 2 ? times[count / 2] : (times[count / 2 - 1] + times[count / 2]) / 2);
        break;
    case ROW_TIME_RANGE:
        snprintf(cell, size, "%.3f-%.3f s", times[0], times[count - 1]);
        break;
    case ROW_PEAK_ALLOCATED:
        gpucache_format_bytes(allocated, cell, size);
        break;
    case ROW_PEAK_RESERVED:
        gpucache_format_bytes(reserved, cell, size);
        break;
    case ROW_UTILISATION:
        if (reserved)
            snprintf(cell, size, "%.2f%%", 100.0 * (double)allocated / (double)reserved);
        else
            snprintf(cell, size, "-");
        break;
    default: {
        static const size_t offsets[] = {
            [ROW_DRIVER_ALLOCATIONS] = offsetof(struct program_figures, device_allocations),
            [ROW_DRIVER_FREES] = offsetof(struct program_figures, device_frees),
            [ROW_SYNCHRONIZATIONS] = offsetof(struct program_figures, synchronizations),
            [ROW_RETRIES] = offsetof(struct program_figures, retries),
            [ROW_OOMS] = offsetof(struct program_figures, ooms),
        };
        snprintf(cell, size, "%" PRIu64, median_figure(column, offsets[row]));
    }
    }
}

void ab_print_table(FILE *out, const struct ab_options *options,
                    const struct ab_column *columns, size_t column_count)
{
    fprintf(out, "program ");
    for (char **argument = options->program; *argument; argument++)
        fprintf(out, "%s%s", argument == options->program ? "" : " ", *argument);
    fprintf(out, "\nruns    %u per configuration\n\n", options->repeat);
    size_t label_width = 0;
    for (int row = 0; row < ROW_COUNT; row++)
        if (strlen(row_names[row]) > label_width)
            label_width = strlen(row_names[row]);
    size_t widths[64] = {0};
    char cell[256];
    for (size_t index = 0; index < column_count && index < 64; index++) {
        widths[index] = strlen(columns[index].label);
        for (int row = 0; row < ROW_COUNT; row++) {
            format_cell(&columns[index], (enum row)row, cell, sizeof cell);
            if (strlen(cell) > widths[index])
                widths[index] = strlen(cell);
        }
    }
    fprintf(out, "%-*s", (int)label_width, "");
    for (size_t index = 0; index < column_count && index < 64; index++)
        fprintf(out, "  %*s", (int)widths[index], columns[index].label);
    fputc('\n', out);
    for (int row = 0; row < ROW_COUNT; row++) {
        fprintf(out, "%-*s", (int)label_width, row_names[row]);
        for (size_t index = 0; index < column_count && index < 64; index++) {
            format_cell(&columns[index], (enum row)row, cell, sizeof cell);
            fprintf(out, "  %*s", (int)widths[index], cell);
        }
        fputc('\n', out);
    }
    for (size_t index = 0; index < column_count; index++)
        if (columns[index].output_tail[0])
            fprintf(out, "\n%s: the output of a failed run ends with:\n%s", columns[index].label,
                    columns[index].output_tail);
}

static void file_bytes(void *sink, const char *bytes, size_t length)
{
    fwrite(bytes, 1, length, sink);
}

static void print_json_string(FILE *out, const char *text)
{
    gpucache_json_string(text, file_bytes, out);
}

/* The figures of one run, or a configuration's medians, as JSON members. */
static void print_json_figures(FILE *out, const struct program_figures *figures)
{
    fprintf(out,
            "{\"peak_allocated\": %" PRIu64 ", \"peak_reserved\": %" PRIu64
            ", \"driver_allocations\": %" PRIu64 ", \"driver_frees\": %" PRIu64
            ", \"synchronizations\": %" PRIu64 ", \"retries\": %" PRIu64 ", \"ooms\": %" PRIu64
            ", \"passthrough_calls\": %" PRIu64 "}",
            figures->peak_allocated, figures->peak_reserved, figures->device_allocations,
            figures->device_frees, figures->synchronizations, figures->retries, figures->ooms,
            figures->passthrough_calls);
}

void ab_print_json(FILE *out, const struct ab_options *options,
                   const struct ab_column *columns, size_t column_count)
{
    fprintf(out, "{\"program\": [");
    for (char **argument = options->program; *argument; argument++) {
        fprintf(out, "%s", argument == options->program ? "" : ", ");
        print_json_string(out, *argument);
    }
    fprintf(out, "],\n \"repeat\": %u,\n \"configurations\": [\n", options->repeat);
    for (size_t index = 0; index < column_count; index++) {
        const struct ab_column *column = &columns[index];
        fprintf(out, "  {\"label\": ");
        print_json_string(out, column->label);
        fprintf(out, ", \"configuration\": ");
        print_json_string(out, column->configuration);
        fprintf(out, ", \"baseline\": %s, \"succeeded\": %zu,\n   \"runs\": [",
                column->baseline ? "true" : "false", succeeded_runs(column));
        for (size_t run = 0; run < column->runs_done; run++) {
            const struct program_result *result = &column->runs[run];
            char status[32];
            fprintf(out, "%s\n    {\"status\": ", run ? "," : "");
            print_json_string(out, program_status_text(result, status, sizeof status));
            fprintf(out, ", \"seconds\": %.6f, \"reported\": %s, \"figures\": ", result->seconds,
                    result->figures.reported ? "true" : "false");
            print_json_figures(out, &result->figures);
            fputc('}', out);
        }
        struct program_figures median = {
            .peak_allocated = median_figure(column, offsetof(struct program_figures, peak_allocated)),
            .peak_reserved = median_figure(column, offsetof(struct program_figures, peak_reserved)),
            .device_allocations =
                median_figure(column, offsetof(struct program_figures, device_allocations)),
            .device_frees = median_figure(column, offsetof(struct program_figures, device_frees)),
            .synchronizations =
                median_figure(column, offsetof(struct program_figures, synchronizations)),
            .retries = median_figure(column, offsetof(struct program_figures, retries)),
            .ooms = median_figure(column, offsetof(struct program_figures, ooms)),
            .passthrough_calls =
                median_figure(column, offsetof(struct program_figures, passthrough_calls)),
        };
        fprintf(out, "],\n   \"median\": ");
        if (succeeded_runs(column))
            print_json_figures(out, &median);
        else
            fprintf(out, "null");
        fprintf(out, "}%s\n", index + 1 < column_count ? "," : "");
    }
    fprintf(out, " ]\n}\n");
}

/* `gpucache ab`: runs a program under several configurations (and the
 * pass-through baseline), several times each, and prints one table with a
 * column per configuration. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "gpucache_json.h"
#include "gpucache_report.h"
#include "library_location.h"
#include "program_run.h"

#define BASELINE_CONFIGURATION "passthrough:True"
#define MAX_REPEAT 1000

static const char usage[] =
    "usage: gpucache ab [--conf STRING]... [--baseline] [--repeat N] [--svg FILE]\n"
    "                   [--snapshot FILE] [--json] [--sim [--sim-memory SIZE]\n"
    "                   [--no-racecheck]] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under libgpucache.so once per configuration (N times each) and\n"
    "prints one table, a column per configuration: wall time (median and range),\n"
    "peak allocated and reserved memory, utilisation, driver allocations and frees,\n"
    "synchronizations the library issued, retries, OOMs and every run's exit status.\n"
    "Figures are medians over the runs that succeeded; a run that fails is listed\n"
    "by its status, and a configuration none of whose runs succeeded shows 'failed'.\n"
    "\n"
    "  --conf STRING    a configuration (PYTORCH_ALLOC_CONF syntax); repeat it for more\n"
    "                   columns (default: one column with the default configuration)\n"
    "  --baseline       add a column for the program without the cache\n"
    "                   (passthrough:True: every call goes to the driver)\n"
    "  --repeat N       run each configuration N times (default 1)\n"
    "  --svg FILE       draw allocated and reserved memory over time of every\n"
    "                   configuration (its last successful run) into FILE\n"
    "  --snapshot FILE  write each configuration's final memory snapshot (PyTorch's\n"
    "                   format; a pickle when FILE ends in .pickle, .pkl or .pt, else\n"
    "                   JSON); with several configurations FILE-1.ext, FILE-2.ext, ...\n"
    "  --json           print the results as JSON: every run's status, wall time and\n"
    "                   figures, and each configuration's medians\n"
    "  --sim            run on the simulated device of this build (no GPU needed; the\n"
    "                   program must use the CUDA runtime as a shared library), with\n"
    "                   its race detector on; --sim-memory SIZE sets its memory\n"
    "                   (GPUSIM_MEMORY), --no-racecheck turns the detector off\n"
    "  -h, --help       print this help\n"
    "\n"
    "The program's own output goes to a file that is removed afterwards; the last\n"
    "lines of a failed run's output are shown below the table. Progress is shown\n"
    "on a terminal only. Existing files are never overwritten.\n"
    "Exit status: 0 when every run succeeded, 1 when some failed, 2 for bad usage,\n"
    "127 when the program or the library cannot be found.\n";

struct options {
    const char **configurations;
    size_t configuration_count;
    bool baseline;
    unsigned repeat;
    const char *svg_path;
    const char *snapshot_path;
    bool json;
    bool sim;
    bool racecheck;
    const char *sim_memory;
    char **program;
};

struct column {
    const char *label;
    const char *configuration;
    bool baseline;
    struct program_result *runs; /* `repeat` of them */
    size_t runs_done;
    char output_tail[512];       /* of the last failed run */
    char directory[PATH_MAX];    /* of the last successful run, kept for its files */
};

static int parse_options(int argc, char **argv, struct options *options)
{
    static const struct option long_options[] = {
        {"conf", required_argument, NULL, 'c'},  {"baseline", no_argument, NULL, 'b'},
        {"repeat", required_argument, NULL, 'r'}, {"svg", required_argument, NULL, 's'},
        {"snapshot", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
        {"sim", no_argument, NULL, 'S'},            {"sim-memory", required_argument, NULL, 'M'},
        {"no-racecheck", no_argument, NULL, 'N'},   {"help", no_argument, NULL, 'h'},
        {0},
    };
    *options = (struct options){.repeat = 1, .racecheck = true};
    options->configurations = calloc((size_t)argc + 1, sizeof *options->configurations);
    if (!options->configurations)
        return 2;
    opterr = 0;
    optind = 0;
    int option;
    while ((option = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
        char *end;
        switch (option) {
        case 'c':
            options->configurations[options->configuration_count++] = optarg;
            break;
        case 'b':
            options->baseline = true;
            break;
        case 'r': {
            unsigned long value = strtoul(optarg, &end, 10);
            if (*optarg < '1' || *optarg > '9' || *end || value > MAX_REPEAT) {
                fprintf(stderr, "gpucache ab: --repeat: '%s' is not a number of runs (expected "
                                "1 to %d)\n", optarg, MAX_REPEAT);
                return 2;
            }
            options->repeat = (unsigned)value;
            break;
        }
        case 's':
            options->svg_path = optarg;
            break;
        case 'p':
            options->snapshot_path = optarg;
            break;
        case 'j':
            options->json = true;
            break;
        case 'S':
            options->sim = true;
            break;
        case 'M':
            options->sim_memory = optarg;
            break;
        case 'N':
            options->racecheck = false;
            break;
        case 'h':
            fputs(usage, stdout);
            return 1;
        default:
            fprintf(stderr, "gpucache ab: %s '%s' (see gpucache ab --help)\n",
                    option == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "gpucache ab: no program to run (usage: gpucache ab [--conf STRING]... "
                        "[--baseline] [--repeat N] -- PROGRAM [ARGS...])\n");
        return 2;
    }
    if ((options->sim_memory || !options->racecheck) && !options->sim) {
        fprintf(stderr, "gpucache ab: --sim-memory and --no-racecheck apply only with --sim\n");
        return 2;
    }
    options->program = argv + optind;
    return 0;
}

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
static uint64_t median_figure(const struct column *column, size_t offset)
{
    uint64_t values[MAX_REPEAT];
    size_t count = 0;
    for (size_t index = 0; index < column->runs_done; index++)
        if (program_succeeded(&column->runs[index]))
            memcpy(&values[count++], (const char *)&column->runs[index].figures + offset,
                   sizeof values[0]);
    qsort(values, count, sizeof values[0], compare_integers);
    return count ? values[(count - 1) / 2] : 0;
}

static size_t succeeded_runs(const struct column *column)
{
    size_t count = 0;
    for (size_t index = 0; index < column->runs_done; index++)
        count += program_succeeded(&column->runs[index]);
    return count;
}

static void format_cell(const struct column *column, enum row row, char *cell, size_t size)
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
    double times[MAX_REPEAT];
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

static void print_table(FILE *out, const struct options *options, const struct column *columns,
                        size_t column_count)
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

static void print_json(FILE *out, const struct options *options, const struct column *columns,
                       size_t column_count)
{
    fprintf(out, "{\"program\": [");
    for (char **argument = options->program; *argument; argument++) {
        fprintf(out, "%s", argument == options->program ? "" : ", ");
        print_json_string(out, *argument);
    }
    fprintf(out, "],\n \"repeat\": %u,\n \"configurations\": [\n", options->repeat);
    for (size_t index = 0; index < column_count; index++) {
        const struct column *column = &columns[index];
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

/* The last lines of a run's output (at most ~400 bytes). */
static void keep_output_tail(const char *directory, char *tail, size_t size)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/output", directory);
    FILE *file = fopen(path, "r");
    tail[0] = '\0';
    if (!file)
        return;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    long start = length > (long)size - 1 ? length - (long)size + 1 : 0;
    fseek(file, start, SEEK_SET);
    size_t got = fread(tail, 1, size - 1, file);
    tail[got] = '\0';
    fclose(file);
    if (got && tail[got - 1] != '\n' && got + 1 < size) {
        tail[got] = '\n';
        tail[got + 1] = '\0';
    }
}

static bool copy_to_new_file(const char *from, const char *to)
{
    FILE *source = fopen(from, "rb");
    if (!source)
        return false;
    int fd = gpucache_report_open(to, (long)getpid(), false, "snapshot");
    bool ok = fd >= 0;
    char buffer[65536];
    size_t got;
    while (ok && (got = fread(buffer, 1, sizeof buffer, source)) > 0)
        ok = write(fd, buffer, got) == (ssize_t)got;
    fclose(source);
    gpucache_report_close(fd);
    return ok;
}

/* The file --snapshot names for the number-th cached column of `count`:
 * FILE itself for one, FILE-N.ext for several. */
static bool snapshot_path(const char *path, size_t number, size_t count, char *out, size_t size)
{
    if (count == 1) {
        int length = snprintf(out, size, "%s", path);
        return length >= 0 && (size_t)length < size;
    }
    char tag[32];
    snprintf(tag, sizeof tag, "-%zu", number);
    return gpucache_report_tagged_path(path, tag, out, size);
}

/* Refuses an output path that exists, is a symlink or cannot be created
 * before the first run, not after all of them. */
static bool output_paths_free(const struct options *options, size_t cached_columns)
{
    if (options->svg_path &&
        !gpucache_report_path_is_free(options->svg_path, (long)getpid(), "chart"))
        return false;
    for (size_t number = 1; options->snapshot_path && number <= cached_columns; number++) {
        char path[PATH_MAX + 64];
        if (!snapshot_path(options->snapshot_path, number, cached_columns, path, sizeof path)) {
            fprintf(stderr, "gpucache ab: --snapshot: the path '%s' is too long\n",
                    options->snapshot_path);
            return false;
        }
        if (!gpucache_report_path_is_free(path, (long)getpid(), "snapshot"))
            return false;
    }
    return true;
}

static void show_progress(bool terminal, size_t done, size_t total, const char *label)
{
    if (!terminal)
        return;
    if (done == total)
        fprintf(stderr, "\r\033[K");
    else
        fprintf(stderr, "\r\033[Kgpucache ab: run %zu of %zu (%s)", done + 1, total, label);
    fflush(stderr);
}

static int finish(struct column *columns, size_t column_count, struct options *options, int status)
{
    for (size_t index = 0; index < column_count; index++) {
        for (size_t run = 0; run < columns[index].runs_done; run++)
            free(columns[index].runs[run].samples);
        free(columns[index].runs);
        if (columns[index].directory[0])
            program_remove_directory(columns[index].directory);
    }
    free(columns);
    free(options->configurations);
    return status;
}

int command_ab(int argc, char **argv)
{
    struct options options;
    int parsed = parse_options(argc, argv, &options);
    if (parsed != 0) {
        free(options.configurations);
        return parsed == 1 ? 0 : parsed;
    }
    if (options.configuration_count == 0)
        options.configurations[options.configuration_count++] = "";
    char why[1400];
    for (size_t index = 0; index < options.configuration_count; index++) {
        if (!program_configuration_usable(options.configurations[index], why, sizeof why)) {
            fprintf(stderr, "gpucache ab: %s\n", why);
            free(options.configurations);
            return 2;
        }
    }
    char library[PATH_MAX];
    if (!library_location_find(library, sizeof library, why, sizeof why)) {
        fprintf(stderr, "gpucache ab: %s\n", why);
        free(options.configurations);
        return 127;
    }
    static struct program_sim_settings sim;
    if (options.sim &&
        !program_sim_settings(&sim, options.sim_memory, options.racecheck, why, sizeof why)) {
        fprintf(stderr, "gpucache ab: --sim: %s\n", why);
        free(options.configurations);
        return 127;
    }
    if (!output_paths_free(&options, options.configuration_count)) {
        free(options.configurations);
        return 2;
    }
    size_t column_count = options.configuration_count + options.baseline;
    struct column *columns = calloc(column_count, sizeof *columns);
    if (!columns) {
        free(options.configurations);
        return 2;
    }
    for (size_t index = 0; index < column_count; index++) {
        struct column *column = &columns[index];
        column->baseline = options.baseline && index == 0;
        column->configuration = column->baseline
                                    ? BASELINE_CONFIGURATION
                                    : options.configurations[index - options.baseline];
        column->label = column->baseline ? "baseline"
                        : column->configuration[0] ? column->configuration
                                                   : "default";
        column->runs = calloc(options.repeat, sizeof *column->runs);
        if (!column->runs)
            return finish(columns, column_count, &options, 2);
    }
    const char *snapshot_suffix =
        options.snapshot_path && gpucache_snapshot_encoding_for_path(options.snapshot_path) ==
                                     GPUCACHE_SNAPSHOT_PICKLE
            ? ".pickle"
            : ".json";
    bool terminal = isatty(STDERR_FILENO);
    size_t total = column_count * options.repeat, done = 0;
    bool all_succeeded = true;
    /* Runs alternate between configurations so that a machine getting
     * slower or faster during the comparison affects every column alike. */
    for (unsigned repeat = 0; repeat < options.repeat; repeat++) {
        for (size_t index = 0; index < column_count; index++, done++) {
            struct column *column = &columns[index];
            show_progress(terminal, done, total, column->label);
            char directory[PATH_MAX];
            if (!program_make_directory(directory, sizeof directory)) {
                fprintf(stderr, "gpucache ab: cannot create a directory for the reports\n");
                return finish(columns, column_count, &options, 127);
            }
            struct program_request request = {
                .library = library,
                .configuration = column->configuration,
                .argv = options.program,
                .directory = directory,
                .trace = options.svg_path != NULL,
                .snapshot_suffix = options.snapshot_path && !column->baseline ? snapshot_suffix
                                                                              : NULL,
                .capture_output = true,
                .environment = options.sim ? sim.environment : NULL,
            };
            struct program_result *result = &column->runs[column->runs_done];
            if (!program_run(&request, result, why, sizeof why)) {
                show_progress(terminal, total, total, "");
                fprintf(stderr, "gpucache ab: %s\n", why);
                program_remove_directory(directory);
                return finish(columns, column_count, &options, 127);
            }
            column->runs_done++;
            if (program_succeeded(result)) {
                if (column->directory[0])
                    program_remove_directory(column->directory);
                memcpy(column->directory, directory, sizeof directory);
            } else {
                all_succeeded = false;
                keep_output_tail(directory, column->output_tail, sizeof column->output_tail);
                program_remove_directory(directory);
            }
        }
    }
    show_progress(terminal, total, total, "");
    if (options.json)
        print_json(stdout, &options, columns, column_count);
    else
        print_table(stdout, &options, columns, column_count);

    bool files_ok = true;
    if (options.svg_path) {
        struct gpucache_memory_series series[64];
        size_t count = 0;
        for (size_t index = 0; index < column_count && count < 64; index++) {
            const struct program_result *last = NULL;
            for (size_t run = 0; run < columns[index].runs_done; run++)
                if (program_succeeded(&columns[index].runs[run]))
                    last = &columns[index].runs[run];
            if (last)
                series[count++] = (struct gpucache_memory_series){
                    .label = columns[index].label,
                    .samples = last->samples,
                    .count = last->sample_count,
                };
        }
        char title[512];
        snprintf(title, sizeof title, "gpucache ab: %s", options.program[0]);
        int fd = gpucache_report_open(options.svg_path, (long)getpid(), false, "chart");
        files_ok = fd >= 0 && gpucache_svg_write(fd, title, "seconds since the first allocation",
                                                 series, count);
        gpucache_report_close(fd);
    }
    if (options.snapshot_path) {
        size_t number = 0;
        size_t cached_columns = column_count - options.baseline;
        for (size_t index = 0; index < column_count; index++) {
            if (columns[index].baseline)
                continue;
            number++;
            const struct program_result *last = NULL;
            for (size_t run = 0; run < columns[index].runs_done; run++)
                if (program_succeeded(&columns[index].runs[run]) &&
                    columns[index].runs[run].snapshot[0])
                    last = &columns[index].runs[run];
            char path[PATH_MAX + 64];
            snapshot_path(options.snapshot_path, number, cached_columns, path, sizeof path);
            if (!last) {
                fprintf(stderr, "gpucache ab: no snapshot for %s: no run succeeded with one\n",
                        columns[index].label);
                files_ok = false;
            } else if (!copy_to_new_file(last->snapshot, path)) {
                files_ok = false;
            }
        }
    }
    return finish(columns, column_count, &options, all_succeeded && files_ok ? 0 : 1);
}

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

#include "ab_output.h"
#include "commands.h"
#include "gpucache_report.h"
#include "library_location.h"
#include "program_run.h"

#define BASELINE_CONFIGURATION "passthrough:True"

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

static int parse_options(int argc, char **argv, struct ab_options *options)
{
    static const struct option long_options[] = {
        {"conf", required_argument, NULL, 'c'},  {"baseline", no_argument, NULL, 'b'},
        {"repeat", required_argument, NULL, 'r'}, {"svg", required_argument, NULL, 's'},
        {"snapshot", required_argument, NULL, 'p'}, {"json", no_argument, NULL, 'j'},
        {"sim", no_argument, NULL, 'S'},            {"sim-memory", required_argument, NULL, 'M'},
        {"no-racecheck", no_argument, NULL, 'N'},   {"help", no_argument, NULL, 'h'},
        {0},
    };
    *options = (struct ab_options){.repeat = 1, .racecheck = true};
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
            if (*optarg < '1' || *optarg > '9' || *end || value > AB_MAX_REPEAT) {
                fprintf(stderr, "gpucache ab: --repeat: '%s' is not a number of runs (expected "
                                "1 to %d)\n", optarg, AB_MAX_REPEAT);
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
static bool output_paths_free(const struct ab_options *options, size_t cached_columns)
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

static int finish(struct ab_column *columns, size_t column_count, struct ab_options *options, int status)
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
    struct ab_options options;
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
    struct ab_column *columns = calloc(column_count, sizeof *columns);
    if (!columns) {
        free(options.configurations);
        return 2;
    }
    for (size_t index = 0; index < column_count; index++) {
        struct ab_column *column = &columns[index];
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
            struct ab_column *column = &columns[index];
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
        ab_print_json(stdout, &options, columns, column_count);
    else
        ab_print_table(stdout, &options, columns, column_count);

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

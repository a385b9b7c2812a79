/* `gpucache check [--conf STRING]... [--ignore REGEX]... [--sim] -- PROGRAM
 * ARGS...`: the CI verdict. Runs the program as it is, then under
 * libgpucache.so in each configuration, and passes only when every run
 * exits as the program alone did and prints the same standard output
 * (lines matching an --ignore pattern left out). Also runs it once under
 * the library with passthrough:True, where every call goes to the driver,
 * to count the driver allocations the program makes on its own, so each
 * verdict line can show the reduction. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "library_location.h"
#include "program_run.h"

#define COUNTING_CONFIGURATION "passthrough:True"
#define MAX_PATTERNS 64

static const char usage[] =
    "usage: gpucache check [--conf STRING]... [--ignore REGEX]... [--sim]\n"
    "                      [--sim-memory SIZE] [--no-racecheck] [--expect-failure]\n"
    "                      -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM as it is, then under libgpucache.so in each configuration, and\n"
    "prints one verdict line per configuration: PASS when the run exits as the\n"
    "program alone did and prints the same standard output, FAIL (with the first\n"
    "difference) otherwise, and the driver allocations against the program's own.\n"
    "\n"
    "  --conf STRING     a configuration (PYTORCH_ALLOC_CONF syntax); repeat it for\n"
    "                    more (default: '' and 'expandable_segments:True')\n"
    "  --ignore REGEX    leave out of the comparison the output lines that match this\n"
    "                    extended regular expression (timings, addresses); repeatable\n"
    "  --sim             run on the simulated device of this build (no GPU needed):\n"
    "                    the program must use the CUDA runtime as a shared library\n"
    "                    (nvcc -cudart shared) or link the sim's; its race detector\n"
    "                    is on, and a race fails the run (the program's own too)\n"
    "  --sim-memory SIZE the simulated device's memory (GPUSIM_MEMORY: 40GiB, 512MiB)\n"
    "  --no-racecheck    with --sim, leave the race detector off\n"
    "  --expect-failure  the program is meant to fail: compare how it fails (without\n"
    "                    this, a program that fails on its own fails the check)\n"
    "  -h, --help        print this help\n"
    "\n"
    "Exit status: 0 when every configuration passes, 1 when one fails, 2 for bad\n"
    "usage, 127 when the program, the library or the simulated device cannot be found.\n";

struct options {
    const char **configurations;
    size_t configuration_count;
    regex_t patterns[MAX_PATTERNS];
    size_t pattern_count;
    bool sim;
    bool racecheck;
    bool expect_failure;
    const char *sim_memory;
    char **program;
};

static int parse_options(int argc, char **argv, struct options *options)
{
    static const struct option long_options[] = {
        {"conf", required_argument, NULL, 'c'},       {"ignore", required_argument, NULL, 'i'},
        {"sim", no_argument, NULL, 's'},              {"sim-memory", required_argument, NULL, 'm'},
        {"no-racecheck", no_argument, NULL, 'n'},     {"expect-failure", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    options->configurations = calloc((size_t)argc + 2, sizeof *options->configurations);
    if (!options->configurations)
        return 2;
    options->racecheck = true;
    opterr = 0;
    optind = 0;
    int option;
    while ((option = getopt_long(argc, argv, "+:h", long_options, NULL)) != -1) {
        switch (option) {
        case 'c': {
            char why[512];
            if (!program_configuration_usable(optarg, why, sizeof why)) {
                fprintf(stderr, "gpucache check: %s\n", why);
                return 2;
            }
            options->configurations[options->configuration_count++] = optarg;
            break;
        }
        case 'i': {
            if (options->pattern_count == MAX_PATTERNS) {
                fprintf(stderr, "gpucache check: at most %d --ignore patterns\n", MAX_PATTERNS);
                return 2;
            }
            int failed = regcomp(&options->patterns[options->pattern_count], optarg,
                                 REG_EXTENDED | REG_NOSUB);
            if (failed) {
                char message[256];
                regerror(failed, &options->patterns[options->pattern_count], message,
                         sizeof message);
                fprintf(stderr,
                        "gpucache check: --ignore '%s' is not an extended regular expression: "
                        "%s\n",
                        optarg, message);
                return 2;
            }
            options->pattern_count++;
            break;
        }
        case 's':
            options->sim = true;
            break;
        case 'm':
            options->sim_memory = optarg;
            break;
        case 'n':
            options->racecheck = false;
            break;
        case 'f':
            options->expect_failure = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "gpucache check: %s needs a value (try gpucache check --help)\n",
                    argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "gpucache check: unknown option '%s' (try gpucache check --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if ((options->sim_memory || !options->racecheck) && !options->sim) {
        fprintf(stderr, "gpucache check: --sim-memory and --no-racecheck apply only with --sim\n");
        return 2;
    }
    if (optind < argc && strcmp(argv[optind - 1], "--") != 0 && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc) {
        fprintf(stderr, "gpucache check: no program given (usage: gpucache check [options] -- "
                        "PROGRAM [ARGS...])\n");
        return 2;
    }
    options->program = argv + optind;
    if (options->configuration_count == 0) {
        options->configurations[options->configuration_count++] = "";
        options->configurations[options->configuration_count++] = "expandable_segments:True";
    }
    return 0;
}

struct lines {
    char **line;
    size_t count;
};

/* Splits `text` in place into the lines no pattern matches. */
static bool kept_lines(char *text, const struct options *options, struct lines *lines)
{
    lines->count = 0;
    size_t capacity = 16;
    lines->line = malloc(capacity * sizeof *lines->line);
    if (!lines->line)
        return false;
    for (char *start = text; *start;) {
        char *end = strchr(start, '\n');
        char *next = end ? end + 1 : start + strlen(start);
        if (end)
            *end = '\0';
        bool ignored = false;
        for (size_t i = 0; i < options->pattern_count && !ignored; i++)
            ignored = regexec(&options->patterns[i], start, 0, NULL, 0) == 0;
        if (!ignored) {
            if (lines->count == capacity) {
                char **bigger = realloc(lines->line, 2 * capacity * sizeof *bigger);
                if (!bigger)
                    return false;
                lines->line = bigger;
                capacity *= 2;
            }
            lines->line[lines->count++] = start;
        }
        start = next;
    }
    return true;
}

struct outcome {
    struct program_result result;
    char *output;   /* standard output as printed */
    char *split;    /* a copy of it cut into the lines `kept` points at */
    struct lines kept;
    char *errors;   /* standard error, for the failure detail */
};

/* A captured stream's text; "" when the file could not be read. */
static char *read_or_empty(const char *path)
{
    char *text = program_read_file(path, NULL);
    return text ? text : strdup("");
}

/* Runs one configuration (NULL: the program alone) in a fresh directory. */
static bool run_once(const struct options *options, const char *library, const char *configuration,
                     char *const *environment, struct outcome *outcome)
{
    char directory[PATH_MAX];
    if (!program_make_directory(directory, sizeof directory)) {
        fprintf(stderr, "gpucache check: cannot make a directory for the run's files\n");
        return false;
    }
    struct program_request request = {
        .library = library,
        .configuration = configuration ? configuration : "",
        .argv = options->program,
        .directory = directory,
        .capture_streams = true,
        .without_library = configuration == NULL,
        .environment = environment,
    };
    char why[PATH_MAX + 256];
    bool started = program_run(&request, &outcome->result, why, sizeof why);
    if (started) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/stdout", directory);
        outcome->output = read_or_empty(path);
        snprintf(path, sizeof path, "%s/stderr", directory);
        outcome->errors = read_or_empty(path);
        outcome->split = outcome->output ? strdup(outcome->output) : NULL;
        started = outcome->split && outcome->errors &&
                  kept_lines(outcome->split, options, &outcome->kept);
        if (!started)
            fprintf(stderr, "gpucache check: out of memory reading the program's output\n");
    } else {
        fprintf(stderr, "gpucache check: %s\n", why);
    }
    program_remove_directory(directory);
    return started;
}

/* A line shortened for a verdict. */
static void quote(const char *line, char *out, size_t size)
{
    size_t length = strlen(line);
    if (length + 3 <= size)
        snprintf(out, size, "\"%s\"", line);
    else
        snprintf(out, size, "\"%.*s...\"", (int)(size - 6), line);
}

/* The simulated device's race detector ends a process with this status. */
#define RACE_STATUS 66

/* True (with the detector's first report in `text`) when the run ended
 * because the simulated device's race detector found a race. */
static bool raced(const struct options *options, const struct outcome *run, char *text, size_t size)
{
    if (!options->sim || !options->racecheck || !run->result.started || run->result.signal ||
        run->result.exit_status != RACE_STATUS)
        return false;
    const char *report = strstr(run->errors, "gpusim: race: ");
    if (report) {
        report += strlen("gpusim: ");
        const char *end = strchr(report, '\n');
        int length = end ? (int)(end - report) : (int)strlen(report);
        snprintf(text, size, "the race detector reported: %.*s", length > 400 ? 400 : length,
                 report);
    } else {
        snprintf(text, size, "exit %d: the race detector reported a race", RACE_STATUS);
    }
    return true;
}

/* One line saying how `run` differs from `native`; false when it does not. */
static bool difference(const struct outcome *native, const struct outcome *run, char *text,
                       size_t size)
{
    char native_status[64], run_status[64];
    program_status_text(&native->result, native_status, sizeof native_status);
    program_status_text(&run->result, run_status, sizeof run_status);
    if (strcmp(native_status, run_status) != 0) {
        const char *last_error = run->errors;
        /* The last line of its standard error often says why. */
        size_t length = strlen(last_error);
        while (length > 0 && last_error[length - 1] == '\n')
            length--;
        size_t begin = length;
        while (begin > 0 && last_error[begin - 1] != '\n')
            begin--;
        if (length > begin)
            snprintf(text, size, "%s (the program alone: %s); its last error line: %.*s", run_status,
                     native_status, (int)(length - begin > 200 ? 200 : length - begin),
                     last_error + begin);
        else
            snprintf(text, size, "%s (the program alone: %s)", run_status, native_status);
        return true;
    }
    size_t common = native->kept.count < run->kept.count ? native->kept.count : run->kept.count;
    for (size_t i = 0; i < common; i++) {
        if (strcmp(native->kept.line[i], run->kept.line[i]) != 0) {
            char alone[160], here[160];
            quote(native->kept.line[i], alone, sizeof alone);
            quote(run->kept.line[i], here, sizeof here);
            snprintf(text, size, "output differs at compared line %zu: %s here, %s alone", i + 1,
                     here, alone);
            return true;
        }
    }
    if (native->kept.count != run->kept.count) {
        snprintf(text, size, "output has %zu compared lines here, %zu alone", run->kept.count,
                 native->kept.count);
        return true;
    }
    return false;
}

static void release(struct outcome *outcome)
{
    free(outcome->kept.line);
    free(outcome->split);
    free(outcome->output);
    free(outcome->errors);
    free(outcome->result.samples);
    memset(outcome, 0, sizeof *outcome);
}

int command_check(int argc, char **argv)
{
    struct options options = {0};
    int parsed = parse_options(argc, argv, &options);
    if (parsed != 0) {
        free(options.configurations);
        return parsed < 0 ? 0 : parsed;
    }
    int status = 0;
    char library[PATH_MAX], why[PATH_MAX + 256];
    static struct program_sim_settings sim;
    char *const *environment = NULL;
    if (!library_location_find(library, sizeof library, why, sizeof why)) {
        fprintf(stderr, "gpucache check: %s\n", why);
        status = 127;
    } else if (options.sim) {
        if (program_sim_settings(&sim, options.sim_memory, options.racecheck, why, sizeof why)) {
            environment = sim.environment;
        } else {
            fprintf(stderr, "gpucache check: --sim: %s\n", why);
            status = 127;
        }
    }
    struct outcome native = {0}, counted = {0};
    if (status == 0 && !run_once(&options, library, NULL, environment, &native))
        status = 127;
    if (status == 0) {
        char native_status[64];
        program_status_text(&native.result, native_status, sizeof native_status);
        bool counted_ok = run_once(&options, library, COUNTING_CONFIGURATION, environment, &counted) &&
                          counted.result.figures.reported;
        size_t lines = 0;
        for (const char *c = native.output; *c; c++)
            lines += *c == '\n' || (c[1] == '\0');
        printf("the program alone: %s, %zu lines of output", native_status, lines);
        if (options.pattern_count)
            printf(" (%zu compared)", native.kept.count);
        if (counted_ok)
            printf(", %" PRIu64 " driver allocations\n", counted.result.figures.device_allocations);
        else
            printf(", driver allocations not counted (the passthrough:True run wrote no report)\n");
        size_t failures = 0;
        char race[512];
        if (raced(&options, &native, race, sizeof race)) {
            printf("FAIL  the program alone: %s\n", race);
            failures++;
        } else if (!program_succeeded(&native.result) && !options.expect_failure) {
            printf("FAIL  the program alone: %s (a check needs a program that succeeds; "
                   "--expect-failure compares one that fails)\n", native_status);
            failures++;
            if (!options.sim && native.result.exit_status != 0 &&
                (strstr(native.errors, "cudaErrorInsufficientDriver") ||
                 strstr(native.errors, "CUDA driver version is insufficient") ||
                 strstr(native.errors, "no CUDA-capable device")))
                printf("note: no GPU driver reachable: --sim runs the program on the simulated "
                       "device\n");
        } else if (!program_succeeded(&native.result)) {
            printf("note: the program fails on its own (%s), as --expect-failure says; the runs "
                   "below must fail the same way\n", native_status);
        }
        for (size_t index = 0; index < options.configuration_count; index++) {
            const char *configuration = options.configurations[index];
            struct outcome run = {0};
            char detail[1024];
            bool ran = run_once(&options, library, configuration, environment, &run);
            bool differs = !ran;
            if (!ran)
                snprintf(detail, sizeof detail, "could not be run");
            else if (raced(&options, &run, detail, sizeof detail))
                differs = true;
            else
                differs = difference(&native, &run, detail, sizeof detail);
            char allocations[128] = "";
            if (ran && run.result.figures.reported && counted_ok) {
                uint64_t alone = counted.result.figures.device_allocations;
                uint64_t here = run.result.figures.device_allocations;
                if (alone > 0)
                    snprintf(allocations, sizeof allocations,
                             "; driver allocations %" PRIu64 " -> %" PRIu64 " (%+.1f%%)", alone, here,
                             100.0 * ((double)here - (double)alone) / (double)alone);
                else
                    snprintf(allocations, sizeof allocations,
                             "; driver allocations %" PRIu64 " -> %" PRIu64, alone, here);
            }
            if (differs) {
                failures++;
                printf("FAIL  '%s': %s%s\n", configuration, detail, allocations);
            } else {
                char run_status[64];
                program_status_text(&run.result, run_status, sizeof run_status);
                printf("PASS  '%s': %s, same output%s\n", configuration, run_status, allocations);
            }
            release(&run);
        }
        if (failures)
            printf("gpucache check: %zu of %zu runs failed\n", failures,
                   options.configuration_count + 1);
        else
            printf("gpucache check: all %zu configurations behave as the program alone\n",
                   options.configuration_count);
        status = failures ? 1 : 0;
    }
    release(&native);
    release(&counted);
    for (size_t i = 0; i < options.pattern_count; i++)
        regfree(&options.patterns[i]);
    free(options.configurations);
    return status;
}

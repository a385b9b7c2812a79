#include "command_replay.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "column_runner.h"
#include "compact_trace.h"
#include "gpucache_config.h"
#include "gpucache_report.h"
#include "replay_report.h"
#include "replay_run.h"
#include "replay_svg.h"
#include "snapshot_reader.h"
#include "trace_loader.h"

#define DEFAULT_DEVICE_MEMORY (UINT64_C(80) << 30)
#define EXIT_USAGE 2

static const char usage[] =
    "usage: gpucache replay [--conf STRING]... [--device-memory SIZE] [--json] [--min-device]\n"
    "                       [--svg FILE] [--snapshot FILE] [--device N] TRACE\n"
    "\n"
    "Replays an allocation trace through the caching allocator on a simulated device,\n"
    "once per configuration, with no GPU, and prints the results side by side.\n"
    "\n"
    "  TRACE                 an RMM replay log (CSV: Thread,Time,Action,Pointer,Size,Stream)\n"
    "                        a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot,\n"
    "                        pickled or as JSON), or the library's own trace (trace:)\n"
    "  --conf STRING         a configuration in PYTORCH_ALLOC_CONF syntax, such as\n"
    "                        expandable_segments:True; repeat it for more columns\n"
    "                        (default: one run with the default configuration)\n"
    "  --device-memory SIZE  capacity of the simulated device (default 80GiB; units B,\n"
    "                        KiB, MiB, GiB, TiB)\n"
    "  --json                print the results as JSON, with PyTorch's stat names\n"
    "  --min-device          also search, per configuration, the smallest device (to\n"
    "                        2 MiB) on which the trace completes\n"
    "  --svg FILE            also draw reserved and allocated bytes over the trace, per\n"
    "                        configuration, as an SVG image\n"
    "  --snapshot FILE       also write each configuration's final state with its trace as\n"
    "                        a PyTorch memory snapshot (a pickle when FILE ends in .pickle,\n"
    "                        .pkl or .pt, else JSON; FILE-1.ext, FILE-2.ext, ... for several\n"
    "                        configurations); existing files are never overwritten\n"
    "  --device N            the device of a multi-GPU snapshot to replay (default: the\n"
    "                        first with trace entries)\n"
    "  -h, --help            print this help\n"
    "\n"
    "Exit status: 0 when every configuration was replayed (running out of memory is\n"
    "a result, shown in the table), 1 when a --snapshot file could not be written, 2 for\n"
    "a bad option or an unreadable trace.\n";

struct options {
    const char **configurations; /* --conf strings, in order */
    size_t configuration_count;
    uint64_t device_memory;
    bool json;
    bool min_device;
    const char *svg_path;
    const char *snapshot_path;
    int device;
    const char *trace_path;
};

static int usage_error(const char *format, const char *argument)
{
    fprintf(stderr, "gpucache replay: ");
    fprintf(stderr, format, argument);
    fprintf(stderr, " (see gpucache replay --help)\n");
    return EXIT_USAGE;
}

/* A size such as 80GiB, 512MiB, 1.5GiB or 1073741824: binary units only,
 * since a device's memory is counted in them. */
static bool parse_size(const char *text, uint64_t *bytes)
{
    static const struct {
        const char *suffix;
        int shift;
    } units[] = {{"", 0}, {"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
    char *end;
    if (!(*text >= '0' && *text <= '9'))
        return false;
    double value = strtod(text, &end);
    for (size_t index = 0; index < sizeof units / sizeof *units; index++) {
        if (strcmp(end, units[index].suffix) != 0)
            continue;
        double scaled = ldexp(value, units[index].shift);
        if (!(scaled >= 1 && scaled < 0x1p63))
            return false;
        *bytes = (uint64_t)scaled;
        return true;
    }
    return false;
}

static bool parse_device(const char *text, int *device)
{
    char *end;
    long value = strtol(text, &end, 10);
    if (*text < '0' || *text > '9' || *end || value > 1024)
        return false;
    *device = (int)value;
    return true;
}

static int parse_options(int argc, char **argv, struct options *options)
{
    static const struct option long_options[] = {
        {"conf", required_argument, NULL, 'c'},   {"device-memory", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},         {"min-device", no_argument, NULL, 's'},
        {"device", required_argument, NULL, 'd'}, {"svg", required_argument, NULL, 'g'},
        {"snapshot", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
        {0},
    };
    *options =
        (struct options){.device_memory = DEFAULT_DEVICE_MEMORY, .device = SNAPSHOT_ANY_DEVICE};
    options->configurations = calloc((size_t)argc, sizeof *options->configurations);
    if (!options->configurations)
        return usage_error("%s", "out of host memory");
    opterr = 0;
    optind = 0; /* a full reset, so the command can run more than once per process */
    int option;
    while ((option = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        switch (option) {
        case 'c':
            options->configurations[options->configuration_count++] = optarg;
            break;
        case 'm':
            if (!parse_size(optarg, &options->device_memory))
                return usage_error("--device-memory: '%s' is not a size (expected a number "
                                   "with an optional unit B, KiB, MiB, GiB or TiB, such as 80GiB)",
                                   optarg);
            break;
        case 'j':
            options->json = true;
            break;
        case 's':
            options->min_device = true;
            break;
        case 'g':
            options->svg_path = optarg;
            break;
        case 'n':
            options->snapshot_path = optarg;
            break;
        case 'd':
            if (!parse_device(optarg, &options->device))
                return usage_error("--device: '%s' is not a device number (expected 0, 1, ...)",
                                   optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case ':':
            return usage_error("%s needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s' (expected --conf, --device-memory, --json, "
                               "--min-device, --svg, --snapshot, --device or --help)",
                               argv[optind - 1]);
        }
    }
    if (optind == argc)
        return usage_error("%s", "no TRACE given (an RMM replay CSV or a PyTorch snapshot pickle)");
    if (argc - optind > 1)
        return usage_error("more than one TRACE given ('%s' is the second)", argv[optind + 1]);
    options->trace_path = argv[optind];
    return -1;
}

/* A key `config` sets that changes what the library does but not what the
 * replay computes, or NULL: the library's output files (the replay has
 * --snapshot and --json of its own) and what cudaMemGetInfo reports. Keys
 * without effect in this build are accepted, as everywhere; reuse: is
 * modelled (a trace with several streams shows it). */
static const char *unmodelled_key(const struct gpucache_config *config)
{
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        enum gpucache_config_key key = (enum gpucache_config_key)index;
        if (config->key_from_string[key] &&
            (gpucache_config_key_is_output(key) || key == GPUCACHE_KEY_MEMINFO))
            return gpucache_config_key_name(key);
    }
    return NULL;
}

/* Why the replay cannot run `config`, or NULL: both of these bypass the
 * caching allocator, and the replay has nothing else to simulate. */
static const char *unsupported_reason(const struct gpucache_config *config)
{
    if (config->backend == GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC)
        return "backend:cudaMallocAsync hands every request to the driver's pool";
    if (config->passthrough)
        return "passthrough:True hands every request to the driver";
    return NULL;
}

static int parse_configurations(const struct options *options, struct gpucache_config *configs,
                                struct replay_column *columns, size_t count)
{
    for (size_t index = 0; index < count; index++) {
        const char *text = options->configuration_count ? options->configurations[index] : "";
        struct gpucache_config_error error;
        if (gpucache_config_parse("--conf", text, &configs[index], &error) != 0) {
            fprintf(stderr, "%s\n", error.message);
            return EXIT_USAGE;
        }
        const char *unmodelled = unmodelled_key(&configs[index]);
        if (unmodelled) {
            fprintf(stderr,
                    "gpucache replay: --conf '%s': the replay cannot model %s (it replays the "
                    "caching allocator's decisions: pools, splitting, rounding, expandable "
                    "segments, reuse across streams, garbage collection, the memory fraction)\n",
                    text, unmodelled);
            return EXIT_USAGE;
        }
        const char *unsupported = unsupported_reason(&configs[index]);
        if (unsupported) {
            fprintf(stderr,
                    "gpucache replay: --conf '%s': %s, which the replay cannot simulate "
                    "(it replays the caching allocator)\n",
                    text, unsupported);
            return EXIT_USAGE;
        }
        columns[index].configuration = text;
        columns[index].label = *text ? text : "default";
    }
    return 0;
}

/* Refuses an output path that exists, is a symlink or cannot be created
 * before the replay, which may take minutes, rather than after it. */
static bool output_paths_free(const struct options *options, size_t count)
{
    if (options->svg_path && !gpucache_report_path_is_free(options->svg_path, (long)getpid(),
                                                           "chart"))
        return false;
    for (size_t index = 0; options->snapshot_path && index < count; index++) {
        char path[4096];
        if (!column_snapshot_path(options->snapshot_path, index, count, path, sizeof path)) {
            fprintf(stderr, "gpucache replay: --snapshot: the path '%s' is too long\n",
                    options->snapshot_path);
            return false;
        }
        if (!gpucache_report_path_is_free(path, (long)getpid(), "snapshot"))
            return false;
    }
    return true;
}

int command_replay(int argc, char **argv)
{
    struct options options;
    int status = parse_options(argc, argv, &options);
    if (status >= 0) {
        free(options.configurations);
        return status;
    }
    size_t count = options.configuration_count ? options.configuration_count : 1;
    struct gpucache_config *configs = calloc(count, sizeof *configs);
    struct replay_column *columns = calloc(count, sizeof *columns);
    struct replay_trace trace = {0};
    FILE *svg = NULL;
    if (!configs || !columns) {
        status = usage_error("%s", "out of host memory");
        goto done;
    }
    status = parse_configurations(&options, configs, columns, count);
    if (status != 0)
        goto done;

    if (!output_paths_free(&options, count)) {
        status = EXIT_USAGE;
        goto done;
    }
    struct read_error error;
    bool loaded = compact_trace_file(options.trace_path)
                      ? compact_trace_load(options.trace_path,
                                           options.device == SNAPSHOT_ANY_DEVICE ? -1 : options.device,
                                           &trace, &error)
                      : trace_load(options.trace_path, options.device, &trace, &error);
    if (!loaded) {
        fprintf(stderr, "gpucache replay: %s: %s\n", options.trace_path, error.message);
        status = EXIT_USAGE;
        goto done;
    }
    if (options.device != SNAPSHOT_ANY_DEVICE && strcmp(trace.format, "RMM replay CSV") == 0) {
        fprintf(stderr,
                "gpucache replay: --device %d: %s (%s) holds the trace of one device "
                "(--device chooses among the devices of a PyTorch snapshot)\n",
                options.device, options.trace_path, trace.format);
        status = EXIT_USAGE;
        goto done;
    }
    struct column_run_options run_options = {
        .device_memory = options.device_memory,
        .min_device = options.min_device,
        .timelines = options.svg_path != NULL,
        .progress = isatty(STDERR_FILENO),
        .snapshot_path = options.snapshot_path,
    };
    if (!run_columns(&trace, configs, columns, count, &run_options)) {
        fprintf(stderr, "gpucache replay: out of host memory for the simulated allocators\n");
        status = 1;
        goto done;
    }
    struct replay_report report = {
        .trace_path = options.trace_path,
        .trace = &trace,
        .device_memory = options.device_memory,
        .columns = columns,
        .column_count = count,
    };
    if (options.json)
        replay_print_json(stdout, &report);
    else
        replay_print_table(stdout, &report);
    if (fflush(stdout) != 0) {
        perror("gpucache replay: writing the results");
        status = 1;
    }
    for (size_t index = 0; index < count; index++)
        if (columns[index].outcome.snapshot_failed)
            status = 1;
    if (options.svg_path) {
        int fd = gpucache_report_open(options.svg_path, (long)getpid(), false, "chart");
        if (fd < 0 || !(svg = fdopen(fd, "w"))) {
            gpucache_report_close(fd);
            status = 1;
            goto done;
        }
        bool drawn = replay_write_svg(svg, &report);
        if (fclose(svg) != 0 || !drawn) {
            fprintf(stderr, "gpucache replay: --svg: writing '%s': %s\n", options.svg_path,
                    strerror(errno));
            status = 1;
        }
        svg = NULL;
    }
done:
    if (svg)
        fclose(svg);
    for (size_t index = 0; columns && index < count; index++) {
        free(columns[index].timeline.allocated);
        free(columns[index].timeline.reserved);
        replay_final_state_release(&columns[index].outcome.final_state);
    }
    replay_trace_destroy(&trace);
    free(columns);
    free(configs);
    free(options.configurations);
    return status;
}

/* `gpucache run [--conf STRING] -- PROGRAM ARGS...`: runs a program under
 * libgpucache.so and prints what the library saw: the memory_summary() table
 * of every device, pass-through calls by reason and keys without effect. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include "commands.h"
#include "data_tree.h"
#include "json_reader.h"
#include "library_location.h"
#include "program_run.h"

static const char usage[] =
    "usage: gpucache run [--conf STRING] [--sim [--sim-memory SIZE] [--no-racecheck]]\n"
    "                    -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under libgpucache.so and prints, on stderr once it exits, the\n"
    "memory_summary() table of every device it used, its calls that went to the\n"
    "driver untouched (by reason) and the keys you set that have no effect.\n"
    "\n"
    "  --conf STRING  the configuration (PYTORCH_ALLOC_CONF syntax); default: the\n"
    "                 environment's GPUCACHE_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF or\n"
    "                 PYTORCH_ALLOC_CONF, as the library reads them\n"
    "  --sim          run on the simulated device of this build (no GPU needed); the\n"
    "                 program must use the CUDA runtime as a shared library (nvcc\n"
    "                 -cudart shared); the sim's race detector is on (exit 66 on a race)\n"
    "  --sim-memory SIZE  the simulated device's memory (GPUSIM_MEMORY: 40GiB, 512MiB)\n"
    "  --no-racecheck with --sim, leave the race detector off\n"
    "  -h, --help     print this help\n"
    "\n"
    "The library is $GPUCACHE_LIBRARY, else libgpucache.so next to gpucache, in ../lib\n"
    "or in the build tree. Exit status: the program's (128 + N when signal N ended\n"
    "it), 2 for bad usage, 127 when the program or the library cannot be found.\n";

/* The string the library itself would read when no --conf is given. */
static const char *environment_configuration(void)
{
    static const char *const variables[] = {"GPUCACHE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF",
                                            "PYTORCH_ALLOC_CONF"};
    for (size_t index = 0; index < sizeof variables / sizeof *variables; index++) {
        const char *value = getenv(variables[index]);
        if (value)
            return value;
    }
    return "";
}

static void print_file(const char *path)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return;
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, file)) > 0)
        fwrite(buffer, 1, got, stderr);
    fclose(file);
}

/* True when the report's configuration says `key` came from the string. */
static bool set_by_user(const struct data_value *keys, const struct data_value *key)
{
    for (size_t index = 0; keys && keys->kind == DATA_DICT && index + 1 < 2 * keys->sequence.count;
         index += 2) {
        const struct data_value *name = keys->sequence.items[index];
        if (name->kind != DATA_STRING || name->text.length != key->text.length ||
            memcmp(name->text.bytes, key->text.bytes, key->text.length) != 0)
            continue;
        const struct data_value *source = data_dict_get(keys->sequence.items[index + 1], "source");
        return source && source->kind == DATA_STRING && source->text.length == 6 &&
               memcmp(source->text.bytes, "string", 6) == 0;
    }
    return false;
}

/* The pass-through counts and the ignored keys the user set, of one report
 * file. */
static void print_report_notes(const char *path)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return;
    static char text[1 << 20];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    struct data_document document = {0};
    struct read_error error;
    if (!json_read(text, length, &document, &error))
        return;
    const struct data_value *passthrough = data_dict_get(document.root, "passthrough_calls");
    fprintf(stderr, "calls passed to the driver untouched:");
    int64_t total = 0;
    for (size_t index = 0; passthrough && passthrough->kind == DATA_DICT &&
                           index + 1 < 2 * passthrough->sequence.count;
         index += 2) {
        const struct data_value *name = passthrough->sequence.items[index];
        const struct data_value *count = passthrough->sequence.items[index + 1];
        if (count->kind == DATA_INT && count->integer > 0 && name->kind == DATA_STRING) {
            fprintf(stderr, " %.*s %" PRId64, (int)name->text.length, name->text.bytes,
                    count->integer);
            total += count->integer;
        }
    }
    fprintf(stderr, total ? "\n" : " none\n");
    /* Only the keys the user set: the ones accepted for PyTorch that never
     * have an effect here would otherwise be listed on every run. */
    const struct data_value *configuration = data_dict_get(document.root, "configuration");
    const struct data_value *ignored = data_dict_get(configuration, "ignored");
    const struct data_value *keys = data_dict_get(configuration, "keys");
    bool listed = false;
    for (size_t index = 0; ignored && ignored->kind == DATA_LIST && index < ignored->sequence.count;
         index++) {
        const struct data_value *key = ignored->sequence.items[index];
        if (key->kind != DATA_STRING || !set_by_user(keys, key))
            continue;
        fprintf(stderr, "%s %.*s", listed ? "" : "keys you set that have no effect here:",
                (int)key->text.length, key->text.bytes);
        listed = true;
    }
    if (listed)
        fprintf(stderr, "\n");
    data_document_destroy(&document);
}

/* Every file of `directory` whose name starts with `prefix`, in name order. */
static void for_each_file(const char *directory, const char *prefix, void (*action)(const char *))
{
    struct dirent **entries;
    int count = scandir(directory, &entries, NULL, alphasort);
    for (int index = 0; index < count; index++) {
        if (strncmp(entries[index]->d_name, prefix, strlen(prefix)) == 0) {
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s", directory, entries[index]->d_name);
            action(path);
        }
        free(entries[index]);
    }
    if (count >= 0)
        free(entries);
}

int command_run(int argc, char **argv)
{
    static const struct option options[] = {
        {"conf", required_argument, NULL, 'c'},
        {"sim", no_argument, NULL, 's'},
        {"sim-memory", required_argument, NULL, 'm'},
        {"no-racecheck", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *configuration = NULL, *sim_memory = NULL;
    bool sim = false, racecheck = true;
    opterr = 0;
    optind = 0;
    int option;
    while ((option = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
        if (option == 'c') {
            configuration = optarg;
        } else if (option == 's') {
            sim = true;
        } else if (option == 'm') {
            sim_memory = optarg;
        } else if (option == 'n') {
            racecheck = false;
        } else if (option == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "gpucache run: %s '%s' (see gpucache run --help)\n",
                    option == ':' ? "missing value for" : "unknown option", argv[optind - 1]);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "gpucache run: no program to run (usage: gpucache run [--conf STRING] "
                        "[--sim] -- PROGRAM [ARGS...])\n");
        return 2;
    }
    if ((sim_memory || !racecheck) && !sim) {
        fprintf(stderr, "gpucache run: --sim-memory and --no-racecheck apply only with --sim\n");
        return 2;
    }
    if (!configuration)
        configuration = environment_configuration();
    char why[1400];
    if (!program_configuration_usable(configuration, why, sizeof why)) {
        fprintf(stderr, "gpucache run: %s\n", why);
        return 2;
    }
    char library[PATH_MAX];
    if (!library_location_find(library, sizeof library, why, sizeof why)) {
        fprintf(stderr, "gpucache run: %s\n", why);
        return 127;
    }
    static struct program_sim_settings sim_settings;
    if (sim && !program_sim_settings(&sim_settings, sim_memory, racecheck, why, sizeof why)) {
        fprintf(stderr, "gpucache run: --sim: %s\n", why);
        return 127;
    }
    char directory[PATH_MAX];
    if (!program_make_directory(directory, sizeof directory)) {
        fprintf(stderr, "gpucache run: cannot create a directory for the reports\n");
        return 127;
    }
    struct program_request request = {
        .library = library,
        .configuration = configuration,
        .argv = argv + optind,
        .directory = directory,
        .summary = true,
        .environment = sim ? sim_settings.environment : NULL,
    };
    struct program_result result;
    if (!program_run(&request, &result, why, sizeof why)) {
        fprintf(stderr, "gpucache run: %s\n", why);
        program_remove_directory(directory);
        return 127;
    }
    char status[64];
    fprintf(stderr, "\ngpucache run: %s: %s after %.3f s, configuration '%s'\n", argv[optind],
            program_status_text(&result, status, sizeof status), result.seconds, configuration);
    if (!result.figures.reported)
        fprintf(stderr, "no report: the program made no device allocation through the library\n");
    for_each_file(directory, "summary-", print_file);
    for_each_file(directory, "report-", print_report_notes);
    free(result.samples);
    program_remove_directory(directory);
    return result.signal ? 128 + result.signal : result.exit_status;
}

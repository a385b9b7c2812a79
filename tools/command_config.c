/* `gpucache config [STRING]`: parses STRING, or the environment exactly as
 * the preloaded library does, and prints the effective configuration. */
#include "commands.h"
#include "gpucache_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int print_usage(FILE *out)
{
    fprintf(out,
            "usage: gpucache config [STRING]\n"
            "       gpucache config --keys\n"
            "Prints the effective configuration as JSON: every key with its value and\n"
            "whether it came from the string or the default, the keys that have no\n"
            "effect (\"ignored\"), and the variable that was read. Without STRING the\n"
            "environment is read as libgpucache.so reads it: GPUCACHE_ALLOC_CONF, else\n"
            "PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF. With --keys it lists every\n"
            "key, what its value may be, and whether it has an effect in this build.\n");
    return 0;
}

/* One line per key: its name, what it accepts, and "(no effect)" for the
 * keys accepted for PyTorch but without an effect in this build. */
static int print_keys(void)
{
    struct gpucache_config defaults;
    gpucache_config_defaults(&defaults);
    for (int key = 0; key < GPUCACHE_KEY_COUNT; key++) {
        enum gpucache_config_key id = (enum gpucache_config_key)key;
        printf("%-36s %s%s\n", gpucache_config_key_name(id), gpucache_config_key_expected(id),
               gpucache_config_key_ignored(&defaults, id) ? " (no effect in this build)" : "");
    }
    return 0;
}

int command_config(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return print_usage(stdout);
    if (argc == 2 && strcmp(argv[1], "--keys") == 0)
        return print_keys();
    if (argc > 2) {
        fprintf(stderr, "gpucache config: too many arguments (expected at most one "
                        "configuration STRING; quote it)\n");
        return 2;
    }

    struct gpucache_config config;
    struct gpucache_config_error error;
    struct gpucache_config_error warning;
    warning.message[0] = '\0';
    int status;
    if (argc == 2) {
        gpucache_config_defaults(&config);
        status = gpucache_config_parse("GPUCACHE_ALLOC_CONF", argv[1], &config, &error);
    } else {
        status = gpucache_config_from_environment(&config, &error, &warning);
    }
    if (status != 0) {
        fprintf(stderr, "%s\n", error.message);
        return 2;
    }
    if (warning.message[0] != '\0')
        fprintf(stderr, "%s\n", warning.message);
    if (gpucache_config_conflict_warning(&config, &warning))
        fprintf(stderr, "%s\n", warning.message);

    size_t length = gpucache_config_to_json(&config, NULL, 0);
    char *json = malloc(length + 1);
    if (json == NULL) {
        fprintf(stderr, "gpucache config: out of memory\n");
        return 1;
    }
    gpucache_config_to_json(&config, json, length + 1);
    fputs(json, stdout);
    free(json);
    return fflush(stdout) == 0 ? 0 : 1;
}

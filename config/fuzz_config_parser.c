/* libFuzzer target: any byte string must give either a configuration or one
 * well-formed error line, never a crash, leak or undefined behaviour. */
#include "gpucache_config.h"

#include <stdlib.h>
#include <string.h>

static void check(int condition)
{
    if (!condition)
        __builtin_trap();
}

static void check_error_line(const char *message)
{
    static const char prefix[] = "gpucache: GPUCACHE_ALLOC_CONF: ";
    size_t length = strlen(message);
    check(strncmp(message, prefix, sizeof prefix - 1) == 0);
    check(strchr(message, '\n') == NULL);
    check(strstr(message, " in '") != NULL);
    check(length > 0 && message[length - 1] == ')');
}

static void check_json(const struct gpucache_config *config)
{
    static char full[65536];
    char small[64];
    size_t needed = gpucache_config_to_json(config, full, sizeof full);
    check(needed < sizeof full && strlen(full) == needed);
    size_t again = gpucache_config_to_json(config, small, sizeof small);
    check(again == needed && strlen(small) == sizeof small - 1);
    check(memcmp(small, full, sizeof small - 1) == 0);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    if (gpucache_config_parse("GPUCACHE_ALLOC_CONF", text, &config, &error) != 0) {
        check_error_line(error.message);
    } else {
        check(error.message[0] == '\0');
        check_json(&config);
        struct gpucache_config_error warning;
        if (gpucache_config_conflict_warning(&config, &warning))
            check(strchr(warning.message, '\n') == NULL);
        for (unsigned shift = 0; shift < 64; shift++)
            (void)gpucache_config_roundup_divisions(&config, (uint64_t)1 << shift);
    }
    free(text);
    return 0;
}

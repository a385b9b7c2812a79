/* Which variable is read, the process-wide configuration, and the
 * load-time entry the library's constructor calls. */
#include "config_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* GPUCACHE_ALLOC_CONF overrides PyTorch's names so a program can run with
 * different settings under gpucache than under PyTorch's own allocator; then
 * PyTorch's current order, where the legacy CUDA name wins. */
static const char *const variables[] = {
    "GPUCACHE_ALLOC_CONF",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
};

int gpucache_config_from_environment(struct gpucache_config *config,
                                     struct gpucache_config_error *error,
                                     struct gpucache_config_error *warning)
{
    size_t count = sizeof variables / sizeof variables[0];
    const char *values[sizeof variables / sizeof variables[0]];
    const char *variable = NULL;
    const char *text = NULL;
    for (size_t i = 0; i < count; i++) {
        values[i] = getenv(variables[i]);
        /* Set, even to "", counts: an empty string asks for the defaults. */
        if (text == NULL && values[i] != NULL) {
            variable = variables[i];
            text = values[i];
        }
    }
    if (warning != NULL) {
        warning->message[0] = '\0';
        if (values[0] == NULL && values[1] != NULL && values[2] != NULL &&
            strcmp(values[1], values[2]) != 0)
            snprintf(warning->message, sizeof warning->message,
                     "gpucache: warning: %s and %s are both set and differ; using %s, as PyTorch does",
                     variables[1], variables[2], variables[1]);
    }
    gpucache_config_defaults(config);
    config->source_variable = variable;
    if (text == NULL)
        return 0;
    return gpucache_config_parse(variable, text, config, error);
}

static struct gpucache_config installed_config;
static _Atomic(const struct gpucache_config *) current_config;

const struct gpucache_config *gpucache_config_current(void)
{
    const struct gpucache_config *config =
        atomic_load_explicit(&current_config, memory_order_acquire);
    return config != NULL ? config : config_default_config();
}

void gpucache_config_set_current(const struct gpucache_config *config)
{
    if (config != &installed_config)
        installed_config = *config;
    atomic_store_explicit(&current_config, &installed_config, memory_order_release);
}

/* One write(2) per line so lines from several processes do not interleave;
 * stdio may not be usable yet in a constructor. */
static void write_line(const char *message)
{
    char line[sizeof ((struct gpucache_config_error *)0)->message + 1];
    size_t length = strnlen(message, sizeof line - 1);
    memcpy(line, message, length);
    line[length++] = '\n';
    size_t written = 0;
    while (written < length) {
        ssize_t result = write(STDERR_FILENO, line + written, length - written);
        if (result < 0 && errno == EINTR)
            continue;
        if (result <= 0)
            return;
        written += (size_t)result;
    }
}

int gpucache_config_load_or_exit(void)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    struct gpucache_config_error warning;
    if (gpucache_config_from_environment(&config, &error, &warning) != 0) {
        write_line(error.message);
        _exit(2);
    }
    if (warning.message[0] != '\0')
        write_line(warning.message);
    if (gpucache_config_conflict_warning(&config, &warning))
        write_line(warning.message);
    gpucache_config_set_current(&config);
    return 0;
}

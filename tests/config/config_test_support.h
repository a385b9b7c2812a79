/* Helpers shared by the configuration suites: parse a string and expect it
 * accepted, or rejected with one exact message. */
#ifndef GPUCACHE_CONFIG_TEST_SUPPORT_H
#define GPUCACHE_CONFIG_TEST_SUPPORT_H

#include "gpucache_config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static inline struct gpucache_config parse_accepted(const char *text)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    int status = gpucache_config_parse("GPUCACHE_ALLOC_CONF", text, &config, &error);
    cr_assert_eq(status, 0, "'%s' was rejected: %s", text, error.message);
    cr_assert_str_empty(error.message);
    return config;
}

/* `message` is everything after "gpucache: GPUCACHE_ALLOC_CONF: ". */
static inline void expect_rejected(const char *text, const char *message)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    char expected[sizeof error.message];
    gpucache_config_defaults(&config);
    int status = gpucache_config_parse("GPUCACHE_ALLOC_CONF", text, &config, &error);
    cr_assert_eq(status, -1, "'%s' was accepted", text);
    snprintf(expected, sizeof expected, "gpucache: GPUCACHE_ALLOC_CONF: %s", message);
    cr_assert_str_eq(error.message, expected, "for '%s'", text);
}

#endif

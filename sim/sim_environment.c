/* Reads the GPUSIM_* variables once, at the first cuInit. A bad value stops
 * the process (status 2) with one line: silently falling back to a default
 * would run a test against a device it did not ask for. */
#include "sim_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static _Noreturn void reject(const char *variable, const char *text, const char *accepted)
{
    fprintf(stderr, "gpusim: bad %s value '%s': %s\n", variable, text, accepted);
    exit(2);
}

/* Size text such as "80GiB", "512MiB", "4096"; false when malformed. */
static bool parse_size(const char *text, size_t *bytes)
{
    static const struct {
        const char *unit;
        unsigned shift;
    } units[] = {
        {"", 0},    {"B", 0},    {"K", 10},   {"KB", 10}, {"KiB", 10}, {"M", 20},
        {"MB", 20}, {"MiB", 20}, {"G", 30},   {"GB", 30}, {"GiB", 30}, {"T", 40},
        {"TB", 40}, {"TiB", 40},
    };
    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    char *end;
    unsigned long long number = strtoull(text, &end, 10);
    if (errno != 0)
        return false;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].unit) != 0)
            continue;
        if (units[i].shift > 0 && number > (~0ULL >> units[i].shift))
            return false;
        *bytes = (size_t)(number << units[i].shift);
        return true;
    }
    return false;
}

static const char devices_accepted[] = "expected a whole number of devices from 0 to 16";
static const char memory_accepted[] =
    "expected a size such as 80GiB, 512MiB or 1073741824 (units B, KiB, MiB, GiB, TiB), "
    "at least 2MiB";
static const char granularity_accepted[] =
    "expected a power of two from the host page size to 1GiB, such as 2MiB or 64KiB";
static const char fail_accepted[] =
    "expected comma-separated rules NAME:N, NAME:N+, NAME:N:ERROR (N >= 1; ERROR one of oom, "
    "invalid, unknown, not_ready, a CUDA_ERROR_* name or a number) or rate:P:seed:S "
    "(0 <= P <= 1)";

static const char delay_accepted[] =
    "expected comma-separated rules NAME:N:MICROSECONDS or NAME:N+:MICROSECONDS (N >= 1, "
    "1 to 1000000 microseconds)";

static bool parse_count(const char *text, unsigned long long *value)
{
    if (!isdigit((unsigned char)text[0]))
        return false;
    errno = 0;
    char *end;
    *value = strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

static bool parse_rate_rule(char *fields[], int field_count, struct sim_settings *settings)
{
    if (field_count != 4 || strcmp(fields[2], "seed") != 0)
        return false;
    char *end;
    errno = 0;
    double rate = strtod(fields[1], &end);
    if (errno != 0 || end == fields[1] || *end != '\0' || !(rate >= 0.0 && rate <= 1.0))
        return false;
    unsigned long long seed;
    if (!parse_count(fields[3], &seed))
        return false;
    settings->fail_rate = rate;
    settings->fail_seed = seed;
    return true;
}

/* NAME:N or NAME:N+ into `rule`; an unknown NAME stops the process. */
static bool parse_call_selector(char *fields[], struct sim_fail_rule *rule, const char *variable,
                                const char *text)
{
    size_t name_length = strlen(fields[0]);
    if (name_length == 0 || name_length >= sizeof rule->name || strncmp(fields[0], "cu", 2) != 0)
        return false;
    for (size_t i = 0; i < name_length; i++)
        if (!isalnum((unsigned char)fields[0][i]) && fields[0][i] != '_')
            return false;
    if (!sim_is_entry_point_name(fields[0])) {
        fprintf(stderr,
                "gpusim: bad %s value '%s': %s is not a simulated driver entry point "
                "(expected a name such as cuMemAlloc or cuMemAlloc_v2)\n",
                variable, text, fields[0]);
        exit(2);
    }
    size_t count_length = strlen(fields[1]);
    bool and_later = count_length > 0 && fields[1][count_length - 1] == '+';
    if (and_later)
        fields[1][count_length - 1] = '\0';
    unsigned long long nth;
    if (!parse_count(fields[1], &nth) || nth == 0)
        return false;
    memcpy(rule->name, fields[0], name_length + 1);
    rule->nth = nth;
    rule->and_later = and_later;
    atomic_init(&rule->seen, 0);
    return true;
}

static bool parse_named_rule(char *fields[], int field_count, struct sim_settings *settings,
                             const char *text)
{
    if (field_count < 2 || field_count > 3 || settings->fail_rule_count >= SIM_MAX_FAIL_RULES)
        return false;
    struct sim_fail_rule *rule = &settings->fail_rules[settings->fail_rule_count];
    CUresult error = CUDA_SUCCESS;
    if (!parse_call_selector(fields, rule, "GPUSIM_FAIL", text) ||
        (field_count == 3 && !sim_parse_error_name(fields[2], &error)))
        return false;
    rule->error = error;
    settings->fail_rule_count++;
    return true;
}

/* NAME:N:MICROSECONDS or NAME:N+:MICROSECONDS, at most one second. */
static bool parse_delay_rule(char *fields[], int field_count, struct sim_settings *settings,
                             const char *text)
{
    if (field_count != 3 || settings->delay_rule_count >= SIM_MAX_FAIL_RULES)
        return false;
    struct sim_fail_rule *rule = &settings->delay_rules[settings->delay_rule_count];
    unsigned long long microseconds;
    if (!parse_call_selector(fields, rule, "GPUSIM_DELAY", text) ||
        !parse_count(fields[2], &microseconds) || microseconds == 0 || microseconds > 1000000)
        return false;
    rule->delay_microseconds = microseconds;
    settings->delay_rule_count++;
    return true;
}

static void parse_rules(const char *variable, const char *text, struct sim_settings *settings)
{
    bool delays = strcmp(variable, "GPUSIM_DELAY") == 0;
    char copy[1024];
    if (strlen(text) >= sizeof copy)
        reject(variable, text, "the value is longer than 1023 characters");
    strcpy(copy, text);
    char *save_rule;
    for (char *rule = strtok_r(copy, ",", &save_rule); rule != NULL;
         rule = strtok_r(NULL, ",", &save_rule)) {
        char *fields[5];
        int field_count = 0;
        char *cursor = rule;
        while (field_count < 5) {
            fields[field_count++] = cursor;
            char *colon = strchr(cursor, ':');
            if (colon == NULL)
                break;
            *colon = '\0';
            cursor = colon + 1;
        }
        bool ok = delays ? parse_delay_rule(fields, field_count, settings, text)
                  : strcmp(fields[0], "rate") == 0
                      ? parse_rate_rule(fields, field_count, settings)
                      : parse_named_rule(fields, field_count, settings, text);
        if (!ok)
            reject(variable, text, delays ? delay_accepted : fail_accepted);
    }
}

void sim_read_environment(struct sim_settings *settings)
{
    memset(settings, 0, sizeof *settings);
    settings->device_count = 1;
    settings->memory_per_device = (size_t)80 << 30;

    const char *devices = getenv("GPUSIM_DEVICES");
    if (devices != NULL) {
        unsigned long long count;
        if (!parse_count(devices, &count) || count > SIM_MAX_DEVICES)
            reject("GPUSIM_DEVICES", devices, devices_accepted);
        settings->device_count = (int)count;
    }
    const char *memory = getenv("GPUSIM_MEMORY");
    if (memory != NULL) {
        size_t bytes;
        if (!parse_size(memory, &bytes) || bytes < SIM_LARGE_PAGE)
            reject("GPUSIM_MEMORY", memory, memory_accepted);
        settings->memory_per_device = bytes;
    }
    settings->granularity = SIM_LARGE_PAGE;
    const char *granularity = getenv("GPUSIM_GRANULARITY");
    if (granularity != NULL) {
        size_t bytes;
        if (!parse_size(granularity, &bytes) || bytes < (size_t)sysconf(_SC_PAGESIZE) ||
            bytes > ((size_t)1 << 30) ||
            (bytes & (bytes - 1)) != 0)
            reject("GPUSIM_GRANULARITY", granularity, granularity_accepted);
        settings->granularity = bytes;
    }
    const char *fail = getenv("GPUSIM_FAIL");
    if (fail != NULL && fail[0] != '\0')
        parse_rules("GPUSIM_FAIL", fail, settings);
    const char *delay = getenv("GPUSIM_DELAY");
    if (delay != NULL && delay[0] != '\0')
        parse_rules("GPUSIM_DELAY", delay, settings);
    const char *racecheck = getenv("GPUSIM_RACECHECK");
    if (racecheck != NULL) {
        if (strcmp(racecheck, "0") == 0)
            settings->racecheck = SIM_RACECHECK_OFF;
        else if (strcmp(racecheck, "1") == 0)
            settings->racecheck = SIM_RACECHECK_REPORT;
        else if (strcmp(racecheck, "abort") == 0)
            settings->racecheck = SIM_RACECHECK_ABORT;
        else
            reject("GPUSIM_RACECHECK", racecheck,
                   "expected 0 (off), 1 (report races, exit status 66) or abort (abort at the "
                   "first race)");
    }
    const char *stats = getenv("GPUSIM_STATS");
    if (stats != NULL) {
        if (stats[0] == '\0' || strlen(stats) >= sizeof settings->stats_path)
            reject("GPUSIM_STATS", stats, "expected a file path (shorter than 4096 bytes)");
        strcpy(settings->stats_path, stats);
    }
}

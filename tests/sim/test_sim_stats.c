/* GPUSIM_STATS: the JSON document written at exit, parsed and checked. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "sim_test_support.h"

/* A strict reader for the subset of JSON the stats file uses (objects,
 * arrays, strings without escapes, non-negative integers). It records each
 * number under its dotted path, e.g. "calls.cuInit" or "devices.0.capacity". */
struct json_values {
    char paths[256][96];
    unsigned long long numbers[256];
    int count;
};

static bool parse_value(const char **cursor, char *path, struct json_values *values);

static void skip_space(const char **cursor)
{
    while (isspace((unsigned char)**cursor))
        (*cursor)++;
}

static bool parse_string(const char **cursor, char *out, size_t capacity)
{
    if (**cursor != '"')
        return false;
    const char *end = strchr(*cursor + 1, '"');
    if (end == NULL || (size_t)(end - *cursor - 1) >= capacity)
        return false;
    memcpy(out, *cursor + 1, (size_t)(end - *cursor - 1));
    out[end - *cursor - 1] = '\0';
    *cursor = end + 1;
    return true;
}

static bool parse_members(const char **cursor, char *path, struct json_values *values,
                          bool is_object)
{
    char close = is_object ? '}' : ']';
    (*cursor)++;
    skip_space(cursor);
    if (**cursor == close) {
        (*cursor)++;
        return true;
    }
    size_t path_length = strlen(path);
    for (int index = 0;; index++) {
        char key[64];
        skip_space(cursor);
        if (is_object) {
            if (!parse_string(cursor, key, sizeof key))
                return false;
            skip_space(cursor);
            if (*(*cursor)++ != ':')
                return false;
        } else {
            snprintf(key, sizeof key, "%d", index);
        }
        snprintf(path + path_length, 96 - path_length, "%s%s", path_length ? "." : "", key);
        if (!parse_value(cursor, path, values))
            return false;
        path[path_length] = '\0';
        skip_space(cursor);
        char separator = *(*cursor)++;
        if (separator == close)
            return true;
        if (separator != ',')
            return false;
    }
}

static bool parse_value(const char **cursor, char *path, struct json_values *values)
{
    skip_space(cursor);
    if (**cursor == '{' || **cursor == '[')
        return parse_members(cursor, path, values, **cursor == '{');
    if (!isdigit((unsigned char)**cursor) || values->count == 256)
        return false;
    char *end;
    values->numbers[values->count] = strtoull(*cursor, &end, 10);
    snprintf(values->paths[values->count], sizeof values->paths[0], "%s", path);
    values->count++;
    *cursor = end;
    return true;
}

static bool parse_document(const char *text, struct json_values *values)
{
    char path[96] = "";
    values->count = 0;
    const char *cursor = text;
    if (!parse_value(&cursor, path, values))
        return false;
    skip_space(&cursor);
    return *cursor == '\0';
}

static unsigned long long value_at(const struct json_values *values, const char *path)
{
    for (int i = 0; i < values->count; i++)
        if (strcmp(values->paths[i], path) == 0)
            return values->numbers[i];
    cr_assert_fail("no number at %s", path);
    return 0;
}

static bool has_path(const struct json_values *values, const char *path)
{
    for (int i = 0; i < values->count; i++)
        if (strcmp(values->paths[i], path) == 0)
            return true;
    return false;
}

static void read_file(const char *path, char *buffer, size_t capacity)
{
    FILE *file = fopen(path, "r");
    cr_assert_not_null(file, "%s exists", path);
    size_t length = fread(buffer, 1, capacity - 1, file);
    buffer[length] = '\0';
    fclose(file);
}

/* Reads, removes and parses the stats document at `path`. */
static void load_stats_document(const char *path, struct json_values *values)
{
    char text[16384];
    read_file(path, text, sizeof text);
    unlink(path);
    cr_assert(parse_document(text, values), "valid JSON:\n%s", text);
}

Test(stats, the_reader_rejects_malformed_documents)
{
    struct json_values values;
    cr_assert(parse_document("{\"a\": {\"b\": 1}, \"c\": [2, 3]}", &values));
    cr_assert_eq(value_at(&values, "c.1"), 3);
    cr_assert_not(parse_document("{\"a\": 1,}", &values));
    cr_assert_not(parse_document("{\"a\": 1} x", &values));
    cr_assert_not(parse_document("{\"a\" 1}", &values));
}

Test(stats, written_at_exit_with_calls_peak_and_synchronizations)
{
    char path[] = "/tmp/gpusim-stats-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_neq(fd, -1);
    close(fd);
    pid_t child = fork();
    if (child == 0) {
        setenv("GPUSIM_STATS", path, 1);
        setenv("GPUSIM_DEVICES", "2", 1);
        start_device(0);
        CUdeviceptr a, b;
        cuMemAlloc(&a, 6 << 20);
        cuMemAlloc(&b, 2 << 20);
        cuMemFree(a);
        cuCtxSynchronize();
        cuStreamSynchronize(NULL);
        exit(0); /* the document is written by the exit handler */
    }
    int status;
    waitpid(child, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct json_values values;
    load_stats_document(path, &values);
    cr_assert_eq(value_at(&values, "calls.cuInit"), 1);
    cr_assert_eq(value_at(&values, "calls.cuMemAlloc_v2"), 2);
    cr_assert_eq(value_at(&values, "calls.cuMemFree_v2"), 1);
    cr_assert_eq(value_at(&values, "calls.cuCtxSynchronize"), 1);
    cr_assert_not(has_path(&values, "calls.cuMemCreate"), "only entry points that were called");
    cr_assert_eq(value_at(&values, "peak_physical_bytes"), 8 << 20);
    cr_assert_eq(value_at(&values, "current_physical_bytes"), 2 << 20);
    cr_assert_eq(value_at(&values, "synchronizations"), 2);
    cr_assert_eq(value_at(&values, "devices.0.peak_physical_bytes"), 8 << 20);
    cr_assert_eq(value_at(&values, "devices.1.current_physical_bytes"), 0);
    cr_assert_eq(value_at(&values, "devices.1.capacity"), (unsigned long long)80 << 30);
}

Test(stats, written_on_demand)
{
    start_device(0);
    CUevent event;
    EXPECT_OK(cuEventCreate(&event, 0));
    EXPECT_OK(cuEventRecord(event, NULL));
    EXPECT_OK(cuEventSynchronize(event));
    char path[] = "/tmp/gpusim-stats-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    cr_assert_eq(gpusim_write_stats(path), 0);
    struct json_values values;
    load_stats_document(path, &values);
    cr_assert_eq(value_at(&values, "calls.cuEventSynchronize"), 1);
    cr_assert_eq(value_at(&values, "synchronizations"), 1);
    cr_assert_eq(gpusim_write_stats("/nonexistent-folder/stats.json"), -1);
}

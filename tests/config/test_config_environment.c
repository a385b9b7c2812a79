/* Which variable is read, the warning when PyTorch's two disagree, the
 * process-wide configuration, and the library's load-time entry. */
#include "config_test_support.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void clear_variables(void)
{
    unsetenv("GPUCACHE_ALLOC_CONF");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    unsetenv("PYTORCH_ALLOC_CONF");
}

/* What gpucache_config_from_environment makes of the variables a test set. */
struct environment_reading {
    int status;
    struct gpucache_config config;
    struct gpucache_config_error error;
    struct gpucache_config_error warning;
};

static struct environment_reading read_environment(void)
{
    struct environment_reading reading;
    reading.status =
        gpucache_config_from_environment(&reading.config, &reading.error, &reading.warning);
    return reading;
}

Test(config, no_variable_gives_the_defaults, .init = clear_variables)
{
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0);
    cr_assert_null(reading.config.source_variable);
    cr_assert_str_empty(reading.warning.message);
    cr_assert_not(reading.config.expandable_segments);
}

Test(config, gpucache_variable_wins_over_both_pytorch_names, .init = clear_variables)
{
    setenv("GPUCACHE_ALLOC_CONF", "max_split_size_mb:64", 1);
    setenv("PYTORCH_CUDA_ALLOC_CONF", "not even valid", 1);
    setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0, "%s", reading.error.message);
    cr_assert_str_eq(reading.config.source_variable, "GPUCACHE_ALLOC_CONF");
    cr_assert_eq(reading.config.max_split_size, 64 * MiB);
    cr_assert_not(reading.config.expandable_segments);
    cr_assert_str_empty(reading.warning.message);
}

Test(config, an_empty_gpucache_variable_still_wins, .init = clear_variables)
{
    setenv("GPUCACHE_ALLOC_CONF", "", 1);
    setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0);
    cr_assert_str_eq(reading.config.source_variable, "GPUCACHE_ALLOC_CONF");
    cr_assert_not(reading.config.expandable_segments);
}

Test(config, pytorch_cuda_name_wins_and_a_difference_is_warned, .init = clear_variables)
{
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:64", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0);
    cr_assert_str_eq(reading.config.source_variable, "PYTORCH_CUDA_ALLOC_CONF");
    cr_assert(reading.config.expandable_segments);
    cr_assert_eq(reading.config.max_split_size, UINT64_MAX);
    cr_assert_str_eq(reading.warning.message,
                     "gpucache: warning: PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF are both "
                     "set and differ; using PYTORCH_CUDA_ALLOC_CONF, as PyTorch does");
}

Test(config, equal_pytorch_variables_are_not_warned, .init = clear_variables)
{
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0);
    cr_assert_str_empty(reading.warning.message);
}

Test(config, pytorch_alloc_conf_alone_is_read, .init = clear_variables)
{
    setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, 0);
    cr_assert_str_eq(reading.config.source_variable, "PYTORCH_ALLOC_CONF");
    cr_assert(reading.config.expandable_segments);
    cr_assert(reading.config.key_from_string[GPUCACHE_KEY_EXPANDABLE_SEGMENTS]);
}

Test(config, the_error_names_the_variable_read, .init = clear_variables)
{
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:true", 1);
    struct environment_reading reading = read_environment();
    cr_assert_eq(reading.status, -1);
    cr_assert_str_eq(reading.error.message, "gpucache: PYTORCH_CUDA_ALLOC_CONF: not a boolean in "
                                    "'expandable_segments:true' (expected True or False)");
}

Test(config, current_is_the_defaults_until_set)
{
    const struct gpucache_config *current = gpucache_config_current();
    cr_assert_not(current->expandable_segments);
    cr_assert_eq(current->max_split_size, UINT64_MAX);

    struct gpucache_config config = parse_accepted("expandable_segments:True");
    gpucache_config_set_current(&config);
    config.expandable_segments = false;
    cr_assert(gpucache_config_current()->expandable_segments, "set_current must copy");
}

Test(config, ignored_keys)
{
    struct gpucache_config config = parse_accepted("");
    const enum gpucache_config_key always[] = {
        GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE_BY_CLASS, GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC,
        GPUCACHE_KEY_GRAPH_CAPTURE_RECORD_STREAM_REUSE, GPUCACHE_KEY_PINNED_USE_BACKGROUND_THREADS,
        GPUCACHE_KEY_PINNED_USE_CUDA_HOST_REGISTER, GPUCACHE_KEY_PINNED_NUM_REGISTER_THREADS,
        GPUCACHE_KEY_PINNED_RESERVE_SEGMENT_SIZE_MB, GPUCACHE_KEY_PINNED_FREE_CATCH_ALL,
    };
    size_t ignored = 0;
    for (int key = 0; key < GPUCACHE_KEY_COUNT; key++)
        ignored += gpucache_config_key_ignored(&config, (enum gpucache_config_key)key);
    cr_assert_eq(ignored, sizeof always / sizeof always[0]);
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        cr_assert(gpucache_config_key_ignored(&config, always[i]));

    config = parse_accepted("backend:cudaMallocAsync");
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_EXPANDABLE_SEGMENTS));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_MAX_SPLIT_SIZE_MB));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_ROUNDUP_POWER2_DIVISIONS));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_GARBAGE_COLLECTION_THRESHOLD));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE));
    cr_assert_not(gpucache_config_key_ignored(&config, GPUCACHE_KEY_PER_PROCESS_MEMORY_FRACTION));
    cr_assert_not(gpucache_config_key_ignored(&config, GPUCACHE_KEY_REUSE));
    cr_assert_not(gpucache_config_key_ignored(&config, GPUCACHE_KEY_BACKEND));

    config = parse_accepted("passthrough:True");
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_REUSE));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_BACKEND));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_MEMINFO));
    cr_assert(gpucache_config_key_ignored(&config, GPUCACHE_KEY_EXPANDABLE_SEGMENTS));
    cr_assert_not(gpucache_config_key_ignored(&config, GPUCACHE_KEY_TRACE));
    cr_assert_not(gpucache_config_key_ignored(&config, GPUCACHE_KEY_PASSTHROUGH));
}

Test(config, keys_given_but_overruled_are_warned)
{
    struct gpucache_config_error warning;
    struct gpucache_config config = parse_accepted(
        "backend:cudaMallocAsync,max_split_size_mb:64,expandable_segments:True,"
        "per_process_memory_fraction:0.5,pinned_num_register_threads:4");
    cr_assert(gpucache_config_conflict_warning(&config, &warning));
    cr_assert_str_eq(warning.message, "gpucache: GPUCACHE_ALLOC_CONF: warning: "
                     "backend:cudaMallocAsync ignores expandable_segments,max_split_size_mb");

    config = parse_accepted("passthrough:True,reuse:relaxed,trace:t.bin");
    config.source_variable = "PYTORCH_ALLOC_CONF";
    cr_assert(gpucache_config_conflict_warning(&config, &warning));
    cr_assert_str_eq(warning.message,
                     "gpucache: PYTORCH_ALLOC_CONF: warning: passthrough:True ignores reuse");

    config = parse_accepted("backend:cudaMallocAsync,pinned_free_catch_all:True");
    cr_assert_not(gpucache_config_conflict_warning(&config, &warning));
    cr_assert_str_empty(warning.message);
}

/* Runs gpucache_config_load_or_exit in a child with `text` in `variable`;
 * returns its exit status and what it wrote to stderr. */
static int load_in_child(const char *variable, const char *text, char *output, size_t capacity)
{
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        dup2(pipe_ends[1], STDERR_FILENO);
        close(pipe_ends[0]);
        clear_variables();
        if (variable != NULL)
            setenv(variable, text, 1);
        gpucache_config_load_or_exit();
        _exit(gpucache_config_current()->expandable_segments ? 10 : 11);
    }
    close(pipe_ends[1]);
    size_t used = 0;
    ssize_t got;
    while (used + 1 < capacity && (got = read(pipe_ends[0], output + used, capacity - 1 - used)) > 0)
        used += (size_t)got;
    output[used] = '\0';
    close(pipe_ends[0]);
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

Test(config, load_or_exit_stops_a_bad_string_with_one_line)
{
    char output[2048];
    cr_assert_eq(load_in_child("GPUCACHE_ALLOC_CONF", "max_split_size_mb:1", output, sizeof output), 2);
    cr_assert_str_eq(output, "gpucache: GPUCACHE_ALLOC_CONF: max_split_size_mb too small in "
                             "'max_split_size_mb:1' (expected at least large_segment_size_mb, 20)\n");
}

Test(config, load_or_exit_installs_a_good_string_silently)
{
    char output[2048];
    cr_assert_eq(load_in_child("PYTORCH_ALLOC_CONF", "expandable_segments:True", output, sizeof output), 10);
    cr_assert_str_empty(output);
    cr_assert_eq(load_in_child(NULL, NULL, output, sizeof output), 11);
    cr_assert_str_empty(output);
}

Test(config, load_or_exit_writes_warnings_and_continues)
{
    char output[2048];
    cr_assert_eq(load_in_child("GPUCACHE_ALLOC_CONF",
                               "backend:cudaMallocAsync,expandable_segments:True", output,
                               sizeof output), 10);
    cr_assert_str_eq(output, "gpucache: GPUCACHE_ALLOC_CONF: warning: backend:cudaMallocAsync "
                             "ignores expandable_segments\n");
}

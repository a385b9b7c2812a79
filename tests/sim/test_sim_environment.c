/* GPUSIM_* parsing: good values take effect, bad ones stop the process with
 * one clear line and exit status 2. */
#include <string.h>

#include "sim_test_support.h"

struct init_outcome {
    int exit_status; /* -1 when cuInit returned */
    char message[512];
};

/* Calls cuInit in a child with `variable`=`value`; reports how it ended and
 * what it printed on stderr. */
static struct init_outcome init_with(const char *variable, const char *value)
{
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        dup2(pipe_ends[1], STDERR_FILENO);
        close(pipe_ends[0]);
        setenv(variable, value, 1);
        cuInit(0);
        _exit(99);
    }
    close(pipe_ends[1]);
    struct init_outcome outcome = {0};
    size_t length = 0;
    ssize_t got;
    while ((got = read(pipe_ends[0], outcome.message + length,
                       sizeof outcome.message - 1 - length)) > 0)
        length += (size_t)got;
    close(pipe_ends[0]);
    int status;
    waitpid(child, &status, 0);
    cr_assert(WIFEXITED(status));
    outcome.exit_status = WEXITSTATUS(status) == 99 ? -1 : WEXITSTATUS(status);
    return outcome;
}

static void expect_rejected(const char *variable, const char *value)
{
    struct init_outcome outcome = init_with(variable, value);
    cr_assert_eq(outcome.exit_status, 2, "%s=%s should stop the process", variable, value);
    cr_assert(strstr(outcome.message, variable) != NULL, "message names %s: %s", variable,
              outcome.message);
    cr_assert(strstr(outcome.message, value) != NULL, "message quotes '%s': %s", value,
              outcome.message);
    cr_assert(strstr(outcome.message, "expected") != NULL, "message says what is accepted: %s",
              outcome.message);
    /* Sanitizer runtimes may add their own lines at exit; ours is one line. */
    char *first = strstr(outcome.message, "gpusim:");
    cr_assert(first == outcome.message, "the message comes first: %s", outcome.message);
    cr_assert(strstr(first + 1, "gpusim:") == NULL, "exactly one line: %s", outcome.message);
    cr_assert(strstr(strchr(first, '\n'), variable) == NULL, "exactly one line: %s",
              outcome.message);
}

static void expect_accepted(const char *variable, const char *value)
{
    struct init_outcome outcome = init_with(variable, value);
    cr_assert_eq(outcome.exit_status, -1, "%s=%s should be accepted: %s", variable, value,
                 outcome.message);
}

Test(environment, bad_device_counts)
{
    expect_rejected("GPUSIM_DEVICES", "two");
    expect_rejected("GPUSIM_DEVICES", "17");
    expect_rejected("GPUSIM_DEVICES", "-1");
    expect_rejected("GPUSIM_DEVICES", "");
    expect_accepted("GPUSIM_DEVICES", "16");
}

Test(environment, bad_memory_sizes)
{
    expect_rejected("GPUSIM_MEMORY", "80 GiB");
    expect_rejected("GPUSIM_MEMORY", "80XB");
    expect_rejected("GPUSIM_MEMORY", "GiB");
    expect_rejected("GPUSIM_MEMORY", "1MiB");
    expect_rejected("GPUSIM_MEMORY", "99999999999TiB");
    expect_accepted("GPUSIM_MEMORY", "512MiB");
    expect_accepted("GPUSIM_MEMORY", "2g");
    expect_accepted("GPUSIM_MEMORY", "4194304");
}

Test(environment, bad_failure_rules)
{
    expect_rejected("GPUSIM_FAIL", "cuMemAlloc");
    expect_rejected("GPUSIM_FAIL", "cuMemAlloc:0");
    expect_rejected("GPUSIM_FAIL", "cuMemAlloc:x");
    expect_rejected("GPUSIM_FAIL", "cuMemAlloc:2:sometimes");
    expect_rejected("GPUSIM_FAIL", "malloc:2");
    expect_rejected("GPUSIM_FAIL", "cuMemAloc:2");
    expect_rejected("GPUSIM_FAIL", "cuMemCreate:1,cuMemMapp:1");
    expect_rejected("GPUSIM_FAIL", "rate:1.5:seed:3");
    expect_rejected("GPUSIM_FAIL", "rate:0.1:3");
    expect_accepted("GPUSIM_FAIL", "cuMemCreate:3,cuMemMap:2:oom,cuMemAlloc:1+:700");
    expect_accepted("GPUSIM_FAIL", "rate:0.01:seed:42");
}

Test(environment, bad_delay_rules)
{
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent:1");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent:0:100");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent:1:0");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent:1:1000001");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvent:1:oom");
    expect_rejected("GPUSIM_DELAY", "cuStreamWaitEvnt:1:100");
    expect_rejected("GPUSIM_DELAY", "rate:0.1:seed:3");
    expect_accepted("GPUSIM_DELAY", "cuStreamWaitEvent:1+:20000,cuMemAlloc:2:1");
}

Test(environment, bad_granularities)
{
    expect_rejected("GPUSIM_GRANULARITY", "3MiB");
    expect_rejected("GPUSIM_GRANULARITY", "1KiB");
    expect_rejected("GPUSIM_GRANULARITY", "2GiB");
    expect_accepted("GPUSIM_GRANULARITY", "64KiB");
}

Test(environment, bad_stats_path)
{
    expect_rejected("GPUSIM_STATS", "");
}

static void memory_in_gibibytes(void)
{
    setenv("GPUSIM_MEMORY", "3GiB", 1);
}

Test(environment, sizes_take_binary_units, .init = memory_in_gibibytes)
{
    start_device(0);
    size_t free_bytes, total_bytes;
    EXPECT_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(total_bytes, (size_t)3 << 30);
}

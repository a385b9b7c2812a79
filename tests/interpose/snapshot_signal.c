/* snapshot_signal:SIGUSR1 changes nothing in how the program sees SIGUSR1
 * except that a snapshot is written (at the next CUDA call after the
 * signal): the handler is there from load, so a signal before the first
 * allocation neither kills the program nor is lost; the program's own
 * handler, installed before or after the first allocation, with signal()
 * or sigaction(), still runs; sigaction reports the program's own
 * dispositions; SIG_IGN really ignores (no snapshot); a signal between
 * cache hits that take the hooks' hot path (a kept route) is written at the
 * very next allocation, synchronous or stream-ordered. Run under
 * GPUCACHE_ALLOC_CONF=snapshot:DIRECTORY/snap-%p.json,snapshot_signal:SIGUSR1
 * usage: snapshot_signal DIRECTORY CASE */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

static const char *directory;
static volatile sig_atomic_t plain_calls;
static volatile sig_atomic_t info_calls;
static volatile sig_atomic_t info_signal_number;

static void plain_handler(int signal_number)
{
    (void)signal_number;
    plain_calls++;
}

static void info_handler(int signal_number, siginfo_t *info, void *context)
{
    (void)signal_number;
    (void)context;
    info_calls++;
    info_signal_number = info ? info->si_signo : -1;
}

/* The snapshot the signal numbered `number` asked for. */
static bool signal_snapshot_exists(int number)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/snap-%ld-signal-%d.json", directory, (long)getpid(), number);
    return access(path, F_OK) == 0;
}

/* Files an earlier run with the same process id left would be refused
 * (the library never overwrites): start without them. */
static void remove_stale_snapshots(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/snap-%ld.json", directory, (long)getpid());
    unlink(path);
    for (int number = 1; number <= 4; number++) {
        snprintf(path, sizeof path, "%s/snap-%ld-signal-%d.json", directory, (long)getpid(),
                 number);
        unlink(path);
    }
}

/* One CUDA call: the safe point at which a requested snapshot is written. */
static void call_cuda(void)
{
    void *block = NULL;
    CHECK_CUDA(cudaMalloc(&block, 1 << 20));
    CHECK_CUDA(cudaFree(block));
}

/* Allocation pairs until each kind follows its kept route, then a signal
 * before each kind: the very next allocation is the safe point. */
static void signal_between_cache_hits(void)
{
    void *block = NULL;
    for (int i = 0; i < 3; i++) {
        call_cuda();
        CHECK_CUDA(cudaMallocAsync(&block, 1 << 20, 0));
        CHECK_CUDA(cudaFreeAsync(block, 0));
    }
    raise(SIGUSR1);
    CHECK_CUDA(cudaMalloc(&block, 1 << 20));
    CHECK(signal_snapshot_exists(1), "no snapshot at the cudaMalloc after the signal");
    CHECK_CUDA(cudaFree(block));
    CHECK_CUDA(cudaMallocAsync(&block, 1 << 20, 0));
    CHECK_CUDA(cudaFreeAsync(block, 0));
    raise(SIGUSR1);
    CHECK_CUDA(cudaMallocAsync(&block, 1 << 20, 0));
    CHECK(signal_snapshot_exists(2), "no snapshot at the cudaMallocAsync after the signal");
    CHECK_CUDA(cudaFreeAsync(block, 0));
    CHECK_CUDA(cudaDeviceSynchronize());
}

static void install_info_handler(struct sigaction *previous)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = info_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(SIGUSR1, &action, previous) == 0, "sigaction: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    CHECK(argc == 3, "usage: snapshot_signal DIRECTORY CASE");
    directory = argv[1];
    const char *which = argv[2];
    CHECK(mkdir(directory, 0700) == 0 || errno == EEXIST, "mkdir %s", directory);
    remove_stale_snapshots();
    struct sigaction seen;
    CHECK(sigaction(SIGUSR1, NULL, &seen) == 0, "query");
    CHECK(!(seen.sa_flags & SA_SIGINFO) && seen.sa_handler == SIG_DFL,
          "the program sees the library's handler, not its own SIG_DFL");

    if (strcmp(which, "between_cache_hits") == 0) {
        signal_between_cache_hits();
    } else if (strcmp(which, "before_first_allocation") == 0) {
        raise(SIGUSR1); /* the default action would end the program here */
        call_cuda();
        CHECK(signal_snapshot_exists(1), "no snapshot for a signal before the first allocation");
    } else if (strcmp(which, "handler_before_first_allocation") == 0) {
        struct sigaction previous;
        install_info_handler(&previous);
        CHECK(previous.sa_handler == SIG_DFL, "previous disposition was not SIG_DFL");
        call_cuda();
        raise(SIGUSR1);
        CHECK(info_calls == 1, "the program's handler ran %d times", (int)info_calls);
        CHECK(info_signal_number == SIGUSR1, "its siginfo said signal %d",
              (int)info_signal_number);
        call_cuda();
        CHECK(signal_snapshot_exists(1), "no snapshot");
    } else if (strcmp(which, "handler_after_first_allocation") == 0) {
        call_cuda();
        CHECK(signal(SIGUSR1, plain_handler) == SIG_DFL, "signal() returned another handler");
        raise(SIGUSR1);
        raise(SIGUSR1);
        CHECK(plain_calls == 2, "the program's handler ran %d times", (int)plain_calls);
        call_cuda();
        CHECK(signal_snapshot_exists(1), "no snapshot");
        struct sigaction previous;
        install_info_handler(&previous);
        CHECK(!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == plain_handler,
              "sigaction did not report the handler signal() installed");
        raise(SIGUSR1);
        CHECK(info_calls == 1 && plain_calls == 2, "the replaced handler still ran");
    } else if (strcmp(which, "reset_to_default") == 0) {
        CHECK(signal(SIGUSR1, plain_handler) == SIG_DFL, "signal() returned another handler");
        CHECK(signal(SIGUSR1, SIG_DFL) == plain_handler, "signal() lost the program's handler");
        call_cuda();
        raise(SIGUSR1); /* the key asked for a snapshot instead of termination */
        call_cuda();
        CHECK(plain_calls == 0, "a handler the program removed ran");
        CHECK(signal_snapshot_exists(1), "no snapshot");
    } else if (strcmp(which, "ignored") == 0) {
        CHECK(signal(SIGUSR1, SIG_IGN) == SIG_DFL, "signal() returned another handler");
        call_cuda();
        raise(SIGUSR1);
        call_cuda();
        CHECK(!signal_snapshot_exists(1), "a snapshot for a signal the program ignores");
        CHECK(sigaction(SIGUSR1, NULL, &seen) == 0 && seen.sa_handler == SIG_IGN, "query");
    } else {
        CHECK(false, "unknown case %s", which);
    }
    return 0;
}

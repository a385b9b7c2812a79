/* Helpers shared by the simulated-driver suites: starting a device with a
 * current context, asserting CUDA results by name, and running code in a
 * forked child to observe a memory fault. */
#ifndef SIM_TEST_SUPPORT_H
#define SIM_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <cuda.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpusim.h"

static inline const char *result_name(CUresult result)
{
    const char *name = NULL;
    if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL)
        return "(unknown CUresult)";
    return name;
}

/* Asserts that `call` returns `expected`, naming both on failure. */
#define EXPECT_RESULT(call, expected)                                                          \
    do {                                                                                       \
        CUresult actual_ = (call);                                                             \
        cr_assert_eq(actual_, (expected), "%s returned %s, expected %s", #call,                \
                     result_name(actual_), result_name(expected));                             \
    } while (0)

#define EXPECT_OK(call) EXPECT_RESULT(call, CUDA_SUCCESS)

/* cuInit, then the primary context of `ordinal` made current. */
static inline CUcontext start_device(int ordinal)
{
    CUcontext context;
    EXPECT_OK(cuInit(0));
    EXPECT_OK(cuDevicePrimaryCtxRetain(&context, ordinal));
    EXPECT_OK(cuCtxSetCurrent(context));
    return context;
}

/* The per-thread-default-stream (_ptsz/_ptds) variant of `base`, fetched the
 * way the runtime fetches it. */
static inline void *per_thread_variant(const char *base, int version)
{
    void *function = NULL;
    EXPECT_OK(cuGetProcAddress(base, &function, version,
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    cr_assert_not_null(function, "%s has a per-thread variant", base);
    return function;
}

typedef CUresult (*allocate_async_function)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*stream_id_function)(CUstream, unsigned long long *);

/* A host function that stores `written` after sleeping, to show whether
 * work queued behind it waited. */
static inline void sleep_milliseconds(int milliseconds)
{
    struct timespec pause = {.tv_sec = 0, .tv_nsec = milliseconds * 1000000L};
    nanosleep(&pause, NULL);
}

struct late_write {
    atomic_int value;
    int delay_milliseconds;
    int written;
};

static inline void CUDA_CB write_late(void *argument)
{
    struct late_write *late = argument;
    sleep_milliseconds(late->delay_milliseconds);
    atomic_store(&late->value, late->written);
}

#define FAULT_EXIT_STATUS 77

static inline void exit_on_fault(int signal_number)
{
    (void)signal_number;
    _exit(FAULT_EXIT_STATUS);
}

/* Runs `touch(argument)` in a forked child; true when it faulted (SIGSEGV or
 * SIGBUS), false when it returned normally. */
static inline bool faults_in_child(void (*touch)(void *), void *argument)
{
    pid_t child = fork();
    cr_assert_neq(child, -1, "fork failed");
    if (child == 0) {
        struct sigaction action = {.sa_handler = exit_on_fault};
        sigaction(SIGSEGV, &action, NULL);
        sigaction(SIGBUS, &action, NULL);
        touch(argument);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status), "child ended abnormally (status %d)", status);
    cr_assert(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == FAULT_EXIT_STATUS,
              "child exited with %d", WEXITSTATUS(status));
    return WEXITSTATUS(status) == FAULT_EXIT_STATUS;
}

static inline void write_byte(void *address)
{
    *(volatile char *)address = 1;
}

static inline void read_byte(void *address)
{
    (void)*(volatile char *)address;
}

#endif

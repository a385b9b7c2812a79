/* The cost of recording a call stack per event: capturing 16 frames with
 * libunwind's unw_backtrace (what the library uses, with its cache) against
 * glibc's backtrace(), interning a stack already in the table, and the snapshot
 * bytes per event with frames. Run from a call chain 24 frames deep, as an
 * allocation inside a framework would be.
 * usage: bench_stacks [ITERATIONS [capture|unw_backtrace|backtrace|intern]]
 * With a mode, only that loop runs (for instruction counts under callgrind:
 * the difference between two iteration counts is the loop's cost). */
#include <execinfo.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "gpucache_stacks.h"

static double now(void)
{
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

static long iterations = 200000;
static struct gpucache_stack_table *table;
static volatile size_t sink;

static const char *mode;

static bool runs(const char *name)
{
    return !mode || strcmp(mode, name) == 0;
}

static void measure(void)
{
    uintptr_t frames[GPUCACHE_STACK_MAX_FRAMES];
    void *raw[64];
    double start = now();
    for (long i = 0; runs("capture") && i < iterations; i++)
        sink += gpucache_stack_capture(frames, 16);
    double capture = (now() - start) / (double)iterations;
    start = now();
    for (long i = 0; runs("unw_backtrace") && i < iterations; i++)
        sink += (size_t)unw_backtrace(raw, 16);
    double unwind = (now() - start) / (double)iterations;
    start = now();
    for (long i = 0; runs("backtrace") && i < iterations; i++)
        sink += (size_t)backtrace(raw, 16);
    double glibc = (now() - start) / (double)iterations;
    size_t depth = gpucache_stack_capture(frames, 16);
    gpucache_stack_table_intern(table, frames, depth);
    start = now();
    for (long i = 0; runs("intern") && i < iterations; i++)
        sink += gpucache_stack_table_intern(table, frames, depth);
    double intern = (now() - start) / (double)iterations;
    if (mode)
        return;
    printf("16 frames from 24 deep, %ld iterations each (ns per call):\n", iterations);
    printf("  gpucache_stack_capture (unw_backtrace, cached)   %8.1f\n", capture * 1e9);
    printf("  unw_backtrace alone                                        %8.1f\n", unwind * 1e9);
    printf("  glibc backtrace()                                          %8.1f\n", glibc * 1e9);
    printf("  intern a stack already in the table                        %8.1f\n", intern * 1e9);
    printf("  recorded event with 16 frames (capture + intern)           %8.1f\n",
           (capture + intern) * 1e9);
}

__attribute__((noinline)) static void descend(int depth)
{
    if (depth == 0)
        measure();
    else
        descend(depth - 1);
    sink++;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iterations = atol(argv[1]);
    if (argc > 2)
        mode = argv[2];
    table = gpucache_stack_table_create();
    /* No frame is the library's here: every frame is unwound and kept. */
    gpucache_stack_capture_prepare(NULL);
    descend(22);
    gpucache_stack_table_destroy(table);
    return 0;
}

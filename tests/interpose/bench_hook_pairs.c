/* Steady-state cache-hit pairs through the live library on the simulated
 * device: what the interposer adds on top of the allocator, in driver calls
 * and instructions. Not a test: it prints figures.
 *
 *   LD_LIBRARY_PATH=build/sim LD_PRELOAD=$PWD/build/interpose/libgpucache.so \
 *       build/tests/interpose/bench_hook_pairs [pairs [case]]
 *
 * `case` (1-4) runs one kind of pair only: 1 cuMemAllocAsync + cuMemFreeAsync
 * on a created stream, 2 the same on the legacy stream, 3 on the per-thread
 * default stream (the _ptsz entry points), 4 cuMemAlloc + cuMemFree. Every
 * driver call the pairs cause is printed per 1,000 pairs, by name. The
 * measured pairs run in run_pairs() alone, so that
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=run_pairs ...
 * counts exactly their instructions (divide the total by `pairs`).
 *
 *   bench_hook_pairs pairs 1 threads
 *
 * runs case 1 on 1-4 threads at once, each on a stream of its own, and prints
 * the wall time per pair of all threads (its inverse is the aggregate rate). */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WARM_UP_PAIRS 10000
#define PAIR_SIZE 4096

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

enum pair_kind { PAIR_CREATED_STREAM = 1, PAIR_LEGACY_STREAM, PAIR_PER_THREAD_STREAM, PAIR_SYNCHRONOUS };

static const char *const pair_names[] = {
    [PAIR_CREATED_STREAM] = "cuMemAllocAsync + cuMemFreeAsync, created stream",
    [PAIR_LEGACY_STREAM] = "cuMemAllocAsync + cuMemFreeAsync, legacy stream",
    [PAIR_PER_THREAD_STREAM] = "cuMemAllocAsync_ptsz + cuMemFreeAsync_ptsz, per-thread stream",
    [PAIR_SYNCHRONOUS] = "cuMemAlloc + cuMemFree",
};

/* Every entry point the simulated driver counts. */
#define SIM_ENTRY_POINT(base, version, per_thread, exported) #exported,
static const char *const entry_point_names[] = {
#include "sim_entry_points.def"
};
#undef SIM_ENTRY_POINT
#define ENTRY_POINT_COUNT (sizeof entry_point_names / sizeof entry_point_names[0])

typedef unsigned long long (*call_count_function)(const char *name);

#define CHECK_DRIVER(call)                                                               \
    do {                                                                                 \
        CUresult check_result = (call);                                                  \
        if (check_result != CUDA_SUCCESS) {                                              \
            fprintf(stderr, "bench_hook_pairs: %s returned %d\n", #call, check_result); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* Kept out of line and unspecialized (no clone under another name):
 * callgrind counts exactly this function's instructions. */
#if defined(__clang__)
#define OUT_OF_LINE __attribute__((noinline))
#else
#define OUT_OF_LINE __attribute__((noipa))
#endif
static OUT_OF_LINE void run_pairs(enum pair_kind kind, CUstream stream, int pairs)
{
    CUdeviceptr pointer;
    for (int i = 0; i < pairs; i++) {
        switch (kind) {
        case PAIR_CREATED_STREAM:
        case PAIR_LEGACY_STREAM:
            CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, stream));
            CHECK_DRIVER(cuMemFreeAsync(pointer, stream));
            break;
        case PAIR_PER_THREAD_STREAM:
            CHECK_DRIVER(cuMemAllocAsync_ptsz(&pointer, PAIR_SIZE, stream));
            CHECK_DRIVER(cuMemFreeAsync_ptsz(pointer, stream));
            break;
        case PAIR_SYNCHRONOUS:
            CHECK_DRIVER(cuMemAlloc(&pointer, PAIR_SIZE));
            CHECK_DRIVER(cuMemFree(pointer));
            break;
        }
    }
}

static void measure(enum pair_kind kind, int pairs, call_count_function call_count)
{
    CUstream stream = NULL;
    if (kind == PAIR_CREATED_STREAM)
        CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    run_pairs(kind, stream, WARM_UP_PAIRS);
    unsigned long long before[ENTRY_POINT_COUNT];
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++)
        before[i] = call_count(entry_point_names[i]);
    run_pairs(kind, stream, pairs);
    printf("%s: %d pairs; driver calls per 1,000 pairs:", pair_names[kind], pairs);
    const char *separator = " ";
    for (size_t i = 0; i < ENTRY_POINT_COUNT; i++) {
        unsigned long long calls = call_count(entry_point_names[i]) - before[i];
        /* The pairs' own calls reach the library, never the driver, when
         * the cache serves them; the sim counts every other one. */
        if (calls != 0) {
            printf("%s%s %.1f", separator, entry_point_names[i], 1000.0 * (double)calls / pairs);
            separator = ", ";
        }
    }
    printf("%s\n", *separator == ' ' ? " none" : "");
    CHECK_DRIVER(cuCtxSynchronize());
    if (stream)
        CHECK_DRIVER(cuStreamDestroy(stream));
}

#define MAX_THREADS 4

struct thread_run {
    CUcontext context;
    int pairs;
    pthread_barrier_t *start;
    long long started_ns, finished_ns;
};

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *run_thread(void *argument)
{
    struct thread_run *run = argument;
    CUstream stream;
    CHECK_DRIVER(cuCtxSetCurrent(run->context));
    CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    run_pairs(PAIR_CREATED_STREAM, stream, WARM_UP_PAIRS);
    pthread_barrier_wait(run->start);
    run->started_ns = now_ns();
    run_pairs(PAIR_CREATED_STREAM, stream, run->pairs);
    run->finished_ns = now_ns();
    CHECK_DRIVER(cuStreamSynchronize(stream));
    CHECK_DRIVER(cuStreamDestroy(stream));
    return NULL;
}

static void measure_threads(CUcontext context, int pairs, int threads)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    struct thread_run runs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        runs[i] = (struct thread_run){context, pairs, &start, 0, 0};
        if (pthread_create(&ids[i], NULL, run_thread, &runs[i]) != 0)
            exit(1);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(ids[i], NULL);
    long long first = runs[0].started_ns, last = runs[0].finished_ns;
    for (int i = 1; i < threads; i++) {
        if (runs[i].started_ns < first)
            first = runs[i].started_ns;
        if (runs[i].finished_ns > last)
            last = runs[i].finished_ns;
    }
    printf("%s, %d thread%s: wall %.1f ns per pair of all threads\n",
           pair_names[PAIR_CREATED_STREAM], threads, threads == 1 ? "" : "s",
           (double)(last - first) / ((double)pairs * threads));
    pthread_barrier_destroy(&start);
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 100000;
    int only = argc > 2 ? atoi(argv[2]) : 0;
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    if (argc > 4 || pairs < 1 || only < 0 || only > PAIR_SYNCHRONOUS ||
        (argc > 3 && (only != PAIR_CREATED_STREAM || threads < 1 || threads > MAX_THREADS))) {
        fprintf(stderr, "usage: %s [pairs [case (1-4) [threads (1-%d, case 1 only)]]]\n",
                argv[0], MAX_THREADS);
        return 2;
    }
    call_count_function call_count = (call_count_function)dlsym(RTLD_DEFAULT, "gpusim_call_count");
    if (!call_count) {
        fprintf(stderr, "bench_hook_pairs: run on the simulated device (LD_LIBRARY_PATH=build/sim)\n");
        return 2;
    }
    CUdevice device;
    CUcontext context;
    CHECK_DRIVER(cuInit(0));
    CHECK_DRIVER(cuDeviceGet(&device, 0));
    CHECK_DRIVER(cuDevicePrimaryCtxRetain(&context, device));
    CHECK_DRIVER(cuCtxSetCurrent(context));
    if (threads > 0) {
        measure_threads(context, pairs, threads);
        return 0;
    }
    for (int kind = PAIR_CREATED_STREAM; kind <= PAIR_SYNCHRONOUS; kind++)
        if (only == 0 || only == kind)
            measure((enum pair_kind)kind, pairs, call_count);
    return 0;
}

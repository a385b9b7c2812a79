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
 * counts exactly their instructions (divide the total by `pairs`). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    int pairs = argc > 1 ? atoi(argv[1]) : 100000;
    int only = argc > 2 ? atoi(argv[2]) : 0;
    if (argc > 3 || pairs < 1 || only < 0 || only > PAIR_SYNCHRONOUS) {
        fprintf(stderr, "usage: %s [pairs [case (1-4)]]\n", argv[0]);
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
    for (int kind = PAIR_CREATED_STREAM; kind <= PAIR_SYNCHRONOUS; kind++)
        if (only == 0 || only == kind)
            measure((enum pair_kind)kind, pairs, call_count);
    return 0;
}

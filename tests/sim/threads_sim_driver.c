/* Multithreaded use of the simulated driver, as a plain program so that it
 * also runs under ThreadSanitizer (Criterion cannot start under TSan).
 * Several threads allocate, copy, free in stream order, synchronize and map
 * VMM pages at once; each checks its own data and the device's accounting
 * must come back to zero. Exit status 0 means every check held. */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusim.h"

#define THREADS 7
#define ROUNDS 40

static atomic_int failures;

#define CHECK(condition)                                                                   \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition);  \
            atomic_fetch_add(&failures, 1);                                                \
            return NULL;                                                                   \
        }                                                                                  \
    } while (0)

#define CHECK_OK(call) CHECK((call) == CUDA_SUCCESS)

static CUcontext context;

/* Stream-ordered allocate, fill, read back and free on a private stream. */
static void *stream_ordered_round_trips(void *argument)
{
    int seed = (int)(intptr_t)argument;
    CHECK_OK(cuCtxSetCurrent(context));
    CUstream stream;
    CHECK_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    unsigned char *host;
    CHECK_OK(cuMemHostAlloc((void **)&host, 1 << 16, 0));
    for (int round = 0; round < ROUNDS; round++) {
        size_t size = (size_t)(1 + (seed * 7919 + round * 104729) % (1 << 16));
        unsigned char pattern = (unsigned char)(seed * 31 + round);
        CUdeviceptr device;
        CHECK_OK(cuMemAllocAsync(&device, size, stream));
        CHECK_OK(cuMemsetD8Async(device, pattern, size, stream));
        CHECK_OK(cuMemcpyDtoHAsync(host, device, size, stream));
        CHECK_OK(cuMemFreeAsync(device, stream));
        CHECK_OK(cuStreamSynchronize(stream));
        CHECK(host[0] == pattern && host[size - 1] == pattern);
    }
    CHECK_OK(cuMemFreeHost(host));
    CHECK_OK(cuStreamDestroy(stream));
    return NULL;
}

/* Synchronous allocations on the per-thread default stream. */
static void *per_thread_copies(void *argument)
{
    (void)argument;
    CHECK_OK(cuCtxSetCurrent(context));
    char message[64], back[64];
    for (int round = 0; round < ROUNDS; round++) {
        CUdeviceptr device;
        CHECK_OK(cuMemAlloc(&device, sizeof message));
        snprintf(message, sizeof message, "round %d of thread %p", round, (void *)&message);
        CHECK_OK(cuMemcpyAsync(device, (CUdeviceptr)message, sizeof message, CU_STREAM_PER_THREAD));
        CHECK_OK(cuMemcpyAsync((CUdeviceptr)back, device, sizeof back, CU_STREAM_PER_THREAD));
        CHECK_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
        CHECK(strcmp(message, back) == 0);
        CHECK_OK(cuMemFree(device));
    }
    return NULL;
}

/* Reserve, create, map, write, unmap and release VMM pages. */
static void *vmm_cycles(void *argument)
{
    (void)argument;
    CHECK_OK(cuCtxSetCurrent(context));
    CUmemAllocationProp properties = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                      .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAccessDesc access = {.location = properties.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t page = (size_t)2 << 20;
    for (int round = 0; round < ROUNDS / 4; round++) {
        CUdeviceptr base;
        CUmemGenericAllocationHandle handle;
        CHECK_OK(cuMemAddressReserve(&base, 2 * page, 0, 0, 0));
        CHECK_OK(cuMemCreate(&handle, page, &properties, 0));
        CHECK_OK(cuMemMap(base + page, page, 0, handle, 0));
        CHECK_OK(cuMemSetAccess(base + page, page, &access, 1));
        ((volatile char *)base)[page + (size_t)round] = (char)round;
        CHECK(((volatile char *)base)[page + (size_t)round] == (char)round);
        CHECK_OK(cuMemUnmap(base + page, page));
        CHECK_OK(cuMemRelease(handle));
        CHECK_OK(cuMemAddressFree(base, 2 * page));
    }
    return NULL;
}

struct ordering {
    atomic_int step;
    int observed;
};

static void CUDA_CB slow_step(void *argument)
{
    struct ordering *order = argument;
    for (volatile int spin = 0; spin < 2000000; spin++)
        ;
    atomic_store(&order->step, 1);
}

static void CUDA_CB observe_step(void *argument)
{
    struct ordering *order = argument;
    order->observed = atomic_load(&order->step);
}

/* Legacy-stream work queued from another thread after blocking-stream work
 * still waits for it. */
static void *legacy_ordering(void *argument)
{
    (void)argument;
    CHECK_OK(cuCtxSetCurrent(context));
    CUstream blocking;
    CHECK_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    for (int round = 0; round < 5; round++) {
        struct ordering order = {0};
        CHECK_OK(cuLaunchHostFunc(blocking, slow_step, &order));
        CHECK_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, observe_step, &order));
        CHECK_OK(cuStreamSynchronize(CU_STREAM_LEGACY));
        CHECK(order.observed == 1);
    }
    CHECK_OK(cuStreamDestroy(blocking));
    return NULL;
}

static void CUDA_CB never_runs(void *argument)
{
    atomic_store((atomic_int *)argument, 1);
}

/* Thread-local captures in one thread while the others keep allocating:
 * they must neither fail the others nor run captured work. */
static void *capture_cycles(void *argument)
{
    (void)argument;
    CHECK_OK(cuCtxSetCurrent(context));
    CUstream stream;
    CHECK_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    atomic_int ran = 0;
    for (int round = 0; round < ROUNDS; round++) {
        CHECK_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        CUdeviceptr graph_memory;
        CHECK_OK(cuMemAllocAsync(&graph_memory, 1 << 20, stream));
        CHECK_OK(cuLaunchHostFunc(stream, never_runs, &ran));
        CHECK_OK(cuMemFreeAsync(graph_memory, stream));
        CUstreamCaptureStatus status;
        CHECK_OK(cuStreamIsCapturing(stream, &status));
        CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        CUgraph graph;
        CHECK_OK(cuStreamEndCapture(stream, &graph));
        CHECK_OK(cuGraphDestroy(graph));
    }
    CHECK(atomic_load(&ran) == 0);
    CHECK_OK(cuStreamDestroy(stream));
    return NULL;
}

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&context, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "cannot start the simulated device\n");
        return 1;
    }
    void *(*workers[])(void *) = {stream_ordered_round_trips, stream_ordered_round_trips,
                                  per_thread_copies,          per_thread_copies,
                                  vmm_cycles,                 legacy_ordering,
                                  capture_cycles};
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, workers[i], (void *)(intptr_t)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    cuCtxSetCurrent(context);
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        atomic_fetch_add(&failures, 1);
    if (gpusim_physical_bytes(0) != 0) {
        fprintf(stderr, "%zu physical bytes still charged\n", gpusim_physical_bytes(0));
        atomic_fetch_add(&failures, 1);
    }
    cuDevicePrimaryCtxRelease(0);
    int failed = atomic_load(&failures);
    printf("%d thread checks failed\n", failed);
    return failed == 0 ? 0 : 1;
}

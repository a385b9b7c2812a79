/* What the allocation hooks keep between calls instead of asking the driver
 * (the current context and device per thread, the device of a stream,
 * whether any capture is in progress) must be dropped at every change the
 * program can make. Each mode first lets the library keep an answer with a
 * cache-hit pair, then makes one change through one entry point, and checks
 * that the next allocation sees it:
 *
 *   capture-v1, capture-v2, capture-ptsz, capture-v2-ptsz, capture-runtime,
 *   capture-joined, capture-implicit: a capture begun after a pair on the
 *     same stream keeps the next allocation and free with the driver (graph
 *     memory nodes), and once it ends the cache serves again;
 *   context-set, context-push, context-pop, context-set-device: an
 *     allocation after a switch to the other device's context is that
 *     context's memory (needs GPUSIM_DEVICES=2);
 *   context-create, context-destroy: a created context is served by the
 *     driver (one allocator per device), and after its destroy the primary
 *     context is served from the cache again;
 *   device-reset: after cudaDeviceReset the cache serves the new primary
 *     context, not the dead one;
 *   stream-reused: a stream destroyed and created again with the same
 *     handle value on the other device places allocations on that device
 *     (needs GPUSIM_DEVICES=2; skipped when the handle value never comes
 *     back);
 *   destroyed-stream-fence: the fences of a stream the program destroyed
 *     (its last clearing fence, and a synchronous free's fence that the
 *     legacy stream orders after its work) are queried only until they
 *     complete: legacy-stream cache hits afterwards soon cost no
 *     cuEventQuery. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#define SKIPPED 77
#define PAIR_SIZE 4096

#define CHECK_DRIVER(call)                                                             \
    do {                                                                               \
        CUresult check_driver_result = (call);                                         \
        CHECK(check_driver_result == CUDA_SUCCESS, "%s returned %d", #call,            \
              check_driver_result);                                                    \
    } while (0)

typedef CUresult (*begin_capture_v1_function)(CUstream stream);
typedef CUresult (*begin_capture_v2_function)(CUstream stream, CUstreamCaptureMode mode);
typedef CUresult (*end_capture_function)(CUstream stream, CUgraph *graph);
typedef CUresult (*alloc_async_function)(CUdeviceptr *pointer, size_t size, CUstream stream);
typedef CUresult (*free_async_function)(CUdeviceptr pointer, CUstream stream);

/* The entry point as a program resolves it: through cuGetProcAddress,
 * whose answer the library replaces by its hook. */
static void *entry_point(const char *name, int version, bool per_thread)
{
    void *function = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK_DRIVER(cuGetProcAddress(name, &function, version,
                                  per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                             : CU_GET_PROC_ADDRESS_DEFAULT,
                                  &status));
    CHECK(function != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS, "no %s", name);
    return function;
}

struct async_calls {
    alloc_async_function alloc;
    free_async_function free;
};

static struct async_calls async_calls(bool per_thread)
{
    return (struct async_calls){entry_point("cuMemAllocAsync", 11020, per_thread),
                                entry_point("cuMemFreeAsync", 11020, per_thread)};
}

/* A cache-hit pair on `stream`: the library now keeps its answers about the
 * stream and the current context. */
static void served_pair(struct async_calls calls, CUstream stream)
{
    CUdeviceptr pointer;
    CHECK_DRIVER(calls.alloc(&pointer, PAIR_SIZE, stream));
    CHECK_DRIVER(calls.free(pointer, stream));
    unsigned long long before = simulated_driver_calls("cuMemAllocAsync") +
                                simulated_driver_calls("cuMemAllocAsync_ptsz");
    CHECK_DRIVER(calls.alloc(&pointer, PAIR_SIZE, stream));
    CHECK_DRIVER(calls.free(pointer, stream));
    CHECK(simulated_driver_calls("cuMemAllocAsync") +
                  simulated_driver_calls("cuMemAllocAsync_ptsz") ==
              before,
          "a pair outside any capture reached the driver: the cache did not serve it");
}

/* During a capture on `stream`, an allocation and its free reach the
 * driver (graph memory nodes). */
static void captured_pair_reaches_driver(struct async_calls calls, CUstream stream)
{
    unsigned long long before = simulated_driver_calls("cuMemAllocAsync") +
                                simulated_driver_calls("cuMemAllocAsync_ptsz");
    unsigned long long frees_before = simulated_driver_calls("cuMemFreeAsync") +
                                      simulated_driver_calls("cuMemFreeAsync_ptsz");
    CUdeviceptr pointer = 0;
    CHECK_DRIVER(calls.alloc(&pointer, PAIR_SIZE, stream));
    CHECK_DRIVER(calls.free(pointer, stream));
    CHECK(simulated_driver_calls("cuMemAllocAsync") +
                  simulated_driver_calls("cuMemAllocAsync_ptsz") ==
              before + 1,
          "an allocation during the capture was served by the cache");
    CHECK(simulated_driver_calls("cuMemFreeAsync") +
                  simulated_driver_calls("cuMemFreeAsync_ptsz") ==
              frees_before + 1,
          "a free during the capture was served by the cache");
}

static void end_capture(end_capture_function end, CUstream stream)
{
    CUgraph graph = NULL;
    CHECK_DRIVER(end(stream, &graph));
    CHECK_DRIVER(cuGraphDestroy(graph));
}

static int capture_mode(const char *mode)
{
    bool per_thread = strstr(mode, "ptsz") != NULL;
    struct async_calls calls = async_calls(per_thread);
    end_capture_function end = entry_point("cuStreamEndCapture", 10000, per_thread);
    CUstream stream;
    /* The per-thread default stream is the handle 0 of a _ptsz call. */
    if (per_thread)
        stream = NULL;
    else
        CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    served_pair(calls, stream);
    if (strcmp(mode, "capture-v1") == 0 || strcmp(mode, "capture-ptsz") == 0) {
        begin_capture_v1_function begin = entry_point("cuStreamBeginCapture", 10000, per_thread);
        CHECK_DRIVER(begin(stream));
    } else if (strcmp(mode, "capture-runtime") == 0) {
        CHECK_CUDA(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeRelaxed));
    } else {
        begin_capture_v2_function begin = entry_point("cuStreamBeginCapture", 10010, per_thread);
        CHECK_DRIVER(begin(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    }
    captured_pair_reaches_driver(calls, stream);
    if (strcmp(mode, "capture-runtime") == 0) {
        cudaGraph_t graph;
        CHECK_CUDA(cudaStreamEndCapture((cudaStream_t)stream, &graph));
        CHECK_CUDA(cudaGraphDestroy(graph));
    } else {
        end_capture(end, stream);
    }
    /* The end was seen: the cache serves again. */
    served_pair(calls, stream);
    if (stream)
        CHECK_DRIVER(cuStreamDestroy(stream));
    return 0;
}

/* A stream that joins a capture by waiting on an event recorded in it. */
static int capture_joined_mode(void)
{
    struct async_calls calls = async_calls(false);
    CUstream origin, joined;
    CHECK_DRIVER(cuStreamCreate(&origin, CU_STREAM_NON_BLOCKING));
    CHECK_DRIVER(cuStreamCreate(&joined, CU_STREAM_NON_BLOCKING));
    served_pair(calls, joined);
    CUevent fork, join;
    CHECK_DRIVER(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK_DRIVER(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CHECK_DRIVER(cuStreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_DRIVER(cuEventRecord(fork, origin));
    CHECK_DRIVER(cuStreamWaitEvent(joined, fork, 0));
    captured_pair_reaches_driver(calls, joined);
    CHECK_DRIVER(cuEventRecord(join, joined));
    CHECK_DRIVER(cuStreamWaitEvent(origin, join, 0));
    end_capture(cuStreamEndCapture, origin);
    served_pair(calls, joined);
    CHECK_DRIVER(cuEventDestroy(fork));
    CHECK_DRIVER(cuEventDestroy(join));
    CHECK_DRIVER(cuStreamDestroy(joined));
    CHECK_DRIVER(cuStreamDestroy(origin));
    return 0;
}

/* The legacy stream reports an implicit capture while a blocking stream of
 * its context captures: an allocation on it is the driver's to answer. */
static int capture_implicit_mode(void)
{
    struct async_calls calls = async_calls(false);
    served_pair(calls, CU_STREAM_LEGACY);
    CUstream blocking;
    CHECK_DRIVER(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK_DRIVER(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    unsigned long long before = simulated_driver_calls("cuMemAllocAsync");
    CUdeviceptr pointer = 0;
    CUresult result = calls.alloc(&pointer, PAIR_SIZE, CU_STREAM_LEGACY);
    CHECK(simulated_driver_calls("cuMemAllocAsync") == before + 1,
          "an allocation on the legacy stream during a blocking stream's capture was served "
          "by the cache (result %d)", result);
    if (result == CUDA_SUCCESS)
        calls.free(pointer, CU_STREAM_LEGACY);
    CUgraph graph = NULL;
    cuStreamEndCapture(blocking, &graph);
    if (graph)
        cuGraphDestroy(graph);
    CHECK_DRIVER(cuStreamDestroy(blocking));
    return 0;
}

static CUcontext primary_context(int device)
{
    CUcontext context;
    CHECK_DRIVER(cuDevicePrimaryCtxRetain(&context, device));
    return context;
}

static CUcontext context_of(CUdeviceptr pointer)
{
    CUcontext context = NULL;
    CHECK_DRIVER(cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, pointer));
    return context;
}

/* A synchronous and an async allocation in the current context are that
 * context's memory. */
static void allocations_land_in(CUcontext expected, const char *after)
{
    CUdeviceptr pointer;
    CHECK_DRIVER(cuMemAlloc(&pointer, PAIR_SIZE));
    CHECK(context_of(pointer) == expected, "cuMemAlloc after %s: memory of another context",
          after);
    CHECK_DRIVER(cuMemFree(pointer));
    CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, CU_STREAM_LEGACY));
    CHECK(context_of(pointer) == expected,
          "cuMemAllocAsync after %s: memory of another context", after);
    CHECK_DRIVER(cuMemFreeAsync(pointer, CU_STREAM_LEGACY));
    CHECK_DRIVER(cuCtxSynchronize());
}

static void cached_pairs(void)
{
    CUdeviceptr pointer;
    for (int i = 0; i < 4; i++) {
        CHECK_DRIVER(cuMemAlloc(&pointer, PAIR_SIZE));
        CHECK_DRIVER(cuMemFree(pointer));
        CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, CU_STREAM_LEGACY));
        CHECK_DRIVER(cuMemFreeAsync(pointer, CU_STREAM_LEGACY));
    }
}

/* cached_pairs with a synchronize after every free: each allocation then
 * finds every earlier block reusable by its stream, whenever the device
 * completes the fences. */
static void synchronized_pairs(void)
{
    CUdeviceptr pointer;
    for (int i = 0; i < 4; i++) {
        CHECK_DRIVER(cuMemAlloc(&pointer, PAIR_SIZE));
        CHECK_DRIVER(cuMemFree(pointer));
        CHECK_DRIVER(cuCtxSynchronize());
        CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, CU_STREAM_LEGACY));
        CHECK_DRIVER(cuMemFreeAsync(pointer, CU_STREAM_LEGACY));
        CHECK_DRIVER(cuCtxSynchronize());
    }
}

static int context_mode(const char *mode)
{
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    if (devices < 2) {
        fprintf(stderr, "%s needs GPUSIM_DEVICES=2\n", mode);
        return SKIPPED;
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(NULL));
    CUcontext first = primary_context(0), second = primary_context(1);
    CHECK_DRIVER(cuCtxSetCurrent(first));
    cached_pairs();
    allocations_land_in(first, "binding the first device");
    if (strcmp(mode, "context-set") == 0) {
        CHECK_DRIVER(cuCtxSetCurrent(second));
        allocations_land_in(second, "cuCtxSetCurrent");
    } else if (strcmp(mode, "context-push") == 0) {
        CHECK_DRIVER(cuCtxPushCurrent(second));
        allocations_land_in(second, "cuCtxPushCurrent");
    } else if (strcmp(mode, "context-pop") == 0) {
        CHECK_DRIVER(cuCtxPushCurrent(second));
        allocations_land_in(second, "cuCtxPushCurrent");
        CUcontext popped;
        CHECK_DRIVER(cuCtxPopCurrent(&popped));
        allocations_land_in(first, "cuCtxPopCurrent");
    } else {
        CHECK_CUDA(cudaSetDevice(1));
        CHECK_CUDA(cudaFree(NULL)); /* binds the device's context to the thread */
        allocations_land_in(second, "cudaSetDevice");
    }
    return 0;
}

static int context_lifetime_mode(const char *mode)
{
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(NULL));
    CUcontext primary = primary_context(0);
    CHECK_DRIVER(cuCtxSetCurrent(primary));
    cached_pairs();
    CUcontext created;
    CUctxCreateParams parameters;
    memset(&parameters, 0, sizeof parameters);
    CHECK_DRIVER(cuCtxCreate(&created, &parameters, 0, 0));
    /* One allocator per device, bound to its first context: the created
     * context's allocations are the driver's. */
    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    allocations_land_in(created, "cuCtxCreate");
    CHECK(simulated_driver_calls("cuMemAlloc_v2") > before,
          "an allocation in a created context was served by the primary context's cache");
    if (strcmp(mode, "context-destroy") == 0) {
        CHECK_DRIVER(cuCtxDestroy(created));
        CUcontext current = NULL;
        CHECK_DRIVER(cuCtxGetCurrent(&current));
        if (current == NULL)
            CHECK_DRIVER(cuCtxSetCurrent(primary));
        else
            CHECK(current == primary, "the destroy made another context current");
        cached_pairs();
        /* Which free blocks the next pairs may take depends on when the
         * device completes the fences of the last ones (a block freed on one
         * stream keeps another's request off its neighbours until then):
         * synchronizes make every one of them reusable, so only the routing
         * is measured. */
        CHECK_DRIVER(cuCtxSynchronize());
        before = simulated_driver_calls("cuMemAlloc_v2");
        synchronized_pairs();
        CHECK(simulated_driver_calls("cuMemAlloc_v2") == before,
              "after the created context's destroy the primary context is not served from "
              "the cache");
        allocations_land_in(primary, "cuCtxDestroy");
    } else {
        CHECK_DRIVER(cuCtxDestroy(created));
    }
    return 0;
}

static int device_reset_mode(void)
{
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(NULL));
    cached_pairs();
    CHECK_CUDA(cudaDeviceReset());
    CHECK_CUDA(cudaFree(NULL)); /* the runtime binds the new primary context */
    CUcontext current = NULL;
    CHECK_DRIVER(cuCtxGetCurrent(&current));
    CHECK(current != NULL, "no context after the reset");
    cached_pairs();
    allocations_land_in(current, "cudaDeviceReset");
    /* Each free is followed by a context synchronize, so every freed block
     * is reusable by either kind of allocation at once and the pairs are
     * hits whatever the timing: without it, whether a block freed on the
     * legacy stream is cleared for the next cuMemAlloc depends on when its
     * fence completes, and a miss asks the driver. */
    unsigned long long before = simulated_driver_calls("cuMemAlloc_v2");
    synchronized_pairs();
    CHECK(simulated_driver_calls("cuMemAlloc_v2") == before,
          "after the reset the new primary context is not served from the cache");
    return 0;
}

static int stream_reused_mode(void)
{
    int devices = 0;
    CHECK_CUDA(cudaGetDeviceCount(&devices));
    if (devices < 2) {
        fprintf(stderr, "stream-reused needs GPUSIM_DEVICES=2\n");
        return SKIPPED;
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(NULL));
    CUcontext first = primary_context(0), second = primary_context(1);
    CHECK_DRIVER(cuCtxSetCurrent(second));
    cached_pairs(); /* device 1 has its allocator */
    CHECK_DRIVER(cuCtxSetCurrent(first));
    CUstream stream;
    CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    struct async_calls calls = async_calls(false);
    served_pair(calls, stream);
    CUstream old_handle = stream;
    CHECK_DRIVER(cuStreamDestroy(stream));
    /* The same handle value, now a stream of the second device. The
     * simulated driver's handle is its stream's memory, which the stream's
     * worker frees as it exits; with one malloc arena (MALLOC_ARENA_MAX=1)
     * the next stream soon gets it back. */
    CHECK_DRIVER(cuCtxSetCurrent(second));
    bool reused = false;
    for (int attempt = 0; attempt < 1000 && !reused; attempt++) {
        usleep(1000);
        CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        reused = stream == old_handle;
        if (!reused)
            CHECK_DRIVER(cuStreamDestroy(stream));
    }
    if (!reused) {
        fprintf(stderr, "the driver never handed out the destroyed stream's handle again\n");
        return SKIPPED;
    }
    /* From the first device's context, as programs may (the stream names
     * the device). */
    CHECK_DRIVER(cuCtxSetCurrent(first));
    CUdeviceptr pointer;
    CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, stream));
    CHECK(context_of(pointer) == second,
          "an allocation on a re-created stream went to the destroyed stream's device");
    CHECK_DRIVER(cuMemFreeAsync(pointer, stream));
    CHECK_DRIVER(cuStreamSynchronize(stream));
    CHECK_DRIVER(cuStreamDestroy(stream));
    return 0;
}

static int destroyed_stream_fence_mode(void)
{
    CUstream stream;
    CUdeviceptr pointer;
    CHECK_DRIVER(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 100; i++) {
        CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, stream));
        CHECK_DRIVER(cuMemFreeAsync(pointer, stream));
    }
    CHECK_DRIVER(cuMemAlloc(&pointer, PAIR_SIZE));
    CHECK_DRIVER(cuMemFree(pointer));
    CHECK_DRIVER(cuStreamDestroy(stream));
    /* Rounds of pairs with a pause between them, so that the simulated
     * device's stream workers get a core: an event that completes is never
     * asked about again. */
    for (int round = 0; round < 200; round++) {
        unsigned long long before = simulated_driver_calls("cuEventQuery");
        for (int i = 0; i < 1000; i++) {
            CHECK_DRIVER(cuMemAllocAsync(&pointer, PAIR_SIZE, CU_STREAM_LEGACY));
            CHECK_DRIVER(cuMemFreeAsync(pointer, CU_STREAM_LEGACY));
        }
        if (simulated_driver_calls("cuEventQuery") == before)
            return 0;
        usleep(10000);
    }
    CHECK(false, "the fences of the destroyed stream were still queried after 200 rounds");
    return 1;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: %s MODE", argv[0]);
    CHECK(library_is_caching(), "run this under the caching library");
    CHECK_CUDA(cudaFree(NULL));
    const char *mode = argv[1];
    if (strcmp(mode, "capture-joined") == 0)
        return capture_joined_mode();
    if (strcmp(mode, "capture-implicit") == 0)
        return capture_implicit_mode();
    if (strncmp(mode, "capture-", 8) == 0)
        return capture_mode(mode);
    if (strcmp(mode, "context-create") == 0 || strcmp(mode, "context-destroy") == 0)
        return context_lifetime_mode(mode);
    if (strncmp(mode, "context-", 8) == 0)
        return context_mode(mode);
    if (strcmp(mode, "device-reset") == 0)
        return device_reset_mode();
    if (strcmp(mode, "stream-reused") == 0)
        return stream_reused_mode();
    if (strcmp(mode, "destroyed-stream-fence") == 0)
        return destroyed_stream_fence_mode();
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}

/* Many threads using the runtime at once, as a plain program (Criterion
 * cannot start under ThreadSanitizer) so the TSan build checks the runtime's
 * shared state: the one-time driver load raced by every thread's first call,
 * primary-context binding, the kernel registry, and the per-thread last error
 * and default streams. Exits 0 when every thread saw CUDA's semantics. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudart_registration.h"

/* Declared by cuda_runtime_api.h only for code compiled per-thread. */
extern cudaError_t CUDARTAPI cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId);
extern cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                                  enum cudaMemcpyKind kind, cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);

enum { THREAD_COUNT = 8, ROUNDS = 20, BUFFER_SIZE = 1 << 14 };

static pthread_barrier_t all_started;
static unsigned long long per_thread_stream_ids[THREAD_COUNT];
static atomic_int failures;

#define EXPECT(condition, ...)                                                                     \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            atomic_fetch_add(&failures, 1);                                                        \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

#define EXPECT_SUCCESS(call, thread)                                                               \
    do {                                                                                           \
        cudaError_t status_ = (call);                                                              \
        EXPECT(status_ == cudaSuccess, "thread %d: %s returned %s", thread, #call,                 \
               cudaGetErrorName(status_));                                                         \
    } while (0)

static void CUDART_CB count_up(void *counter)
{
    atomic_fetch_add((atomic_int *)counter, 1);
}

static void kernel_stub(void) {}

static void *exercise_runtime(void *index_pointer)
{
    int thread = (int)(intptr_t)index_pointer;
    pthread_barrier_wait(&all_started);

    /* Every thread's first call races for the driver load and the context. */
    void *device_memory = NULL;
    cudaError_t allocation = cudaMalloc(&device_memory, BUFFER_SIZE);

    /* Last errors stay with the thread that caused them: every thread fails
     * a call before any thread reads its last error. */
    cudaError_t own_error = thread % 2 == 0 ? cudaErrorInvalidValue : cudaErrorInvalidDevice;
    if (thread % 2 == 0)
        (void)cudaMalloc(NULL, 1);
    else
        (void)cudaSetDevice(1000 + thread);
    pthread_barrier_wait(&all_started);
    EXPECT(allocation == cudaSuccess, "thread %d: cudaMalloc returned %s", thread, cudaGetErrorName(allocation));
    cudaError_t seen = cudaGetLastError();
    EXPECT(seen == own_error, "thread %d saw last error %s, not its own %s", thread, cudaGetErrorName(seen),
           cudaGetErrorName(own_error));

    cudaStream_t stream;
    EXPECT_SUCCESS(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), thread);
    unsigned char *source = malloc(BUFFER_SIZE), *back = malloc(BUFFER_SIZE);
    atomic_int host_functions_run = 0;
    for (int round = 0; round < ROUNDS; round++) {
        memset(source, thread * ROUNDS + round, BUFFER_SIZE);
        EXPECT_SUCCESS(cudaMemcpyAsync(device_memory, source, BUFFER_SIZE, cudaMemcpyHostToDevice, stream),
                       thread);
        EXPECT_SUCCESS(cudaLaunchHostFunc(stream, count_up, &host_functions_run), thread);
        EXPECT_SUCCESS(cudaMemcpyAsync(back, device_memory, BUFFER_SIZE, cudaMemcpyDeviceToHost, stream),
                       thread);
        EXPECT_SUCCESS(cudaStreamSynchronize(stream), thread);
        EXPECT(memcmp(source, back, BUFFER_SIZE) == 0, "thread %d round %d: data corrupted", thread, round);
    }
    EXPECT(atomic_load(&host_functions_run) == ROUNDS, "thread %d ran %d host functions", thread,
           atomic_load(&host_functions_run));

    /* Stream 0 of per-thread code is this thread's own stream. */
    EXPECT_SUCCESS(cudaStreamGetId_ptsz(0, &per_thread_stream_ids[thread]), thread);
    EXPECT_SUCCESS(cudaMemcpyAsync_ptsz(back, device_memory, BUFFER_SIZE, cudaMemcpyDeviceToHost, 0), thread);
    EXPECT_SUCCESS(cudaStreamSynchronize_ptsz(0), thread);

    /* Launches consult the kernel registry while other threads do too. */
    dim3 one = { 1, 1, 1 };
    cudaError_t launch = cudaLaunchKernel((const void *)(uintptr_t)&kernel_stub, one, one, NULL, 0, stream);
    EXPECT(launch == cudaErrorNoKernelImageForDevice, "thread %d: launch returned %s", thread,
           cudaGetErrorName(launch));

    EXPECT_SUCCESS(cudaStreamDestroy(stream), thread);
    EXPECT_SUCCESS(cudaFree(device_memory), thread);
    free(source);
    free(back);
    return NULL;
}

int main(void)
{
    static char fat_binary[16];
    void **module = __cudaRegisterFatBinary(fat_binary);
    __cudaRegisterFunction(module, (const char *)(uintptr_t)&kernel_stub, (char *)"kernel_stub",
                           "kernel_stub", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);

    pthread_barrier_init(&all_started, NULL, THREAD_COUNT);
    pthread_t threads[THREAD_COUNT];
    for (int thread = 0; thread < THREAD_COUNT; thread++)
        if (pthread_create(&threads[thread], NULL, exercise_runtime, (void *)(intptr_t)thread) != 0)
            return 1;
    for (int thread = 0; thread < THREAD_COUNT; thread++)
        pthread_join(threads[thread], NULL);
    pthread_barrier_destroy(&all_started);

    for (int first = 0; first < THREAD_COUNT; first++)
        for (int second = first + 1; second < THREAD_COUNT; second++)
            if (per_thread_stream_ids[first] == per_thread_stream_ids[second]) {
                fprintf(stderr, "threads %d and %d share a per-thread default stream\n", first, second);
                atomic_fetch_add(&failures, 1);
            }
    __cudaUnregisterFatBinary(module);
    int failed = atomic_load(&failures);
    if (failed == 0)
        printf("%d threads x %d rounds: runtime semantics held\n", THREAD_COUNT, ROUNDS);
    return failed == 0 ? 0 : 1;
}

/* Eight threads, each with two non-blocking streams, allocating with
 * cudaMallocAsync and cudaMalloc, filling, reading back and freeing on
 * either stream. Every byte read back must be the thread's own pattern.
 * Built in the TSan run as well (suite 'threads'). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "test_support.h"

#define THREADS 8
#define ROUNDS 150

static void *worker(void *argument)
{
    unsigned tag = (unsigned)(uintptr_t)argument;
    unsigned state = tag * 7919u + 1;
    cudaStream_t streams[2];
    for (int i = 0; i < 2; i++)
        CHECK_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    unsigned char *host = malloc(1 << 20);
    CHECK(host != NULL, "no host memory");
    for (unsigned round = 0; round < ROUNDS; round++) {
        size_t size = 256 + next_random(&state) % (1 << 20);
        cudaStream_t stream = streams[round & 1];
        void *pointer = NULL;
        bool stream_ordered = round % 3 != 0;
        if (stream_ordered)
            CHECK_CUDA(cudaMallocAsync(&pointer, size, stream));
        else
            CHECK_CUDA(cudaMalloc(&pointer, size));
        unsigned char value = (unsigned char)(tag * 16 + round);
        CHECK_CUDA(cudaMemsetAsync(pointer, value, size, stream));
        CHECK_CUDA(cudaMemcpyAsync(host, pointer, size, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < size; i++)
            CHECK(host[i] == value, "thread %u round %u byte %zu: %u, expected %u", tag, round,
                  i, host[i], value);
        if (stream_ordered)
            CHECK_CUDA(cudaFreeAsync(pointer, streams[(round + 1) & 1]));
        else
            CHECK_CUDA(cudaFree(pointer));
    }
    for (int i = 0; i < 2; i++) {
        CHECK_CUDA(cudaStreamSynchronize(streams[i]));
        CHECK_CUDA(cudaStreamDestroy(streams[i]));
    }
    free(host);
    return NULL;
}

int main(void)
{
    CHECK_CUDA(cudaFree(0));
    pthread_t threads[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, worker, (void *)(uintptr_t)i) == 0,
              "pthread_create");
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    CHECK_CUDA(cudaDeviceSynchronize());
    printf("%d threads x %d rounds, every byte intact\n", THREADS, ROUNDS);
    return 0;
}

/* A program frees a buffer that a copy on a non-blocking stream still
 * reads, then destroys the stream at once, while a second thread allocates
 * and overwrites buffers of the same size. By CUDA's rules the copy reads
 * the buffer's old contents: cudaFree waits for the device's work, and a
 * destroyed stream's queued work still runs. Under the library the freed
 * buffer stays pending until a fence covers that copy; a fence taken while
 * the stream was leaving the library's registry once covered neither the
 * stream nor the legacy stream's wait for it, and the second thread's
 * memset overwrote the buffer under the copy (the race detector reports
 * it, and the copy reads the wrong bytes). The suite runs it with
 * GPUSIM_DELAY on cuStreamWaitEvent, which holds the destroying thread in
 * that wait long enough for the other thread to take such a fence.
 * usage: destroy_busy_stream [ROUNDS] */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_support.h"

enum { BUFFER_BYTES = 4 << 20 };

static atomic_bool copies_done;

static void CUDART_CB wait_a_little(void *argument)
{
    (void)argument;
    struct timespec pause = {.tv_nsec = 200 * 1000};
    nanosleep(&pause, NULL);
}

/* The second thread: buffers of the same size, overwritten at once. */
static void *overwrite(void *argument)
{
    (void)argument;
    while (!atomic_load(&copies_done)) {
        void *buffer = NULL;
        CHECK_CUDA(cudaMalloc(&buffer, BUFFER_BYTES));
        CHECK_CUDA(cudaMemset(buffer, 0xee, BUFFER_BYTES));
        CHECK_CUDA(cudaFree(buffer));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    unsigned char *host = NULL;
    CHECK_CUDA(cudaMallocHost((void **)&host, BUFFER_BYTES));
    pthread_t other;
    CHECK(pthread_create(&other, NULL, overwrite, NULL) == 0, "pthread_create");
    for (int round = 0; round < rounds; round++) {
        unsigned char value = (unsigned char)(round % 200 + 1);
        cudaStream_t stream = NULL;
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        void *buffer = NULL;
        CHECK_CUDA(cudaMalloc(&buffer, BUFFER_BYTES));
        CHECK_CUDA(cudaMemset(buffer, value, BUFFER_BYTES));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaLaunchHostFunc(stream, wait_a_little, NULL));
        CHECK_CUDA(cudaMemcpyAsync(host, buffer, BUFFER_BYTES, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaFree(buffer));
        CHECK_CUDA(cudaStreamDestroy(stream));
        CHECK_CUDA(cudaDeviceSynchronize());
        for (size_t i = 0; i < BUFFER_BYTES; i += 4096)
            CHECK(host[i] == value, "round %d: the copy read %#x at %zu, expected %#x", round,
                  host[i], i, value);
    }
    atomic_store(&copies_done, true);
    CHECK(pthread_join(other, NULL) == 0, "pthread_join");
    CHECK_CUDA(cudaFreeHost(host));
    printf("%d copies of freed buffers on destroyed streams read their data\n", rounds);
    return 0;
}

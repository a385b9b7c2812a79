/* A CUDA program for `gpucache ab` and `gpucache run` tests, run on the
 * simulated device: `ab_program churn` allocates and frees buffers of mixed
 * sizes with cudaMalloc/cudaFree and on a stream with cudaMallocAsync;
 * `ab_program ordered` does the same on one stream only (every free
 * stream-ordered on the allocating stream); `ab_program crash` dies of
 * SIGSEGV after an allocation; `ab_program exit3` exits with status 3;
 * `ab_program oom` allocates until the device is full, then frees everything;
 * `ab_program signal` sends itself SIGUSR1 between allocations;
 * `ab_program devices` allocates on devices 0 and 1 and keeps some alive;
 * `ab_program threads` allocates and frees from four threads at once, one
 * of which sends SIGUSR1 half way; `ab_program stale` prints the first
 * bytes of a buffer it never wrote, allocated right after freeing one it
 * did (a bug that shows only under a caching allocator, for gpucache
 * check); `ab_program racy` writes one buffer from two non-blocking streams
 * that nothing orders (a race the simulated device's detector reports). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t check_result = (call);                                            \
        if (check_result != cudaSuccess) {                                            \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorName(check_result)); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

static int churn(bool one_stream)
{
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    unsigned state = 4242;
    void *buffers[24] = {0};
    for (int round = 0; round < 40; round++) {
        for (int index = 0; index < 24; index++) {
            if (buffers[index] && next_random(&state) % 2) {
                if (one_stream || index % 3 == 0)
                    CHECK(cudaFreeAsync(buffers[index], stream));
                else
                    CHECK(cudaFree(buffers[index]));
                buffers[index] = NULL;
            }
            if (!buffers[index]) {
                size_t size = (size_t)512 << (next_random(&state) % 16); /* 512 B .. 16 MiB */
                size += next_random(&state) % size;
                if (one_stream || index % 3 == 0)
                    CHECK(cudaMallocAsync(&buffers[index], size, stream));
                else
                    CHECK(cudaMalloc(&buffers[index], size));
            }
        }
    }
    for (int index = 0; index < 24; index++) {
        if (one_stream || index % 3 == 0)
            CHECK(cudaFreeAsync(buffers[index], stream));
        else
            CHECK(cudaFree(buffers[index]));
    }
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}

static void *thread_work(void *argument)
{
    unsigned state = (unsigned)(uintptr_t)argument * 7919u + 1;
    cudaStream_t stream;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        return (void *)1;
    void *held[8] = {0};
    for (int round = 0; round < 200; round++) {
        int slot = (int)(next_random(&state) % 8);
        if (held[slot] && (round % 2 ? cudaFreeAsync(held[slot], stream) : cudaFree(held[slot])) !=
                              cudaSuccess)
            return (void *)1;
        size_t size = 256 + next_random(&state) % (3 << 20);
        if ((round % 2 ? cudaMallocAsync(&held[slot], size, stream)
                       : cudaMalloc(&held[slot], size)) != cudaSuccess)
            return (void *)1;
        if ((uintptr_t)argument == 0 && round == 100)
            raise(SIGUSR1);
    }
    for (int slot = 0; slot < 8; slot++)
        if (held[slot] && cudaFreeAsync(held[slot], stream) != cudaSuccess)
            return (void *)1;
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    return NULL;
}

static int threads(void)
{
    pthread_t workers[4];
    for (uintptr_t index = 0; index < 4; index++)
        pthread_create(&workers[index], NULL, thread_work, (void *)index);
    int failures = 0;
    for (int index = 0; index < 4; index++) {
        void *result;
        pthread_join(workers[index], &result);
        failures += result != NULL;
    }
    return failures ? 1 : 0;
}

static int fill_device(void)
{
    void *buffers[4096];
    int count = 0;
    while (count < 4096 && cudaMalloc(&buffers[count], (size_t)24 << 20) == cudaSuccess)
        count++;
    (void)cudaGetLastError();
    printf("allocated %d buffers of 24 MiB\n", count);
    for (int index = 0; index < count; index++)
        CHECK(cudaFree(buffers[index]));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "churn";
    if (strcmp(mode, "churn") == 0)
        return churn(false);
    if (strcmp(mode, "ordered") == 0)
        return churn(true);
    if (strcmp(mode, "oom") == 0)
        return fill_device();
    if (strcmp(mode, "threads") == 0)
        return threads();
    if (strcmp(mode, "racy") == 0) {
        void *shared = NULL;
        cudaStream_t one, two;
        CHECK(cudaMalloc(&shared, 4096));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaStreamCreateWithFlags(&one, cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&two, cudaStreamNonBlocking));
        CHECK(cudaMemsetAsync(shared, 1, 4096, one));
        CHECK(cudaMemsetAsync(shared, 2, 4096, two));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(shared));
        return 0;
    }
    if (strcmp(mode, "stale") == 0) {
        unsigned char *first = NULL, *second = NULL, bytes[4];
        CHECK(cudaMalloc((void **)&first, 1 << 20));
        CHECK(cudaMemset(first, 0x11, 1 << 20));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaFree(first));
        CHECK(cudaMalloc((void **)&second, 1 << 20));
        CHECK(cudaMemcpy(bytes, second, sizeof bytes, cudaMemcpyDeviceToHost));
        printf("allocated\nfirst bytes %02x%02x%02x%02x\ndone\n", bytes[0], bytes[1], bytes[2],
               bytes[3]);
        CHECK(cudaFree(second));
        return 0;
    }
    if (strcmp(mode, "devices") == 0) {
        void *kept[2], *freed;
        for (int device = 0; device < 2; device++) {
            CHECK(cudaSetDevice(device));
            CHECK(cudaMalloc(&kept[device], (size_t)(device + 1) << 20));
            CHECK(cudaMalloc(&freed, (size_t)25 << 20));
            CHECK(cudaFree(freed));
        }
        return 0;
    }
    void *buffer = NULL;
    CHECK(cudaMalloc(&buffer, 1 << 20));
    if (strcmp(mode, "crash") == 0) {
        fprintf(stderr, "ab_program: about to crash\n");
        fflush(stderr);
        raise(SIGSEGV);
    }
    if (strcmp(mode, "exit3") == 0)
        return 3;
    if (strcmp(mode, "signal") == 0) {
        /* The snapshot is written at the next allocation call after the signal. */
        raise(SIGUSR1);
        void *second = NULL;
        CHECK(cudaMalloc(&second, 3 << 20));
        CHECK(cudaFree(second));
        CHECK(cudaFree(buffer));
        return 0;
    }
    fprintf(stderr, "ab_program: unknown mode %s\n", mode);
    return 2;
}

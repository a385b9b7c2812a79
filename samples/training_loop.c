/* An allocation pattern shaped like a training loop with variable sequence
 * lengths: per step, activations of a size that depends on the step are
 * allocated layer by layer and freed in reverse, with small temporaries in
 * between, a workspace sized from cudaMemGetInfo, and stream-ordered buffers
 * on a non-blocking stream. The memory is really written and read back, so
 * a caching allocator that hands out memory still in use shows up as a data
 * error, not only as a number. Plain CUDA runtime code: it runs unchanged on
 * a GPU, on the simulated device, and under LD_PRELOAD=libgpucache.so. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYERS 12
#define PROBE_BYTES 4096

static int check(cudaError_t status, const char *what)
{
    if (status != cudaSuccess) {
        fprintf(stderr, "training_loop: %s failed: %s\n", what, cudaGetErrorString(status));
        exit(1);
    }
    return 0;
}

/* Writes a step-specific byte into the first bytes of a buffer. */
static void stamp(void *buffer, size_t size, unsigned char value, cudaStream_t stream)
{
    size_t length = size < PROBE_BYTES ? size : PROBE_BYTES;
    check(cudaMemsetAsync(buffer, value, length, stream), "cudaMemsetAsync");
}

/* Reads the stamp back; a mismatch means another owner wrote into it. */
static int stamp_intact(const void *buffer, size_t size, unsigned char value, cudaStream_t stream)
{
    unsigned char host[PROBE_BYTES];
    size_t length = size < PROBE_BYTES ? size : PROBE_BYTES;
    check(cudaMemcpyAsync(host, buffer, length, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    for (size_t i = 0; i < length; i++)
        if (host[i] != value)
            return 0;
    return 1;
}

/* A deterministic pseudo-random sequence length per step (xorshift). */
static uint32_t next_random(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    return *state;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    if (steps <= 0) {
        fprintf(stderr, "training_loop: the step count must be a positive integer, got '%s'\n",
                argv[1]);
        return 2;
    }
    cudaStream_t side_stream;
    check(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking), "cudaStreamCreate");

    uint32_t random_state = 12345;
    int corrupted = 0;
    size_t peak_live = 0;
    for (int step = 0; step < steps; step++) {
        size_t sequence = 64 + next_random(&random_state) % 448; /* tokens */
        size_t live = 0;
        void *activations[LAYERS];
        size_t sizes[LAYERS];
        for (int layer = 0; layer < LAYERS; layer++) {
            sizes[layer] = sequence * 4096 * (size_t)(1 + layer % 3); /* 256 KiB .. 6 MiB */
            check(cudaMalloc(&activations[layer], sizes[layer]), "cudaMalloc");
            stamp(activations[layer], sizes[layer], (unsigned char)(step + layer), 0);
            live += sizes[layer];

            void *temporary;
            size_t temporary_size = 512 + (next_random(&random_state) % 64) * 1024;
            check(cudaMalloc(&temporary, temporary_size), "cudaMalloc");
            stamp(temporary, temporary_size, 0xEE, 0);
            check(cudaFree(temporary), "cudaFree");
        }
        if (live > peak_live)
            peak_live = live;

        /* Stream-ordered gradients on the side stream. */
        void *gradient;
        size_t gradient_size = sequence * 8192;
        check(cudaMallocAsync(&gradient, gradient_size, side_stream), "cudaMallocAsync");
        stamp(gradient, gradient_size, 0x5A, side_stream);
        if (!stamp_intact(gradient, gradient_size, 0x5A, side_stream))
            corrupted++;
        check(cudaFreeAsync(gradient, side_stream), "cudaFreeAsync");

        /* A workspace sized from what the device says is free, as cuBLAS-style
         * libraries do: the cache must count its free bytes as free. */
        if (step % 50 == 0) {
            size_t free_bytes = 0, total_bytes = 0;
            check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
            size_t workspace_size = free_bytes / 64;
            void *workspace;
            check(cudaMalloc(&workspace, workspace_size), "cudaMalloc workspace");
            stamp(workspace, workspace_size, 0x11, 0);
            check(cudaFree(workspace), "cudaFree workspace");
        }

        for (int layer = LAYERS - 1; layer >= 0; layer--) {
            if (!stamp_intact(activations[layer], sizes[layer], (unsigned char)(step + layer), 0))
                corrupted++;
            check(cudaFree(activations[layer]), "cudaFree");
        }
    }
    check(cudaStreamSynchronize(side_stream), "cudaStreamSynchronize");
    check(cudaStreamDestroy(side_stream), "cudaStreamDestroy");
    printf("training_loop: %d steps, peak live activations %.1f MiB, %d corrupted buffers\n",
           steps, (double)peak_live / (1 << 20), corrupted);
    return corrupted == 0 ? 0 : 1;
}

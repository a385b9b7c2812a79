/* Stitching must never move memory the device may still touch. On a
 * non-blocking stream: [a 40 MiB | b 40 MiB], a host function delays the
 * stream, a memset of a is queued behind it, a is freed stream-ordered, and
 * a 60 MiB request grows the segment while that memset still waits. a's
 * handles are free but busy: the growth must create memory rather than move
 * them. Moving them would unmap a while its memset is queued, which the
 * simulated device's race detector reports (the test build of the library
 * with that defect put back shows it does). Then every byte of the new block
 * and of b must hold what the program wrote. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

static void CUDART_CB delay_stream(void *unused)
{
    (void)unused;
    usleep(100000);
}

static void expect_filled(const void *device, size_t size, unsigned char value,
                          const char *what)
{
    unsigned char *host = malloc(size);
    CHECK(host != NULL, "no host memory");
    CHECK_CUDA(cudaMemcpy(host, device, size, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < size; i++)
        CHECK(host[i] == value, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, host[i],
              value);
    free(host);
}

int main(void)
{
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *first = NULL, *second = NULL, *grown = NULL;
    CHECK_CUDA(cudaMallocAsync(&first, 40 * MiB, stream));
    CHECK_CUDA(cudaMallocAsync(&second, 40 * MiB, stream));
    CHECK_CUDA(cudaMemsetAsync(second, 0x33, 40 * MiB, stream));
    CHECK_CUDA(cudaLaunchHostFunc(stream, delay_stream, NULL));
    CHECK_CUDA(cudaMemsetAsync(first, 0xAA, 40 * MiB, stream));
    CHECK_CUDA(cudaFreeAsync(first, stream));
    CHECK_CUDA(cudaMallocAsync(&grown, 60 * MiB, stream));
    CHECK_CUDA(cudaMemsetAsync(grown, 0x55, 60 * MiB, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    expect_filled(grown, 60 * MiB, 0x55, "the grown block");
    expect_filled(second, 40 * MiB, 0x33, "the live neighbour");
    CHECK_CUDA(cudaFreeAsync(grown, stream));
    CHECK_CUDA(cudaFreeAsync(second, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}

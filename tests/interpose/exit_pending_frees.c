/* Frees the program made before exit, with no synchronize of its own after
 * them, must be reported as freed once their streams' work is done, and as
 * pending only while that work is still running (check_exit_pending.sh).
 *   exit_pending_frees done      eight 4 MiB buffers written on a
 *                                non-blocking stream, freed, then exit
 *   exit_pending_frees running   the same behind a host function that
 *                                sleeps for 2 s, so the writes are queued
 *                                at exit */
#include <cuda_runtime_api.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#define BUFFERS 8
#define BUFFER_BYTES (4u << 20)

static void CUDART_CB sleep_two_seconds(void *unused)
{
    (void)unused;
    sleep(2);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (!strcmp(argv[1], "done") || !strcmp(argv[1], "running")),
          "usage: exit_pending_frees done|running");
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (!strcmp(argv[1], "running"))
        CHECK_CUDA(cudaLaunchHostFunc(stream, sleep_two_seconds, NULL));
    void *buffers[BUFFERS];
    for (int i = 0; i < BUFFERS; i++) {
        CHECK_CUDA(cudaMalloc(&buffers[i], BUFFER_BYTES));
        CHECK_CUDA(cudaMemsetAsync(buffers[i], i, BUFFER_BYTES, stream));
    }
    for (int i = 0; i < BUFFERS; i++)
        CHECK_CUDA(cudaFree(buffers[i]));
    /* Time for the writes to finish (slow builds included) without a
     * synchronize that would tell the library so. */
    if (!strcmp(argv[1], "done"))
        usleep(500000);
    return 0;
}

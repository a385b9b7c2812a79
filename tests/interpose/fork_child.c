/* After fork() in a process that used CUDA, the child must not touch the
 * parent's cache (CUDA state does not survive fork): every hook passes
 * straight through to the driver. The child proves it by freeing a block
 * the parent's cache handed out: passed through, the driver rejects the
 * interior pointer, where the cache would have accepted its own block. */
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

int main(void)
{
    CHECK(library_is_loaded(), "run this under the library");
    void *keep = NULL, *block = NULL;
    CHECK_CUDA(cudaMalloc(&keep, 4096));
    CHECK_CUDA(cudaMalloc(&block, 4096));
    /* Both blocks come from one cached segment, so `block` is not the start
     * of a driver allocation. */
    pid_t child = fork();
    CHECK(child >= 0, "fork failed");
    if (child == 0) {
        cudaError_t result = cudaFree(block);
        _exit(result == cudaSuccess ? 3 : 0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child's free was served by the inherited cache (status %d)", status);
    CHECK_CUDA(cudaFree(block));
    CHECK_CUDA(cudaFree(keep));
    return 0;
}

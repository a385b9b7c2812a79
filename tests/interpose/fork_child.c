/* After fork() in a process that used CUDA, the child must not touch the
 * parent's cache (CUDA state does not survive fork): every hook passes
 * straight through to the driver. The child proves it by freeing a block
 * the parent's cache handed out: passed through, the driver rejects the
 * interior pointer, where the cache would have accepted its own block.
 * usage: fork_child [after|before]. `after` (the default) is the above, with
 * the child ending through exit() so that its destructors run (it must
 * still write no report); `before` forks before any CUDA call, and the
 * child, which then uses CUDA itself, is an ordinary CUDA process (with its
 * own report). check_fork_reports.sh counts the reports. */
#include <cuda_runtime_api.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

static void wait_for(pid_t child)
{
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)", status);
}

static void use_cuda(void)
{
    void *block = NULL;
    CHECK_CUDA(cudaMalloc(&block, 4096));
    CHECK_CUDA(cudaMemset(block, 1, 4096));
    CHECK_CUDA(cudaFree(block));
}

int main(int argc, char **argv)
{
    CHECK(library_is_loaded(), "run this under the library");
    if (argc > 1 && strcmp(argv[1], "before") == 0) {
        pid_t child = fork();
        CHECK(child >= 0, "fork failed");
        if (child == 0) {
            use_cuda();
            exit(0);
        }
        use_cuda();
        wait_for(child);
        return 0;
    }
    void *keep = NULL, *block = NULL;
    CHECK_CUDA(cudaMalloc(&keep, 4096));
    CHECK_CUDA(cudaMalloc(&block, 4096));
    /* Both blocks come from one cached segment, so `block` is not the start
     * of a driver allocation. Work on the device, waited for, lets the
     * simulated device's stream thread finish starting before the fork: a
     * thread forked away amid malloc leaves AddressSanitizer's allocator
     * locked in the child (it is not fork-safe while other threads run), and
     * the child's exit then hangs in the leak check. */
    CHECK_CUDA(cudaMemset(keep, 0, 4096));
    CHECK_CUDA(cudaDeviceSynchronize());
    pid_t child = fork();
    CHECK(child >= 0, "fork failed");
    if (child == 0) {
        cudaError_t result = cudaFree(block);
        CHECK(result != cudaSuccess, "the child's free was served by the inherited cache");
        exit(0);
    }
    wait_for(child);
    CHECK_CUDA(cudaFree(block));
    CHECK_CUDA(cudaFree(keep));
    return 0;
}

// Twin of the IPC test in tests/sim/test_sim_memory.c: another process opens
// a device allocation through cuIpcGetMemHandle and both see the same bytes.
// The child forks before either process initialises CUDA, as CUDA requires.
#include <sys/wait.h>
#include <unistd.h>

#include "twin_driver.h"

static int child_main(int handle_pipe, int result_pipe)
{
    twin_start();
    CUipcMemHandle handle;
    if (read(handle_pipe, &handle, sizeof handle) != (ssize_t)sizeof handle)
        return 1;
    CUdeviceptr mapped;
    TWIN_OK(TWIN_ENTRY(cuIpcOpenMemHandle, 11000)(&mapped, handle,
                                                  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    unsigned char seen = 0;
    TWIN_OK(TWIN_ENTRY(cuMemcpyDtoH, 3020)(&seen, mapped + 100, 1));
    TWIN_CHECK(seen == 0x11);
    TWIN_OK(TWIN_ENTRY(cuMemsetD8, 3020)(mapped + 200, 0x22, 1));
    TWIN_OK(TWIN_ENTRY(cuCtxSynchronize, 2000)());
    TWIN_OK(TWIN_ENTRY(cuIpcCloseMemHandle, 4010)(mapped));
    char done = 1;
    if (write(result_pipe, &done, 1) != 1)
        return 1;
    return twin_finish("twin_ipc (child)");
}

int main()
{
    int handle_pipe[2], result_pipe[2];
    if (pipe(handle_pipe) != 0 || pipe(result_pipe) != 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        /* Only the parent writes handles: a parent that stops early ends
         * the child's read instead of leaving it waiting. */
        close(handle_pipe[1]);
        close(result_pipe[0]);
        return child_main(handle_pipe[0], result_pipe[1]);
    }
    close(handle_pipe[0]);
    close(result_pipe[1]);
    twin_start(); /* exits 77 without a GPU; the child does too */
    CUdeviceptr pointer;
    TWIN_OK(TWIN_ENTRY(cuMemAlloc, 3020)(&pointer, 1 << 20));
    TWIN_OK(TWIN_ENTRY(cuMemsetD8, 3020)(pointer, 0x11, 1 << 20));
    TWIN_OK(TWIN_ENTRY(cuCtxSynchronize, 2000)());
    CUipcMemHandle handle;
    TWIN_OK(TWIN_ENTRY(cuIpcGetMemHandle, 4010)(&handle, pointer));
    CUdeviceptr own;
    TWIN_EXPECT(TWIN_ENTRY(cuIpcOpenMemHandle, 11000)(&own, handle,
                                                      CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                CUDA_ERROR_INVALID_CONTEXT);
    if (write(handle_pipe[1], &handle, sizeof handle) != (ssize_t)sizeof handle)
        return 1;
    char done = 0;
    TWIN_CHECK(read(result_pipe[0], &done, 1) == 1 && done == 1);
    int status = 0;
    waitpid(child, &status, 0);
    TWIN_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unsigned char seen = 0;
    TWIN_OK(TWIN_ENTRY(cuMemcpyDtoH, 3020)(&seen, pointer + 200, 1));
    TWIN_CHECK(seen == 0x22);
    TWIN_OK(TWIN_ENTRY(cuMemFree, 3020)(pointer));
    return twin_finish("twin_ipc");
}

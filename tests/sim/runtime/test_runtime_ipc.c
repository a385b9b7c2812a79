/* IPC memory handles through the runtime: a second process opens the
 * allocation by its handle, sees its bytes, and its writes come back;
 * the exporting process cannot open its own handle. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "runtime_test_support.h"

extern char **environ;

enum { shared_size = 1 << 16 };

static void *exported_allocation(void)
{
    unsigned char *pattern = malloc(shared_size);
    for (size_t index = 0; index < shared_size; index++)
        pattern[index] = (unsigned char)(index * 13);
    void *device_memory = NULL;
    assert_cuda_success(cudaMalloc(&device_memory, shared_size));
    assert_cuda_success(cudaMemcpy(device_memory, pattern, shared_size, cudaMemcpyHostToDevice));
    free(pattern);
    return device_memory;
}

Test(runtime_ipc, another_process_reads_and_writes_the_allocation_through_its_handle)
{
    const char *reader = getenv("RUNTIME_IPC_READER");
    cr_assert_not_null(reader, "RUNTIME_IPC_READER names the helper program");
    void *device_memory = exported_allocation();
    cudaIpcMemHandle_t handle;
    assert_cuda_success(cudaIpcGetMemHandle(&handle, device_memory));
    char handle_hex[2 * sizeof handle + 1];
    for (size_t index = 0; index < sizeof handle; index++)
        snprintf(handle_hex + 2 * index, 3, "%02x", ((unsigned char *)&handle)[index]);
    char size_text[32];
    snprintf(size_text, sizeof size_text, "%d", shared_size);
    char *arguments[] = { (char *)reader, handle_hex, size_text, NULL };
    pid_t child;
    cr_assert_eq(posix_spawn(&child, reader, NULL, NULL, arguments, environ), 0);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the importing process failed (status %#x)",
              status);
    unsigned char back[32];
    assert_cuda_success(cudaMemcpy(back, device_memory, sizeof back, cudaMemcpyDeviceToHost));
    for (size_t index = 0; index < sizeof back; index++)
        cr_assert_eq(back[index], index < 16 ? 0xcd : (unsigned char)(index * 13), "byte %zu", index);
    assert_cuda_success(cudaFree(device_memory));
}

Test(runtime_ipc, a_process_cannot_open_its_own_handle)
{
    void *device_memory = exported_allocation();
    cudaIpcMemHandle_t handle;
    assert_cuda_success(cudaIpcGetMemHandle(&handle, device_memory));
    void *opened = NULL;
    assert_cuda(cudaIpcOpenMemHandle(&opened, handle, cudaIpcMemLazyEnablePeerAccess),
                cudaErrorDeviceUninitialized);
    assert_cuda(cudaGetLastError(), cudaErrorDeviceUninitialized);
    assert_cuda_success(cudaFree(device_memory));
}

Test(runtime_ipc, only_device_allocations_have_handles)
{
    cudaIpcMemHandle_t handle;
    int host_variable;
    cr_assert_neq(cudaIpcGetMemHandle(&handle, &host_variable), cudaSuccess);
    assert_cuda(cudaIpcGetMemHandle(NULL, &host_variable), cudaErrorInvalidValue);
    void *opened = NULL;
    memset(&handle, 0, sizeof handle);
    assert_cuda(cudaIpcOpenMemHandle(&opened, handle, 0), cudaErrorInvalidValue);
}

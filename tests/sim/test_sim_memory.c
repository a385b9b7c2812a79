/* cuMemAlloc/cuMemFree, capacity and out-of-memory, host and managed memory,
 * pointer attributes and IPC on the simulated driver. */
#include <string.h>

#include "sim_test_support.h"

static void small_device(void)
{
    setenv("GPUSIM_MEMORY", "64MiB", 1);
}

Test(allocation, addresses_are_aligned_and_zero_size_is_invalid)
{
    start_device(0);
    CUdeviceptr small, large;
    EXPECT_OK(cuMemAlloc(&small, 100));
    EXPECT_OK(cuMemAlloc(&large, (3 << 20) + 1));
    cr_assert_eq(small % 512, 0);
    cr_assert_eq(large % (2 << 20), 0, "large allocations start on a 2 MiB page");
    EXPECT_RESULT(cuMemAlloc(&small, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
}

Test(allocation, capacity_is_charged_and_returned, .init = small_device)
{
    start_device(0);
    size_t free_bytes, total_bytes;
    EXPECT_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(total_bytes, (size_t)64 << 20);
    cr_assert_eq(free_bytes, total_bytes);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, (5 << 20) + 7));
    EXPECT_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, total_bytes - (6 << 20), "rounded up to whole 2 MiB pages");
    EXPECT_OK(cuMemFree(pointer));
    EXPECT_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, total_bytes);
    cr_assert_eq(gpusim_peak_physical_bytes(0), (size_t)6 << 20);
}

Test(allocation, out_of_memory_when_capacity_is_exhausted, .init = small_device)
{
    start_device(0);
    CUdeviceptr first, second, third;
    EXPECT_OK(cuMemAlloc(&first, 40 << 20));
    EXPECT_RESULT(cuMemAlloc(&second, 40 << 20), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_OK(cuMemAlloc(&second, 24 << 20));
    EXPECT_RESULT(cuMemAlloc(&third, 1), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_OK(cuMemFree(first));
    EXPECT_OK(cuMemAlloc(&third, 40 << 20));
}

Test(allocation, eighty_gibibytes_cost_nothing_until_touched)
{
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, (size_t)79 << 30));
    memset((void *)(pointer + ((size_t)40 << 30)), 0x5A, 4096);
    cr_assert_eq(((unsigned char *)pointer)[((size_t)40 << 30) + 4095], 0x5A);
    EXPECT_OK(cuMemFree(pointer));
}

Test(allocation, free_checks_the_pointer)
{
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 4096));
    EXPECT_RESULT(cuMemFree(pointer + 512), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemFree(pointer));
    EXPECT_RESULT(cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemFree(0));
}

Test(allocation, freed_memory_faults_and_overruns_hit_a_guard_page)
{
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 8192));
    cr_assert_not(faults_in_child(write_byte, (void *)(pointer + 8191)));
    cr_assert(faults_in_child(write_byte, (void *)(pointer + 8192)), "one page past the end");
    EXPECT_OK(cuMemFree(pointer));
    cr_assert(faults_in_child(read_byte, (void *)pointer), "use after free");
}

Test(allocation, address_range_and_pitch)
{
    start_device(0);
    CUdeviceptr pointer, base;
    size_t size;
    EXPECT_OK(cuMemAlloc(&pointer, 10000));
    EXPECT_OK(cuMemGetAddressRange(&base, &size, pointer + 1234));
    cr_assert_eq(base, pointer);
    cr_assert_eq(size, 10000);
    EXPECT_OK(cuMemGetAddressRange(NULL, &size, pointer));
    EXPECT_RESULT(cuMemGetAddressRange(&base, &size, pointer + 10000), CUDA_ERROR_NOT_FOUND);
    size_t pitch;
    CUdeviceptr pitched;
    EXPECT_OK(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 4));
    cr_assert_geq(pitch, 1000);
    cr_assert_eq(pitch % 512, 0);
    EXPECT_OK(cuMemGetAddressRange(&base, &size, pitched));
    cr_assert_eq(size, pitch * 10);
    EXPECT_RESULT(cuMemAllocPitch(&pitched, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
}

Test(host_memory, pinned_and_managed_are_not_device_capacity)
{
    start_device(0);
    void *pinned;
    EXPECT_OK(cuMemHostAlloc(&pinned, 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    memset(pinned, 1, 1 << 20);
    unsigned flags;
    EXPECT_OK(cuMemHostGetFlags(&flags, pinned));
    cr_assert_eq(flags, CU_MEMHOSTALLOC_PORTABLE);
    CUdeviceptr managed;
    EXPECT_OK(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    CUmemorytype type;
    EXPECT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned));
    cr_assert_eq(type, CU_MEMORYTYPE_HOST);
    int is_managed;
    EXPECT_OK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed));
    cr_assert_eq(is_managed, 1);
    EXPECT_RESULT(cuMemFreeHost((char *)pinned + 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemFreeHost(pinned));
    EXPECT_OK(cuMemFree(managed));
    void *host_alloc;
    EXPECT_OK(cuMemAllocHost(&host_alloc, 100));
    EXPECT_OK(cuMemFreeHost(host_alloc));
}

Test(host_memory, registration)
{
    start_device(0);
    static char buffer[8192];
    EXPECT_OK(cuMemHostRegister(buffer, sizeof buffer, 0));
    EXPECT_RESULT(cuMemHostRegister(buffer + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CUdeviceptr device_view;
    EXPECT_OK(cuMemHostGetDevicePointer(&device_view, buffer, 0));
    cr_assert_eq(device_view, (CUdeviceptr)buffer);
    EXPECT_RESULT(cuMemFreeHost(buffer), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemHostUnregister(buffer));
    EXPECT_RESULT(cuMemHostUnregister(buffer), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

Test(pointer_attributes, device_allocation)
{
    CUcontext context = start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 3 << 20));
    CUcontext owner;
    CUmemorytype type;
    int ordinal;
    void *start;
    size_t size;
    unsigned long long buffer_id;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_BUFFER_ID};
    void *values[] = {&owner, &type, &ordinal, &start, &size, &buffer_id};
    EXPECT_OK(cuPointerGetAttributes(6, attributes, values, pointer + 100));
    cr_assert_eq(owner, context);
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    cr_assert_eq(ordinal, 0);
    cr_assert_eq((CUdeviceptr)start, pointer);
    cr_assert_eq(size, 3 << 20);
    cr_assert_neq(buffer_id, 0);
    int on_stack;
    EXPECT_OK(cuPointerGetAttributes(2, attributes, values, (CUdeviceptr)&on_stack));
    cr_assert_null(owner, "unknown memory reads as unregistered host memory");
    cr_assert_eq(type, 0);
    EXPECT_RESULT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        (CUdeviceptr)&on_stack),
                  CUDA_ERROR_INVALID_VALUE);
}

/* The child side of the IPC test: opens the handle from the pipe, checks
 * the parent's bytes and writes its own; exits 0 when all held. */
static int ipc_child(int handle_pipe, int status_pipe)
{
    start_device(0);
    CUipcMemHandle handle;
    if (read(handle_pipe, &handle, sizeof handle) != (ssize_t)sizeof handle)
        return 1;
    CUdeviceptr mapped;
    unsigned char seen = 0, status = 2;
    if (cuIpcOpenMemHandle(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS &&
        cuMemcpyDtoH(&seen, mapped + 100, 1) == CUDA_SUCCESS && seen == 0x11 &&
        cuMemsetD8(mapped + 200, 0x22, 1) == CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS &&
        cuIpcCloseMemHandle(mapped) == CUDA_SUCCESS)
        status = 0;
    return write(status_pipe, &status, 1) == 1 ? 0 : 1;
}

Test(ipc, another_process_sees_the_same_memory)
{
    /* The child forks before either side initialises the driver, as CUDA
     * requires of processes that share memory. */
    int handle_pipe[2], status_pipe[2];
    cr_assert_eq(pipe(handle_pipe), 0);
    cr_assert_eq(pipe(status_pipe), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        close(handle_pipe[1]);
        _exit(ipc_child(handle_pipe[0], status_pipe[1]));
    }
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 1 << 20));
    EXPECT_OK(cuMemsetD8(pointer, 0x11, 1 << 20));
    EXPECT_OK(cuCtxSynchronize());
    CUipcMemHandle handle;
    EXPECT_OK(cuIpcGetMemHandle(&handle, pointer));
    cr_assert_eq(((unsigned char *)pointer)[4095], 0x11, "contents survive the export");
    CUdeviceptr opened;
    EXPECT_RESULT(cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                  CUDA_ERROR_INVALID_CONTEXT);
    cr_assert_eq(write(handle_pipe[1], &handle, sizeof handle), (ssize_t)sizeof handle);
    unsigned char status = 9;
    cr_assert_eq(read(status_pipe[0], &status, 1), 1);
    int exit_status;
    waitpid(child, &exit_status, 0);
    cr_assert_eq(status, 0, "child status %d", status);
    cr_assert_eq(((unsigned char *)pointer)[200], 0x22, "the child's write is visible here");
    EXPECT_OK(cuMemFree(pointer));
}

Test(fork, a_child_forked_after_cuInit_cannot_use_the_driver)
{
    start_device(0);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 4096));
    int status_pipe[2];
    cr_assert_eq(pipe(status_pipe), 0);
    pid_t child = fork();
    if (child == 0) {
        CUresult results[3] = {cuMemAlloc(&pointer, 4096), cuInit(0), cuCtxSynchronize()};
        _exit(write(status_pipe[1], results, sizeof results) == sizeof results ? 0 : 1);
    }
    CUresult results[3];
    cr_assert_eq(read(status_pipe[0], results, sizeof results), (ssize_t)sizeof results);
    waitpid(child, NULL, 0);
    for (int i = 0; i < 3; i++)
        EXPECT_RESULT(results[i], CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_OK(cuMemFree(pointer));
}

Test(allocation, fresh_device_memory_is_not_zeroed)
{
    start_device(0);
    CUdeviceptr small, large;
    EXPECT_OK(cuMemAlloc(&small, 64));
    EXPECT_OK(cuMemAllocAsync(&large, 64 << 20, NULL));
    unsigned char first[64], last[16];
    EXPECT_OK(cuMemcpyDtoH(first, small, sizeof first));
    EXPECT_OK(cuMemcpyDtoH(last, large + (64 << 20) - sizeof last, sizeof last));
    cr_assert_neq(first[0], 0, "the driver does not clear device memory");
    cr_assert_neq(first[63], 0);
    cr_assert_neq(last[15], 0);
    cr_assert_lt(gpusim_physical_bytes(0), (size_t)65 << 20);
}

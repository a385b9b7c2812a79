/* Allocation, copies and fills through the runtime over the simulated device:
 * data round-trips, capacity is accounted, every kind of memory reports its
 * kind, and bad arguments fail with the runtime's codes. */
#include <stdint.h>
#include <stdlib.h>

#include "runtime_test_support.h"

static void fill_pattern(unsigned char *buffer, size_t size, unsigned seed)
{
    for (size_t index = 0; index < size; index++)
        buffer[index] = (unsigned char)(index * 31 + seed);
}

Test(runtime_memory, device_memory_round_trips_through_copies_and_fills)
{
    enum { size = 1 << 16 };
    unsigned char *source = malloc(size), *back = malloc(size);
    fill_pattern(source, size, 7);
    void *first = NULL, *second = NULL;
    assert_cuda_success(cudaMalloc(&first, size));
    assert_cuda_success(cudaMalloc(&second, size));
    cr_assert_neq(first, second);
    assert_cuda_success(cudaMemcpy(first, source, size, cudaMemcpyHostToDevice));
    assert_cuda_success(cudaMemcpy(second, first, size, cudaMemcpyDeviceToDevice));
    assert_cuda_success(cudaMemset((char *)second + 100, 0xab, 50));
    assert_cuda_success(cudaMemcpy(back, second, size, cudaMemcpyDefault));
    for (size_t index = 0; index < size; index++) {
        unsigned char expected = index >= 100 && index < 150 ? 0xab : source[index];
        cr_assert_eq(back[index], expected, "byte %zu", index);
    }
    assert_cuda_success(cudaFree(first));
    assert_cuda_success(cudaFree(second));
    free(source);
    free(back);
}

Test(runtime_memory, host_to_host_copies_work_synchronously_and_in_stream_order)
{
    char source[64], destination[64] = { 0 }, later[64] = { 0 };
    fill_pattern((unsigned char *)source, sizeof source, 5);
    assert_cuda_success(cudaMemcpy(destination, source, sizeof source, cudaMemcpyHostToHost));
    cr_assert_arr_eq(destination, source, sizeof source);
    assert_cuda_success(cudaMemcpyAsync(later, source, sizeof source, cudaMemcpyHostToHost, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
    cr_assert_arr_eq(later, source, sizeof source);
}

Test(runtime_memory, zero_bytes_give_a_null_pointer_and_success)
{
    void *pointer = (void *)0x1;
    assert_cuda_success(cudaMalloc(&pointer, 0));
    cr_assert_null(pointer);
    assert_cuda_success(cudaMemcpy(NULL, NULL, 0, cudaMemcpyHostToDevice));
    assert_cuda_success(cudaMemset(NULL, 0, 0));
}

Test(runtime_memory, free_memory_shrinks_by_what_is_allocated)
{
    setenv("GPUSIM_MEMORY", "1GiB", 1);
    size_t free_before = 0, total = 0, free_during = 0, free_after = 0;
    assert_cuda_success(cudaMemGetInfo(&free_before, &total));
    cr_assert_eq(total, (size_t)1 << 30);
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, (size_t)256 << 20));
    assert_cuda_success(cudaMemGetInfo(&free_during, &total));
    cr_assert_geq(free_before - free_during, (size_t)256 << 20);
    assert_cuda_success(cudaFree(pointer));
    assert_cuda_success(cudaMemGetInfo(&free_after, &total));
    cr_assert_eq(free_after, free_before);
}

Test(runtime_memory, stream_ordered_allocations_are_usable_on_their_stream)
{
    enum { size = 8192 };
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    unsigned char source[size], back[size];
    fill_pattern(source, size, 3);
    void *pointer = NULL;
    assert_cuda_success(cudaMallocAsync(&pointer, size, stream));
    cr_assert_not_null(pointer);
    assert_cuda_success(cudaMemcpyAsync(pointer, source, size, cudaMemcpyHostToDevice, stream));
    assert_cuda_success(cudaMemcpyAsync(back, pointer, size, cudaMemcpyDeviceToHost, stream));
    assert_cuda_success(cudaFreeAsync(pointer, stream));
    assert_cuda_success(cudaStreamSynchronize(stream));
    cr_assert_arr_eq(back, source, size);
    assert_cuda(cudaMallocAsync(NULL, size, stream), cudaErrorInvalidValue);
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_memory, pinned_host_memory_is_host_memory_the_runtime_knows)
{
    unsigned char *pinned = NULL, *portable = NULL;
    assert_cuda_success(cudaMallocHost((void **)&pinned, 4096));
    assert_cuda_success(cudaHostAlloc((void **)&portable, 4096, cudaHostAllocPortable | cudaHostAllocMapped));
    pinned[4095] = 1;
    portable[0] = 2;
    struct cudaPointerAttributes attributes;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, pinned));
    cr_assert_eq(attributes.type, cudaMemoryTypeHost);
    cr_assert_eq(attributes.hostPointer, pinned);
    assert_cuda_success(cudaFreeHost(pinned));
    assert_cuda_success(cudaFreeHost(portable));
    assert_cuda_success(cudaFreeHost(NULL));
}

Test(runtime_memory, managed_memory_is_reachable_from_the_host)
{
    int *managed = NULL;
    assert_cuda_success(cudaMallocManaged((void **)&managed, 64 * sizeof *managed, cudaMemAttachGlobal));
    for (int index = 0; index < 64; index++)
        managed[index] = index;
    int back[64];
    assert_cuda_success(cudaMemcpy(back, managed, sizeof back, cudaMemcpyDefault));
    cr_assert_eq(back[63], 63);
    struct cudaPointerAttributes attributes;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, managed));
    cr_assert_eq(attributes.type, cudaMemoryTypeManaged);
    assert_cuda_success(cudaFree(managed));
}

Test(runtime_memory, pitched_rows_and_2d_copies_keep_each_row)
{
    enum { width = 100, height = 8 };
    skip_unless_driver_exports("cuMemcpy2DUnaligned_v2");
    void *pitched = NULL;
    size_t pitch = 0;
    assert_cuda_success(cudaMallocPitch(&pitched, &pitch, width, height));
    cr_assert_geq(pitch, (size_t)width);
    unsigned char source[height][width], back[height][width];
    fill_pattern(&source[0][0], sizeof source, 11);
    memset(back, 0, sizeof back);
    assert_cuda_success(cudaMemcpy2D(pitched, pitch, source, width, width, height, cudaMemcpyHostToDevice));
    assert_cuda_success(cudaMemcpy2D(back, width, pitched, pitch, width, height, cudaMemcpyDeviceToHost));
    cr_assert_arr_eq(back, source, sizeof source);
    assert_cuda(cudaMemcpy2D(back, width - 1, pitched, pitch, width, height, cudaMemcpyDeviceToHost),
                cudaErrorInvalidPitchValue);
    assert_cuda_success(cudaFree(pitched));
}

Test(runtime_memory, an_unknown_copy_direction_is_rejected)
{
    char host[8] = { 0 };
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, sizeof host));
    assert_cuda(cudaMemcpy(pointer, host, sizeof host, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
    assert_cuda(cudaMemcpyAsync(pointer, host, sizeof host, (enum cudaMemcpyKind)-1, 0),
                cudaErrorInvalidMemcpyDirection);
    assert_cuda_success(cudaFree(pointer));
}

Test(runtime_memory, pointer_attributes_tell_device_from_unregistered_memory)
{
    void *device_memory = NULL;
    assert_cuda_success(cudaMalloc(&device_memory, 4096));
    struct cudaPointerAttributes attributes;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, (char *)device_memory + 10));
    cr_assert_eq(attributes.type, cudaMemoryTypeDevice);
    cr_assert_eq(attributes.device, 0);
    cr_assert_eq(attributes.devicePointer, (char *)device_memory + 10);
    int on_the_stack = 0;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, &on_the_stack));
    cr_assert_eq(attributes.type, cudaMemoryTypeUnregistered);
    assert_cuda(cudaPointerGetAttributes(NULL, device_memory), cudaErrorInvalidValue);
    assert_cuda_success(cudaFree(device_memory));
}

Test(runtime_memory, freeing_an_unknown_pointer_fails_and_is_recorded)
{
    int not_device_memory;
    cr_assert_neq(cudaFree(&not_device_memory), cudaSuccess);
    cr_assert_neq(cudaGetLastError(), cudaSuccess);
}

Test(runtime_memory, a_device_reports_its_default_and_current_pools)
{
    cudaMemPool_t default_pool = NULL, current = NULL;
    assert_cuda_success(cudaDeviceGetDefaultMemPool(&default_pool, 0));
    cr_assert_not_null(default_pool);
    assert_cuda_success(cudaDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, default_pool, "the default pool is current until one is set");
    assert_cuda_success(cudaDeviceSetMemPool(0, default_pool));
    assert_cuda_success(cudaDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, default_pool);
    cr_assert_eq(cudaDeviceGetDefaultMemPool(&current, 7), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice, "the failure is recorded");
}

Test(runtime_memory, registered_host_memory_is_pinned_until_unregistered)
{
    enum { size = 1 << 14 };
    unsigned char *host = malloc(size), *back = malloc(size);
    fill_pattern(host, size, 3);
    assert_cuda_success(cudaHostRegister(host, size, cudaHostRegisterDefault));
    struct cudaPointerAttributes attributes;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, host + 100));
    cr_assert_eq(attributes.type, cudaMemoryTypeHost);
    assert_cuda(cudaHostRegister(host, size, 0), cudaErrorHostMemoryAlreadyRegistered);
    cr_assert_eq(cudaGetLastError(), cudaErrorHostMemoryAlreadyRegistered);

    /* Registered memory is a copy source and destination like any pinned memory. */
    void *device_memory = NULL;
    assert_cuda_success(cudaMalloc(&device_memory, size));
    assert_cuda_success(cudaMemcpyAsync(device_memory, host, size, cudaMemcpyHostToDevice, 0));
    assert_cuda_success(cudaMemcpyAsync(back, device_memory, size, cudaMemcpyDeviceToHost, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
    cr_assert_arr_eq(back, host, size);

    assert_cuda_success(cudaHostUnregister(host));
    assert_cuda_success(cudaPointerGetAttributes(&attributes, host));
    cr_assert_eq(attributes.type, cudaMemoryTypeUnregistered);
    assert_cuda(cudaHostUnregister(host), cudaErrorHostMemoryNotRegistered);
    assert_cuda_success(cudaFree(device_memory));
    free(host);
    free(back);
}

Test(runtime_memory, host_registration_rejects_bad_arguments)
{
    char buffer[256];
    assert_cuda(cudaHostRegister(NULL, 64, 0), cudaErrorInvalidValue);
    assert_cuda(cudaHostRegister(buffer, 0, 0), cudaErrorInvalidValue);
    assert_cuda(cudaHostRegister(buffer, sizeof buffer, 0x80000000u), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the failure is recorded");
    assert_cuda(cudaHostUnregister(NULL), cudaErrorHostMemoryNotRegistered);
    assert_cuda(cudaHostUnregister(buffer), cudaErrorHostMemoryNotRegistered);
}

Test(runtime_memory, pinned_and_registered_memory_have_device_pointers)
{
    void *pinned = NULL, *device_pointer = NULL;
    assert_cuda_success(cudaHostAlloc(&pinned, 4096, cudaHostAllocMapped));
    assert_cuda_success(cudaHostGetDevicePointer(&device_pointer, pinned, 0));
    /* Unified addressing: the device sees pinned memory at its host address. */
    cr_assert_eq(device_pointer, pinned);

    static char registered[8192];
    assert_cuda_success(cudaHostRegister(registered, sizeof registered, cudaHostRegisterMapped));
    device_pointer = NULL;
    assert_cuda_success(cudaHostGetDevicePointer(&device_pointer, registered + 16, 0));
    cr_assert_eq(device_pointer, (void *)(registered + 16));
    assert_cuda_success(cudaHostUnregister(registered));

    int unregistered;
    assert_cuda(cudaHostGetDevicePointer(&device_pointer, &unregistered, 0), cudaErrorInvalidValue);
    assert_cuda(cudaHostGetDevicePointer(NULL, pinned, 0), cudaErrorInvalidValue);
    assert_cuda(cudaHostGetDevicePointer(&device_pointer, pinned, 1), cudaErrorInvalidValue);
    assert_cuda_success(cudaFreeHost(pinned));
}

Test(runtime_memory, pool_attributes_are_set_and_read_back)
{
    cudaMemPool_t pool = NULL;
    assert_cuda_success(cudaDeviceGetDefaultMemPool(&pool, 0));
    unsigned long long threshold = 32ull << 20, read_back = 0;
    assert_cuda_success(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read_back));
    cr_assert_eq(read_back, threshold);
    int reuse = 0;
    assert_cuda_success(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse));
    reuse = 1;
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &reuse));
    cr_assert_eq(reuse, 0);

    /* What the pool holds shows in its counters, and trimming returns it. */
    void *memory = NULL;
    assert_cuda_success(cudaMallocAsync(&memory, 1 << 20, 0));
    unsigned long long used = 0, reserved = 0;
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    cr_assert_geq(used, 1 << 20);
    assert_cuda_success(cudaFreeAsync(memory, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    cr_assert_eq(used, 0);
    assert_cuda_success(cudaMemPoolTrimTo(pool, 0));
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
    cr_assert_eq(reserved, 0, "trimming to 0 keeps nothing unused");

    assert_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, NULL), cudaErrorInvalidValue);
    assert_cuda(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, NULL), cudaErrorInvalidValue);
    assert_cuda(cudaMemPoolGetAttribute(NULL, cudaMemPoolAttrReleaseThreshold, &read_back),
                cudaErrorInvalidValue);
    assert_cuda(cudaMemPoolTrimTo(NULL, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the failure is recorded");
}

Test(runtime_memory, a_created_pool_serves_stream_ordered_allocations)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = NULL, default_pool = NULL;
    assert_cuda_success(cudaMemPoolCreate(&pool, &props));
    assert_cuda_success(cudaDeviceGetDefaultMemPool(&default_pool, 0));
    cr_assert_neq(pool, default_pool);

    enum { size = 1 << 12 };
    unsigned char source[size], back[size];
    fill_pattern(source, size, 11);
    void *memory = NULL;
    assert_cuda_success(cudaMallocFromPoolAsync(&memory, size, pool, 0));
    assert_cuda_success(cudaMemcpyAsync(memory, source, size, cudaMemcpyHostToDevice, 0));
    assert_cuda_success(cudaMemcpyAsync(back, memory, size, cudaMemcpyDeviceToHost, 0));
    unsigned long long used = 0;
    assert_cuda_success(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    cr_assert_geq(used, size);
    assert_cuda_success(cudaFreeAsync(memory, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
    cr_assert_arr_eq(back, source, size);
    assert_cuda_success(cudaMemPoolTrimTo(pool, 0));
    assert_cuda_success(cudaMemPoolDestroy(pool));

    assert_cuda(cudaMemPoolCreate(NULL, &props), cudaErrorInvalidValue);
    assert_cuda(cudaMemPoolCreate(&pool, NULL), cudaErrorInvalidValue);
    props.allocType = cudaMemAllocationTypeInvalid;
    assert_cuda(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidValue);
    assert_cuda(cudaMemPoolDestroy(NULL), cudaErrorInvalidValue);
}

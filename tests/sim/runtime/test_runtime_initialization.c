/* Lazy initialisation and the driver variants the runtime reaches: queries
 * initialise the driver without a context, the first call that needs one
 * retains the primary context and makes it current, cudaDeviceReset drops it,
 * and each runtime call lands on the exact driver symbol NVIDIA's runtime
 * resolves for it (counted by the sim per exported name). */
#include <pthread.h>
#include <stdlib.h>

#include "runtime_test_support.h"

static int primary_context_active(int device)
{
    CUresult (*get_state)(CUdevice, unsigned int *, int *);
    void *symbol = driver_symbol("cuDevicePrimaryCtxGetState");
    memcpy(&get_state, &symbol, sizeof get_state);
    unsigned int flags = 0;
    int active = -1;
    assert_driver_success(get_state(device, &flags, &active));
    return active;
}

static CUcontext driver_current_context(void)
{
    CUresult (*get_current)(CUcontext *);
    void *symbol = driver_symbol("cuCtxGetCurrent");
    memcpy(&get_current, &symbol, sizeof get_current);
    CUcontext context = NULL;
    assert_driver_success(get_current(&context));
    return context;
}

Test(runtime_initialization, device_queries_create_no_context)
{
    int count = 0;
    assert_cuda_success(cudaGetDeviceCount(&count));
    cr_assert_eq(count, 1);
    int device = -1;
    assert_cuda_success(cudaGetDevice(&device));
    cr_assert_eq(device, 0);
    struct cudaDeviceProp properties;
    assert_cuda_success(cudaGetDeviceProperties(&properties, 0));
    cr_assert_eq(primary_context_active(0), 0);
    cr_assert_null(driver_current_context());
    cr_assert_eq(driver_call_count("cuDevicePrimaryCtxRetain"), 0);
}

Test(runtime_initialization, cudaFree_of_null_creates_and_binds_the_primary_context)
{
    int count = 0;
    assert_cuda_success(cudaGetDeviceCount(&count));
    cr_assert_eq(primary_context_active(0), 0);
    assert_cuda_success(cudaFree(NULL));
    cr_assert_eq(primary_context_active(0), 1);
    cr_assert_not_null(driver_current_context());
    cr_assert_eq(driver_call_count("cuInit"), 1);
    cr_assert_eq(driver_call_count("cuDevicePrimaryCtxRetain"), 1);
    /* Later calls on the same thread reuse the binding. */
    assert_cuda_success(cudaFree(NULL));
    assert_cuda_success(cudaDeviceSynchronize());
    cr_assert_eq(driver_call_count("cuDevicePrimaryCtxRetain"), 1);
    cr_assert_eq(driver_call_count("cuCtxSetCurrent"), 1);
}

Test(runtime_initialization, cudaSetDevice_initialises_the_chosen_device)
{
    setenv("GPUSIM_DEVICES", "2", 1);
    assert_cuda_success(cudaSetDevice(1));
    cr_assert_eq(primary_context_active(1), 1);
    cr_assert_eq(primary_context_active(0), 0);
    int device = -1;
    assert_cuda_success(cudaGetDevice(&device));
    cr_assert_eq(device, 1);
    assert_cuda(cudaSetDevice(2), cudaErrorInvalidDevice);
    assert_cuda_success(cudaGetDevice(&device));
    cr_assert_eq(device, 1, "a rejected cudaSetDevice changed the device");
}

static void *device_of_new_thread(void *unused)
{
    (void)unused;
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess)
        return (void *)-1;
    return (void *)(intptr_t)device;
}

Test(runtime_initialization, each_thread_starts_on_device_zero)
{
    setenv("GPUSIM_DEVICES", "2", 1);
    assert_cuda_success(cudaSetDevice(1));
    pthread_t thread;
    void *device;
    cr_assert_eq(pthread_create(&thread, NULL, device_of_new_thread, NULL), 0);
    cr_assert_eq(pthread_join(thread, &device), 0);
    cr_assert_eq((intptr_t)device, 0);
}

Test(runtime_initialization, allocations_land_on_the_current_device)
{
    setenv("GPUSIM_DEVICES", "2", 1);
    assert_cuda_success(cudaSetDevice(1));
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, 1 << 20));
    struct cudaPointerAttributes attributes;
    assert_cuda_success(cudaPointerGetAttributes(&attributes, pointer));
    cr_assert_eq(attributes.device, 1);
    assert_cuda_success(cudaFree(pointer));
}

Test(runtime_initialization, cudaDeviceReset_destroys_the_context_and_the_next_call_recreates_it)
{
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, 1 << 20));
    size_t free_before, total;
    assert_cuda_success(cudaMemGetInfo(&free_before, &total));
    assert_cuda_success(cudaDeviceReset());
    cr_assert_eq(primary_context_active(0), 0);
    /* cudaDeviceReset reaches the v1 symbol, which a hook on _v2 alone misses. */
    cr_assert_eq(driver_call_count("cuDevicePrimaryCtxReset"), 1);
    cr_assert_eq(driver_call_count("cuDevicePrimaryCtxReset_v2"), 0);
    size_t free_after;
    assert_cuda_success(cudaMemGetInfo(&free_after, &total));
    cr_assert_eq(primary_context_active(0), 1);
    cr_assert_gt(free_after, free_before, "the reset did not give back the allocation");
    cr_assert_eq(free_after, total);
}

Test(runtime_initialization, runtime_calls_reach_the_driver_variants_the_real_runtime_resolves)
{
    void *device_memory = NULL;
    char host[64] = { 0 };
    assert_cuda_success(cudaMalloc(&device_memory, sizeof host));
    cr_assert_eq(driver_call_count("cuMemAlloc_v2"), 1);
    assert_cuda_success(cudaMemcpy(device_memory, host, sizeof host, cudaMemcpyHostToDevice));
    cr_assert_eq(driver_call_count("cuMemcpyHtoD_v2"), 1);
    assert_cuda_success(cudaMemcpy(host, device_memory, sizeof host, cudaMemcpyDeviceToHost));
    cr_assert_eq(driver_call_count("cuMemcpyDtoH_v2"), 1);
    assert_cuda_success(cudaMemcpy(device_memory, host, sizeof host, cudaMemcpyDefault));
    cr_assert_eq(driver_call_count("cuMemcpy"), 1);
    assert_cuda_success(cudaMemset(device_memory, 0, sizeof host));
    cr_assert_eq(driver_call_count("cuMemsetD8_v2"), 1);
    size_t free_bytes, total_bytes;
    assert_cuda_success(cudaMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(driver_call_count("cuMemGetInfo_v2"), 1);
    assert_cuda_success(cudaFree(device_memory));
    cr_assert_eq(driver_call_count("cuMemFree_v2"), 1);

    void *async_memory = NULL;
    assert_cuda_success(cudaMallocAsync(&async_memory, 256, 0));
    cr_assert_eq(driver_call_count("cuMemAllocAsync"), 1);
    assert_cuda_success(cudaFreeAsync(async_memory, 0));
    cr_assert_eq(driver_call_count("cuMemFreeAsync"), 1);

    void *pinned = NULL;
    assert_cuda_success(cudaMallocHost(&pinned, 256));
    cr_assert_eq(driver_call_count("cuMemHostAlloc"), 1);
    cr_assert_eq(driver_call_count("cuMemAllocHost_v2"), 0);
    assert_cuda_success(cudaFreeHost(pinned));

    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    assert_cuda_success(cudaStreamDestroy(stream));
    cr_assert_eq(driver_call_count("cuStreamDestroy_v2"), 1);
    cudaEvent_t event;
    assert_cuda_success(cudaEventCreate(&event));
    assert_cuda_success(cudaEventDestroy(event));
    cr_assert_eq(driver_call_count("cuEventDestroy_v2"), 1);
}

/* Declared by cuda_runtime_api.h only for code compiled per-thread. */
extern cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value, size_t count);
extern cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);

Test(runtime_initialization, per_thread_entry_points_reach_the_per_thread_driver_variants)
{
    void *memory = NULL;
    char host[32] = { 0 };
    assert_cuda_success(cudaMallocAsync_ptsz(&memory, sizeof host, 0));
    cr_assert_eq(driver_call_count("cuMemAllocAsync_ptsz"), 1);
    cr_assert_eq(driver_call_count("cuMemAllocAsync"), 0);
    assert_cuda_success(cudaMemcpy_ptds(memory, host, sizeof host, cudaMemcpyHostToDevice));
    cr_assert_eq(driver_call_count("cuMemcpyHtoD_v2_ptds"), 1);
    assert_cuda_success(cudaMemset_ptds(memory, 1, sizeof host));
    cr_assert_eq(driver_call_count("cuMemsetD8_v2_ptds"), 1);
    assert_cuda_success(cudaFreeAsync_ptsz(memory, 0));
    cr_assert_eq(driver_call_count("cuMemFreeAsync_ptsz"), 1);
    assert_cuda_success(cudaStreamSynchronize_ptsz(0));
    cr_assert_eq(driver_call_count("cuStreamSynchronize_ptsz"), 1);
}

/* Last-error bookkeeping over the simulated driver: each failing call sets the
 * calling thread's last error, cudaGetLastError returns and clears it,
 * cudaPeekAtLastError only returns it; driver failures arrive as the runtime
 * codes of the same meaning. GPUSIM_FAIL makes the driver fail on demand. */
#include <pthread.h>
#include <stdlib.h>

#include "runtime_test_support.h"

Test(runtime_last_error, starts_clean_and_success_leaves_it_clean)
{
    assert_cuda_success(cudaPeekAtLastError());
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, 4096));
    assert_cuda_success(cudaGetLastError());
    assert_cuda_success(cudaFree(pointer));
}

Test(runtime_last_error, a_failing_call_sets_it_and_get_clears_it)
{
    assert_cuda(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    assert_cuda(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_cuda(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidValue);
    assert_cuda_success(cudaGetLastError());
    assert_cuda_success(cudaPeekAtLastError());
}

Test(runtime_last_error, a_later_success_does_not_clear_it_and_a_later_failure_replaces_it)
{
    assert_cuda(cudaSetDevice(99), cudaErrorInvalidDevice);
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, 256));
    assert_cuda(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    assert_cuda(cudaMemcpy(pointer, pointer, 16, (enum cudaMemcpyKind)42), cudaErrorInvalidMemcpyDirection);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
    assert_cuda_success(cudaFree(pointer));
}

static void *fail_in_another_thread(void *unused)
{
    (void)unused;
    cudaError_t before = cudaPeekAtLastError();
    (void)cudaMalloc(NULL, 1);
    cudaError_t after = cudaGetLastError();
    return (void *)(((size_t)before << 16) | (size_t)after);
}

Test(runtime_last_error, is_kept_per_thread)
{
    assert_cuda(cudaSetDevice(-1), cudaErrorInvalidDevice);
    pthread_t thread;
    void *outcome;
    cr_assert_eq(pthread_create(&thread, NULL, fail_in_another_thread, NULL), 0);
    cr_assert_eq(pthread_join(thread, &outcome), 0);
    cr_assert_eq((size_t)outcome >> 16, cudaSuccess, "a new thread saw another thread's error");
    cr_assert_eq((size_t)outcome & 0xffff, cudaErrorInvalidValue);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidDevice);
}

Test(runtime_last_error, driver_out_of_memory_is_cudaErrorMemoryAllocation)
{
    setenv("GPUSIM_FAIL", "cuMemAlloc:1:oom", 1);
    void *pointer = (void *)0x1;
    assert_cuda(cudaMalloc(&pointer, 1024), cudaErrorMemoryAllocation);
    assert_cuda(cudaGetLastError(), cudaErrorMemoryAllocation);
    assert_cuda_success(cudaMalloc(&pointer, 1024));
    assert_cuda_success(cudaFree(pointer));
}

Test(runtime_last_error, exhausting_the_device_is_cudaErrorMemoryAllocation)
{
    setenv("GPUSIM_MEMORY", "64MiB", 1);
    void *pointer = NULL;
    assert_cuda(cudaMalloc(&pointer, (size_t)128 << 20), cudaErrorMemoryAllocation);
    assert_cuda(cudaGetLastError(), cudaErrorMemoryAllocation);
}

Test(runtime_last_error, driver_invalid_value_is_cudaErrorInvalidValue)
{
    setenv("GPUSIM_FAIL", "cuMemGetInfo:1:invalid", 1);
    size_t free_bytes, total_bytes;
    assert_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), cudaErrorInvalidValue);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidValue);
}

Test(runtime_last_error, no_device_is_cudaErrorNoDevice_on_every_call)
{
    setenv("GPUSIM_DEVICES", "0", 1);
    int count = -1;
    assert_cuda(cudaGetDeviceCount(&count), cudaErrorNoDevice);
    cr_assert_eq(count, 0);
    void *pointer = NULL;
    assert_cuda(cudaMalloc(&pointer, 16), cudaErrorNoDevice);
    assert_cuda(cudaGetLastError(), cudaErrorNoDevice);
}

Test(runtime_last_error, not_ready_is_a_status_and_is_not_recorded)
{
    setenv("GPUSIM_FAIL", "cuStreamQuery:1:not_ready", 1);
    assert_cuda(cudaStreamQuery(0), cudaErrorNotReady);
    assert_cuda_success(cudaPeekAtLastError());
}

Test(runtime_last_error, an_unknown_driver_failure_is_cudaErrorUnknown)
{
    setenv("GPUSIM_FAIL", "cuCtxSynchronize:1", 1);
    assert_cuda(cudaDeviceSynchronize(), cudaErrorUnknown);
    assert_cuda(cudaGetLastError(), cudaErrorUnknown);
}

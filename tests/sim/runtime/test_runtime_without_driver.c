/* With no libcuda.so.1 to load, the runtime answers as NVIDIA's does:
 * cudaErrorInsufficientDriver from every call that needs the driver, and a
 * driver version of 0. This suite runs without the sim on the library path;
 * on a machine with a real driver installed it has nothing to check. */
#include "runtime_test_support.h"

static void skip_when_a_driver_is_installed(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW);
    if (handle != NULL) {
        dlclose(handle);
        cr_skip_test("a libcuda.so.1 is installed on this machine");
    }
}

Test(runtime_without_driver, calls_fail_with_cudaErrorInsufficientDriver)
{
    skip_when_a_driver_is_installed();
    void *pointer = NULL;
    assert_cuda(cudaMalloc(&pointer, 16), cudaErrorInsufficientDriver);
    assert_cuda(cudaGetLastError(), cudaErrorInsufficientDriver);
    int count = -1;
    assert_cuda(cudaGetDeviceCount(&count), cudaErrorInsufficientDriver);
    cr_assert_eq(count, 0);
    assert_cuda(cudaFree(NULL), cudaErrorInsufficientDriver);
}

Test(runtime_without_driver, versions_are_still_answered)
{
    skip_when_a_driver_is_installed();
    int version = -1;
    assert_cuda_success(cudaDriverGetVersion(&version));
    cr_assert_eq(version, 0);
    assert_cuda_success(cudaRuntimeGetVersion(&version));
    cr_assert_eq(version, 13000);
    assert_cuda_success(cudaPeekAtLastError());
}

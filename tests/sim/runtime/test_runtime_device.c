/* Device queries through the runtime: counts, properties and attributes come
 * from the driver, invalid ordinals are cudaErrorInvalidDevice, and the
 * versions are the CUDA 13 ones. */
#include <stdlib.h>

#include "runtime_test_support.h"

Test(runtime_device, the_count_follows_the_simulated_devices)
{
    setenv("GPUSIM_DEVICES", "3", 1);
    int count = 0;
    assert_cuda_success(cudaGetDeviceCount(&count));
    cr_assert_eq(count, 3);
    assert_cuda(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
}

Test(runtime_device, properties_describe_the_simulated_device)
{
    setenv("GPUSIM_MEMORY", "2GiB", 1);
    struct cudaDeviceProp properties;
    assert_cuda_success(cudaGetDeviceProperties(&properties, 0));
    cr_assert_neq(properties.name[0], '\0');
    cr_assert_eq(properties.totalGlobalMem, (size_t)2 << 30);
    cr_assert_eq(properties.warpSize, 32);
    cr_assert_geq(properties.major, 7);
    cr_assert_gt(properties.multiProcessorCount, 0);
    cr_assert_gt(properties.maxThreadsPerBlock, 0);
    cr_assert_eq(properties.unifiedAddressing, 1);
    int major = 0, processors = 0;
    assert_cuda_success(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    assert_cuda_success(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, 0));
    cr_assert_eq(major, properties.major);
    cr_assert_eq(processors, properties.multiProcessorCount);
}

Test(runtime_device, invalid_ordinals_are_cudaErrorInvalidDevice)
{
    struct cudaDeviceProp properties;
    assert_cuda(cudaGetDeviceProperties(&properties, 1), cudaErrorInvalidDevice);
    assert_cuda(cudaGetDeviceProperties(&properties, -1), cudaErrorInvalidDevice);
    int value = 0;
    assert_cuda(cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, 5), cudaErrorInvalidDevice);
    assert_cuda(cudaSetDevice(1), cudaErrorInvalidDevice);
    assert_cuda(cudaGetLastError(), cudaErrorInvalidDevice);
    assert_cuda(cudaGetDeviceProperties(NULL, 0), cudaErrorInvalidValue);
}

Test(runtime_device, versions_are_cuda_13)
{
    int runtime_version = 0, driver_version = 0;
    assert_cuda_success(cudaRuntimeGetVersion(&runtime_version));
    assert_cuda_success(cudaDriverGetVersion(&driver_version));
    cr_assert_eq(runtime_version, 13000);
    cr_assert_geq(driver_version, 13000);
    assert_cuda(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
}

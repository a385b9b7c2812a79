/* Device queries through the runtime: counts, properties and attributes come
 * from the driver, invalid ordinals are cudaErrorInvalidDevice, and the
 * versions are the CUDA 13 ones; device flags, peer access and the no-op
 * profiler calls. */
#include <stdlib.h>

#include <cuda_profiler_api.h>

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

Test(runtime_device, device_flags_are_the_primary_contexts_and_always_map_host_memory)
{
    unsigned int flags = 0xffffffffu;
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceMapHost, "flags before any are set: 0x%x", flags);
    assert_cuda_success(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost));
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceScheduleBlockingSync | cudaDeviceMapHost, "flags 0x%x", flags);

    /* The driver sees the flags on the device's primary context. */
    CUresult (*get_state)(CUdevice, unsigned int *, int *);
    void *symbol = driver_symbol("cuDevicePrimaryCtxGetState");
    memcpy(&get_state, &symbol, sizeof get_state);
    unsigned int context_flags = 0;
    int active = 0;
    assert_driver_success(get_state(0, &context_flags, &active));
    cr_assert_eq(context_flags, CU_CTX_SCHED_BLOCKING_SYNC);
    cr_assert(active, "setting device flags initialises the device");

    /* Flags can change on an initialised device. */
    assert_cuda_success(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceScheduleSpin | cudaDeviceMapHost);
}

Test(runtime_device, device_flags_reject_unknown_and_conflicting_flags)
{
    assert_cuda(cudaSetDeviceFlags(0x100), cudaErrorInvalidValue);
    assert_cuda(cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceScheduleYield), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the failure is recorded");
    assert_cuda(cudaGetDeviceFlags(NULL), cudaErrorInvalidValue);
    unsigned int flags = 0;
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceMapHost, "a rejected call changes nothing");
}

Test(runtime_device, device_flags_follow_the_current_device)
{
    setenv("GPUSIM_DEVICES", "2", 1);
    assert_cuda_success(cudaSetDevice(1));
    assert_cuda_success(cudaSetDeviceFlags(cudaDeviceScheduleYield));
    assert_cuda_success(cudaSetDevice(0));
    unsigned int flags = 0;
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceMapHost);
    assert_cuda_success(cudaSetDevice(1));
    assert_cuda_success(cudaGetDeviceFlags(&flags));
    cr_assert_eq(flags, cudaDeviceScheduleYield | cudaDeviceMapHost);
}

Test(runtime_device, peers_are_other_devices)
{
    setenv("GPUSIM_DEVICES", "2", 1);
    int can_access = -1;
    assert_cuda_success(cudaDeviceCanAccessPeer(&can_access, 0, 1));
    cr_assert_eq(can_access, 1);
    assert_cuda_success(cudaDeviceCanAccessPeer(&can_access, 1, 0));
    cr_assert_eq(can_access, 1);
    assert_cuda_success(cudaDeviceCanAccessPeer(&can_access, 0, 0));
    cr_assert_eq(can_access, 0, "a device is not its own peer");
    assert_cuda(cudaDeviceCanAccessPeer(&can_access, 0, 2), cudaErrorInvalidDevice);
    assert_cuda(cudaDeviceCanAccessPeer(&can_access, -1, 0), cudaErrorInvalidDevice);
    assert_cuda(cudaDeviceCanAccessPeer(NULL, 0, 1), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the failure is recorded");
}

Test(runtime_device, the_profiler_calls_succeed_without_a_profiler)
{
    assert_cuda_success(cudaProfilerStart());
    assert_cuda_success(cudaProfilerStop());
    assert_cuda_success(cudaProfilerStop());
    assert_cuda_success(cudaGetLastError());
}

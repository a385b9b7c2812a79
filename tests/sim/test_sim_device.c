/* Initialisation, device queries, contexts and error names of the simulated
 * driver. */
#include <string.h>

#include "sim_test_support.h"

Test(initialisation, calls_before_cuInit_fail_with_not_initialized)
{
    int count;
    CUdeviceptr pointer;
    EXPECT_RESULT(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_RESULT(cuMemAlloc(&pointer, 1024), CUDA_ERROR_NOT_INITIALIZED);
    int version = 0;
    EXPECT_OK(cuDriverGetVersion(&version));
    cr_assert_eq(version, 13000);
    EXPECT_OK(cuInit(0));
    EXPECT_OK(cuDeviceGetCount(&count));
    cr_assert_eq(count, 1);
}

Test(initialisation, cuInit_rejects_flags)
{
    EXPECT_RESULT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

static void four_devices(void)
{
    setenv("GPUSIM_DEVICES", "4", 1);
    setenv("GPUSIM_MEMORY", "40GiB", 1);
}

Test(devices, count_and_capacity_come_from_the_environment, .init = four_devices)
{
    EXPECT_OK(cuInit(0));
    int count;
    EXPECT_OK(cuDeviceGetCount(&count));
    cr_assert_eq(count, 4);
    size_t bytes;
    EXPECT_OK(cuDeviceTotalMem(&bytes, 3));
    cr_assert_eq(bytes, (size_t)40 << 30);
    CUdevice device;
    EXPECT_RESULT(cuDeviceGet(&device, 4), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_OK(cuDeviceGet(&device, 2));
    cr_assert_eq(device, 2);
}

static void no_devices(void)
{
    setenv("GPUSIM_DEVICES", "0", 1);
}

Test(devices, zero_devices_makes_cuInit_fail_like_a_machine_without_gpu, .init = no_devices)
{
    EXPECT_RESULT(cuInit(0), CUDA_ERROR_NO_DEVICE);
    int count;
    EXPECT_RESULT(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
}

Test(devices, default_device_is_an_80_GiB_hopper)
{
    EXPECT_OK(cuInit(0));
    size_t bytes;
    EXPECT_OK(cuDeviceTotalMem(&bytes, 0));
    cr_assert_eq(bytes, (size_t)80 << 30);
    int major, minor, sms, warp;
    EXPECT_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    EXPECT_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    EXPECT_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    EXPECT_OK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    cr_assert_eq(major, 9);
    cr_assert_eq(minor, 0);
    cr_assert_eq(sms, 132);
    cr_assert_eq(warp, 32);
    int vmm, pools, unified;
    EXPECT_OK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    EXPECT_OK(cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    EXPECT_OK(cuDeviceGetAttribute(&unified, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    cr_assert(vmm && pools && unified);
    EXPECT_RESULT(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_MAX, 0),
                  CUDA_ERROR_INVALID_VALUE);
    char name[64];
    EXPECT_OK(cuDeviceGetName(name, sizeof name, 0));
    cr_assert(strstr(name, "H100") != NULL, "name %s", name);
    char bus[32];
    CUdevice found;
    EXPECT_OK(cuDeviceGetPCIBusId(bus, sizeof bus, 0));
    EXPECT_OK(cuDeviceGetByPCIBusId(&found, bus));
    cr_assert_eq(found, 0);
}

Test(contexts, primary_context_retain_makes_it_active_and_release_deactivates)
{
    EXPECT_OK(cuInit(0));
    unsigned flags;
    int active;
    EXPECT_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    CUcontext first, second;
    EXPECT_OK(cuDevicePrimaryCtxRetain(&first, 0));
    EXPECT_OK(cuDevicePrimaryCtxRetain(&second, 0));
    cr_assert_eq(first, second, "the primary context is one context");
    EXPECT_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1);
    EXPECT_OK(cuDevicePrimaryCtxRelease(0));
    EXPECT_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1, "one reference is left");
    EXPECT_OK(cuDevicePrimaryCtxRelease_v2(0));
    EXPECT_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    EXPECT_RESULT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}

Test(contexts, calls_without_a_current_context_fail_with_invalid_context)
{
    EXPECT_OK(cuInit(0));
    CUdeviceptr pointer;
    size_t free_bytes, total_bytes;
    CUstream stream;
    EXPECT_RESULT(cuMemAlloc(&pointer, 1024), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_RESULT(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_RESULT(cuStreamCreate(&stream, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_RESULT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
}

Test(contexts, reset_frees_the_context_memory_and_gives_a_new_id)
{
    CUcontext context = start_device(0);
    unsigned long long first_id, second_id;
    EXPECT_OK(cuCtxGetId(context, &first_id));
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 64 << 20));
    cr_assert_eq(gpusim_physical_bytes(0), (size_t)64 << 20);
    EXPECT_OK(cuDevicePrimaryCtxReset(0));
    cr_assert_eq(gpusim_physical_bytes(0), 0, "reset returns all allocations");
    /* Still retained: the next use brings the context back, with a new id. */
    EXPECT_OK(cuCtxGetId(NULL, &second_id));
    cr_assert_neq(first_id, second_id);
    EXPECT_RESULT(cuMemFree(pointer), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuDevicePrimaryCtxReset_v2(0));
}

static void two_devices(void)
{
    setenv("GPUSIM_DEVICES", "2", 1);
}

/* With two_devices: cuInit, then the primary context of each device. */
static void retain_both_primary_contexts(CUcontext *zero, CUcontext *one)
{
    EXPECT_OK(cuInit(0));
    EXPECT_OK(cuDevicePrimaryCtxRetain(zero, 0));
    EXPECT_OK(cuDevicePrimaryCtxRetain(one, 1));
}

Test(contexts, context_device_in_both_abi_forms, .init = two_devices)
{
    CUcontext zero, one;
    retain_both_primary_contexts(&zero, &one);
    EXPECT_OK(cuCtxSetCurrent(one));
    CUdevice device = -1;
    EXPECT_OK(cuCtxGetDevice(&device));
    cr_assert_eq(device, 1);
    EXPECT_OK(cuCtxGetDevice_v2(&device, zero));
    cr_assert_eq(device, 0, "the _v2 form names the context explicitly");
    EXPECT_OK(cuCtxGetDevice_v2(&device, NULL));
    cr_assert_eq(device, 1, "NULL means the current context");
    EXPECT_OK(cuCtxSynchronize_v2(zero));
    EXPECT_RESULT(cuCtxGetDevice_v2(&device, (CUcontext)&device), CUDA_ERROR_INVALID_CONTEXT);
}

Test(contexts, created_contexts_stack_and_destroy)
{
    EXPECT_OK(cuInit(0));
    CUcontext created, current, popped;
    EXPECT_OK(cuCtxCreate(&created, NULL, 0, 0));
    EXPECT_OK(cuCtxGetCurrent(&current));
    cr_assert_eq(current, created, "cuCtxCreate makes the new context current");
    unsigned long long id_created, id_primary;
    EXPECT_OK(cuCtxGetId(created, &id_created));
    CUcontext primary;
    EXPECT_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    EXPECT_OK(cuCtxPushCurrent(primary));
    EXPECT_OK(cuCtxGetId(NULL, &id_primary));
    cr_assert_neq(id_created, id_primary);
    EXPECT_OK(cuCtxPopCurrent(&popped));
    cr_assert_eq(popped, primary);
    EXPECT_OK(cuCtxDestroy(created));
    EXPECT_OK(cuCtxGetCurrent(&current));
    cr_assert_null(current);
    EXPECT_RESULT(cuCtxDestroy(created), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_RESULT(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);
}

Test(errors, names_and_strings)
{
    const char *text;
    EXPECT_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
    cr_assert_str_eq(text, "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_OK(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &text));
    cr_assert_str_eq(text, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
    EXPECT_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
    cr_assert_str_eq(text, "out of memory");
    EXPECT_RESULT(cuGetErrorName((CUresult)12345, &text), CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(text);
}

/* Kernels run (tests/sim/ptx/); a launch without a loaded function is
 * refused as the driver refuses it. */
Test(launch, a_launch_without_a_function_is_an_invalid_handle)
{
    start_device(0);
    EXPECT_RESULT(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                  CUDA_ERROR_INVALID_HANDLE);
    CUlaunchConfig config = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                             .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    EXPECT_RESULT(cuLaunchKernelEx(&config, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_RESULT(cuLaunchCooperativeKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL),
                  CUDA_ERROR_INVALID_HANDLE);
}

Test(contexts, limits_and_cache_configuration)
{
    start_device(0);
    size_t heap;
    EXPECT_OK(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE));
    cr_assert_eq(heap, 8 << 20);
    EXPECT_OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20));
    EXPECT_OK(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE));
    cr_assert_eq(heap, 64 << 20);
    EXPECT_RESULT(cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
    EXPECT_RESULT(cuCtxGetLimit(&heap, CU_LIMIT_MAX), CUDA_ERROR_INVALID_VALUE);
    CUfunc_cache config;
    EXPECT_OK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1));
    EXPECT_OK(cuCtxGetCacheConfig(&config));
    cr_assert_eq(config, CU_FUNC_CACHE_PREFER_L1);
}

Test(contexts, peer_access_between_devices, .init = two_devices)
{
    CUcontext zero, one;
    retain_both_primary_contexts(&zero, &one);
    EXPECT_OK(cuCtxSetCurrent(zero));
    int can_access;
    EXPECT_OK(cuDeviceCanAccessPeer(&can_access, 0, 1));
    cr_assert_eq(can_access, 1);
    int supported;
    EXPECT_OK(cuDeviceGetP2PAttribute(&supported, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
    cr_assert_eq(supported, 1);
    EXPECT_RESULT(cuDeviceGetP2PAttribute(&supported, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED,
                                          1, 1),
                  CUDA_ERROR_INVALID_DEVICE);
    EXPECT_RESULT(cuCtxDisablePeerAccess(one), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    EXPECT_OK(cuCtxEnablePeerAccess(one, 0));
    EXPECT_RESULT(cuCtxEnablePeerAccess(one, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    EXPECT_RESULT(cuCtxEnablePeerAccess(zero, 0), CUDA_ERROR_INVALID_DEVICE);
    EXPECT_OK(cuCtxDisablePeerAccess(one));
}

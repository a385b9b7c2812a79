/* Device enumeration and properties: every simulated device looks like a
 * Hopper (compute capability 9.0) data-centre GPU with the configured
 * capacity. */
#include "sim_internal.h"

#include <stdio.h>
#include <string.h>

CUresult sim_device_lookup(CUdevice ordinal, struct sim_device **device)
{
    if (ordinal < 0 || ordinal >= sim.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = &sim.devices[ordinal];
    return CUDA_SUCCESS;
}

/* Values of an H100 SXM5 (132 SMs, HBM3); attributes not listed are 0. */
static const struct {
    CUdevice_attribute attribute;
    int value;
} hopper_attributes[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 32505856},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 1},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 0x233010de},
};

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    SIM_ENTER("cuDeviceGetCount");
    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim.device_count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    SIM_ENTER("cuDeviceGet");
    if (device == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *found;
    CUresult result = sim_device_lookup(ordinal, &found);
    if (result == CUDA_SUCCESS)
        *device = ordinal;
    return result;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    SIM_ENTER("cuDeviceGetName");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "NVIDIA H100 80GB HBM3 (gpusim)");
    return CUDA_SUCCESS;
}

static CUresult total_memory(CUdevice dev, size_t *bytes)
{
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result == CUDA_SUCCESS)
        *bytes = device->capacity;
    return result;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    SIM_ENTER("cuDeviceTotalMem_v2");
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return total_memory(dev, bytes);
}

SIM_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    SIM_ENTER("cuDeviceTotalMem");
    size_t capacity;
    if (bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = total_memory(dev, &capacity);
    /* The 32-bit form saturates rather than wrapping. */
    if (result == CUDA_SUCCESS)
        *bytes = capacity > 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned int)capacity;
    return result;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    SIM_ENTER("cuDeviceGetAttribute");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pi == NULL || attrib < CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK ||
        attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *pi = 0x18 + device->ordinal;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
        *pi = device->ordinal;
        return CUDA_SUCCESS;
    default:
        break;
    }
    *pi = 0;
    for (size_t i = 0; i < sizeof hopper_attributes / sizeof hopper_attributes[0]; i++)
        if (hopper_attributes[i].attribute == attrib)
            *pi = hopper_attributes[i].value;
    return CUDA_SUCCESS;
}

/* A stable, recognisable UUID per simulated device. */
static CUresult device_uuid(CUdevice dev, CUuuid *uuid)
{
    static const char prefix[] = "gpusim-device";
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (uuid == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, prefix, sizeof prefix - 1);
    uuid->bytes[15] = (char)device->ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuDeviceGetUuid, cuDeviceGetUuid_v2, (CUuuid *uuid, CUdevice dev),
                         device_uuid(dev, uuid))

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    SIM_ENTER("cuDeviceGetPCIBusId");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pciBusId == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", 0x18 + device->ordinal);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    SIM_ENTER("cuDeviceGetByPCIBusId");
    if (dev == NULL || pciBusId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned domain, bus, slot, function;
    if (sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4 || domain != 0 ||
        slot != 0 || function != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int ordinal = (int)bus - 0x18;
    if (ordinal < 0 || ordinal >= sim.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    SIM_ENTER("cuDeviceComputeCapability");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (major == NULL || minor == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *major = 9;
    *minor = 0;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    SIM_ENTER("cuDeviceCanAccessPeer");
    struct sim_device *device, *peer;
    CUresult result = sim_device_lookup(dev, &device);
    if (result == CUDA_SUCCESS)
        result = sim_device_lookup(peerDev, &peer);
    if (result != CUDA_SUCCESS)
        return result;
    if (canAccessPeer == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* All simulated devices share one host address space, like NVLink peers. */
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                            CUdevice srcDevice, CUdevice dstDevice)
{
    SIM_ENTER("cuDeviceGetP2PAttribute");
    struct sim_device *source, *destination;
    CUresult result = sim_device_lookup(srcDevice, &source);
    if (result == CUDA_SUCCESS)
        result = sim_device_lookup(dstDevice, &destination);
    if (result != CUDA_SUCCESS)
        return result;
    if (srcDevice == dstDevice)
        return CUDA_ERROR_INVALID_DEVICE;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = 0; /* one NVLink-like fabric: every pair ranks the same */
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
        *value = 1;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
        *value = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

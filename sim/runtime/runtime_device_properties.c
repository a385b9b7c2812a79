/* cudaGetDeviceProperties and cudaDeviceGetAttribute: the runtime only
 * forwards what the driver reports (name, total memory, UUID and
 * cuDeviceGetAttribute), as NVIDIA's runtime does. Neither creates a context. */
#include <string.h>

#include "runtime_driver.h"

enum field_width { FIELD_INT, FIELD_SIZE };

struct property_attribute {
    size_t offset;
    enum field_width width;
    CUdevice_attribute attribute;
};

#define INT_FIELD(field, attribute) { offsetof(struct cudaDeviceProp, field), FIELD_INT, attribute }
#define SIZE_FIELD(field, attribute) { offsetof(struct cudaDeviceProp, field), FIELD_SIZE, attribute }

static const struct property_attribute property_attributes[] = {
    SIZE_FIELD(sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
    INT_FIELD(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
    INT_FIELD(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    SIZE_FIELD(memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH),
    INT_FIELD(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    INT_FIELD(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
    INT_FIELD(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
    INT_FIELD(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
    INT_FIELD(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
    INT_FIELD(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
    INT_FIELD(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
    SIZE_FIELD(totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY),
    INT_FIELD(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    INT_FIELD(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    SIZE_FIELD(textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT),
    SIZE_FIELD(texturePitchAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT),
    INT_FIELD(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    INT_FIELD(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED),
    INT_FIELD(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY),
    INT_FIELD(maxTexture1D, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH),
    INT_FIELD(maxTexture2D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH),
    INT_FIELD(maxTexture2D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT),
    INT_FIELD(maxTexture3D[0], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH),
    INT_FIELD(maxTexture3D[1], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT),
    INT_FIELD(maxTexture3D[2], CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH),
    SIZE_FIELD(surfaceAlignment, CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT),
    INT_FIELD(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS),
    INT_FIELD(ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
    INT_FIELD(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
    INT_FIELD(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    INT_FIELD(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
    INT_FIELD(tccDriver, CU_DEVICE_ATTRIBUTE_TCC_DRIVER),
    INT_FIELD(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
    INT_FIELD(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING),
    INT_FIELD(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    INT_FIELD(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    INT_FIELD(persistingL2CacheMaxSize, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE),
    INT_FIELD(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
    INT_FIELD(streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED),
    INT_FIELD(globalL1CacheSupported, CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED),
    INT_FIELD(localL1CacheSupported, CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED),
    SIZE_FIELD(sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    INT_FIELD(regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
    INT_FIELD(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
    INT_FIELD(isMultiGpuBoard, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD),
    INT_FIELD(multiGpuBoardGroupID, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID),
    INT_FIELD(hostNativeAtomicSupported, CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED),
    INT_FIELD(pageableMemoryAccess, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS),
    INT_FIELD(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS),
    INT_FIELD(computePreemptionSupported, CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED),
    INT_FIELD(canUseHostPointerForRegisteredMem, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM),
    INT_FIELD(cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH),
    SIZE_FIELD(sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    INT_FIELD(pageableMemoryAccessUsesHostPageTables, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES),
    INT_FIELD(directManagedMemAccessFromHost, CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST),
    INT_FIELD(maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
    INT_FIELD(accessPolicyMaxWindowSize, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE),
    SIZE_FIELD(reservedSharedMemPerBlock, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK),
    INT_FIELD(hostRegisterSupported, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED),
    INT_FIELD(sparseCudaArraySupported, CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED),
    INT_FIELD(hostRegisterReadOnlySupported, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED),
    INT_FIELD(timelineSemaphoreInteropSupported, CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED),
    INT_FIELD(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED),
    INT_FIELD(gpuDirectRDMASupported, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED),
    INT_FIELD(gpuDirectRDMAFlushWritesOptions, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
    INT_FIELD(gpuDirectRDMAWritesOrdering, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING),
    INT_FIELD(memoryPoolSupportedHandleTypes, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES),
    INT_FIELD(deferredMappingCudaArraySupported, CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED),
    INT_FIELD(ipcEventSupported, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED),
    INT_FIELD(clusterLaunch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH),
    INT_FIELD(unifiedFunctionPointers, CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS),
    INT_FIELD(deviceNumaConfig, CU_DEVICE_ATTRIBUTE_NUMA_CONFIG),
    INT_FIELD(deviceNumaId, CU_DEVICE_ATTRIBUTE_NUMA_ID),
    INT_FIELD(mpsEnabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED),
    INT_FIELD(hostNumaId, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID),
    INT_FIELD(gpuPciDeviceID, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID),
    INT_FIELD(gpuPciSubsystemID, CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID),
    INT_FIELD(hostNumaMultinodeIpcSupported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED),
};

cudaError_t sim_runtime_device_handle(int device, CUdevice *handle)
{
    cudaError_t status = sim_runtime_load_driver();
    if (status != cudaSuccess)
        return status;
    const struct sim_runtime_driver *driver = &sim_runtime_driver;
    int count = 0;
    status = sim_runtime_error_from_driver(driver->cuDeviceGetCount(&count));
    if (status != cudaSuccess)
        return status;
    if (device < 0 || device >= count)
        return cudaErrorInvalidDevice;
    return sim_runtime_error_from_driver(driver->cuDeviceGet(handle, device));
}

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (prop == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle;
    cudaError_t status = sim_runtime_device_handle(device, &handle);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    const struct sim_runtime_driver *driver = &sim_runtime_driver;
    memset(prop, 0, sizeof *prop);
    status = SIM_RUNTIME_CALL(driver->cuDeviceGetName, prop->name, (int)sizeof prop->name, handle);
    if (status != cudaSuccess)
        return status;
    status = SIM_RUNTIME_CALL(driver->cuDeviceTotalMem, &prop->totalGlobalMem, handle);
    if (status != cudaSuccess)
        return status;
    if (driver->cuDeviceGetUuid != NULL) {
        CUuuid uuid;
        if (driver->cuDeviceGetUuid(&uuid, handle) == CUDA_SUCCESS)
            memcpy(&prop->uuid, &uuid, sizeof prop->uuid);
    }
    if (driver->cuDeviceGetAttribute == NULL)
        return sim_runtime_record(cudaErrorNotSupported);
    for (size_t index = 0; index < sizeof property_attributes / sizeof property_attributes[0]; index++) {
        const struct property_attribute *entry = &property_attributes[index];
        int value = 0;
        /* An attribute this driver does not know leaves its field at 0. */
        if (driver->cuDeviceGetAttribute(&value, entry->attribute, handle) != CUDA_SUCCESS)
            continue;
        char *field = (char *)prop + entry->offset;
        if (entry->width == FIELD_SIZE) {
            size_t wide = (size_t)(unsigned int)value;
            memcpy(field, &wide, sizeof wide);
        } else {
            memcpy(field, &value, sizeof value);
        }
    }
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (value == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle;
    cudaError_t status = sim_runtime_device_handle(device, &handle);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    /* cudaDeviceAttr numbers each attribute as CUdevice_attribute does. */
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuDeviceGetAttribute, value, (CUdevice_attribute)attr,
                            handle);
}

cudaError_t CUDARTAPI cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (canAccessPeer == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdevice handle, peer_handle;
    cudaError_t status = sim_runtime_device_handle(device, &handle);
    if (status == cudaSuccess)
        status = sim_runtime_device_handle(peerDevice, &peer_handle);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    /* A device is never its own peer: the answer is 0. */
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuDeviceCanAccessPeer, canAccessPeer, handle, peer_handle);
}

/* Allocation entry points: device, stream-ordered, pooled, pinned host,
 * managed and pitched memory, memory info and pointer attributes. Each maps
 * onto the driver call NVIDIA's runtime makes for it (cudaMalloc to
 * cuMemAlloc_v2, cudaMallocAsync to cuMemAllocAsync, ...), so an interposer
 * at the driver sees the same calls under either runtime. */
#include <stdint.h>

#include "runtime_driver.h"

static void *pointer_from_device(CUdeviceptr address)
{
    return (void *)(uintptr_t)address;
}

static CUdeviceptr device_from_pointer(const void *pointer)
{
    return (CUdeviceptr)(uintptr_t)pointer;
}

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (devPtr == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    /* The driver rejects 0 bytes; the runtime answers with a NULL pointer. */
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr address = 0;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuMemAlloc, &address, size);
    if (status == cudaSuccess)
        *devPtr = pointer_from_device(address);
    return status;
}

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
    /* cudaFree(NULL) is the idiomatic way to create the context up front. */
    SIM_RUNTIME_BIND_OR_RETURN();
    if (devPtr == NULL)
        return cudaSuccess;
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemFree, device_from_pointer(devPtr));
}

cudaError_t sim_runtime_malloc_async(void **pointer, size_t size, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pointer == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdeviceptr address = 0;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuMemAllocAsync,
                                          &address, size, stream);
    if (status == cudaSuccess)
        *pointer = pointer_from_device(address);
    return status;
}

cudaError_t sim_runtime_malloc_from_pool_async(void **pointer, size_t size, cudaMemPool_t pool,
                                               cudaStream_t stream,
                                               enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pointer == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdeviceptr address = 0;
    cudaError_t status = SIM_RUNTIME_CALL(
        sim_runtime_stream_entry_points(default_stream)->cuMemAllocFromPoolAsync, &address, size,
        (CUmemoryPool)pool, stream);
    if (status == cudaSuccess)
        *pointer = pointer_from_device(address);
    return status;
}

cudaError_t sim_runtime_free_async(void *pointer, cudaStream_t stream,
                                   enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuMemFreeAsync,
                            device_from_pointer(pointer), stream);
}

/* A device's memory pools: the default one, and the current one that
 * cudaMallocAsync draws from. Queries need no context, as in NVIDIA's runtime. */
static cudaError_t get_device_pool(cudaMemPool_t *memPool, int device, bool default_pool)
{
    CUdevice handle;
    cudaError_t status = sim_runtime_device_handle(device, &handle);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    /* Read only now: the lookup of the device loads the driver table. */
    PFN_cuDeviceGetMemPool_v11020 query = default_pool
                                              ? sim_runtime_driver.cuDeviceGetDefaultMemPool
                                              : sim_runtime_driver.cuDeviceGetMemPool;
    return SIM_RUNTIME_CALL(query, (CUmemoryPool *)memPool, handle);
}

cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    return get_device_pool(memPool, device, true);
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    return get_device_pool(memPool, device, false);
}

cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    CUdevice handle;
    cudaError_t status = sim_runtime_device_handle(device, &handle);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuDeviceSetMemPool, handle, (CUmemoryPool)memPool);
}

/* Explicit pools. cudaMemPoolProps, cudaMemLocation and the allocation,
 * handle and location enums lay out and number as the driver's, and the
 * cudaMemPoolAttr values are the CU_MEMPOOL_ATTR_* ones. */
_Static_assert(sizeof(struct cudaMemPoolProps) == sizeof(CUmemPoolProps),
               "cudaMemPoolProps and CUmemPoolProps differ");
_Static_assert((int)cudaMemPoolAttrReleaseThreshold == (int)CU_MEMPOOL_ATTR_RELEASE_THRESHOLD &&
                   (int)cudaMemPoolAttrUsedMemHigh == (int)CU_MEMPOOL_ATTR_USED_MEM_HIGH,
               "pool attributes numbered differently");

cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (memPool == NULL || poolProps == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemPoolCreate, (CUmemoryPool *)memPool,
                            (const CUmemPoolProps *)poolProps);
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (memPool == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemPoolDestroy, (CUmemoryPool)memPool);
}

cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (memPool == NULL || value == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemPoolSetAttribute, (CUmemoryPool)memPool,
                            (CUmemPool_attribute)attr, value);
}

cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (memPool == NULL || value == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemPoolGetAttribute, (CUmemoryPool)memPool,
                            (CUmemPool_attribute)attr, value);
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (memPool == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemPoolTrimTo, (CUmemoryPool)memPool, minBytesToKeep);
}

cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pHost == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    /* cudaHostAlloc* flags have the values of the CU_MEMHOSTALLOC_* flags. */
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemHostAlloc, pHost, size, flags);
}

cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
    /* The runtime never resolves cuMemAllocHost: both go through cuMemHostAlloc. */
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (ptr == NULL)
        return cudaSuccess;
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemFreeHost, ptr);
}

/* Page-locking existing host memory. The cudaHostRegister* flags have the
 * values of the CU_MEMHOSTREGISTER_* ones. */
cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (ptr == NULL || size == 0)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemHostRegister, ptr, size, flags);
}

cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    /* Memory never registered, NULL included, is cudaErrorHostMemoryNotRegistered. */
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemHostUnregister, ptr);
}

cudaError_t CUDARTAPI cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    /* Flags are reserved and must be 0. */
    if (pDevice == NULL || pHost == NULL || flags != 0)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdeviceptr address = 0;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuMemHostGetDevicePointer, &address, pHost, 0);
    if (status == cudaSuccess)
        *pDevice = pointer_from_device(address);
    return status;
}

cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (devPtr == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdeviceptr address = 0;
    /* cudaMemAttachGlobal/Host equal CU_MEM_ATTACH_GLOBAL/HOST. */
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuMemAllocManaged, &address, size, flags);
    if (status == cudaSuccess)
        *devPtr = pointer_from_device(address);
    return status;
}

/* The widest element size the driver accepts, so the pitch suits any access. */
#define PITCH_ELEMENT_BYTES 16

cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (devPtr == NULL || pitch == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUdeviceptr address = 0;
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuMemAllocPitch, &address, pitch, width,
                                          height, PITCH_ELEMENT_BYTES);
    if (status == cudaSuccess)
        *devPtr = pointer_from_device(address);
    return status;
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (free == NULL || total == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuMemGetInfo, free, total);
}

cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (attributes == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    unsigned int memory_type = 0;
    int device_ordinal = -2;
    CUdeviceptr device_pointer = 0;
    void *host_pointer = NULL;
    int is_managed = 0;
    CUpointer_attribute queried[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,
    };
    void *values[] = { &memory_type, &device_ordinal, &device_pointer, &host_pointer, &is_managed };
    /* cuPointerGetAttributes succeeds for memory no context knows and leaves
     * the memory type 0; since CUDA 11 that is cudaMemoryTypeUnregistered. */
    cudaError_t status = SIM_RUNTIME_CALL(sim_runtime_driver.cuPointerGetAttributes,
                                          (unsigned int)(sizeof queried / sizeof queried[0]), queried,
                                          values, device_from_pointer(ptr));
    if (status != cudaSuccess)
        return status;
    if (is_managed)
        attributes->type = cudaMemoryTypeManaged;
    else if (memory_type == CU_MEMORYTYPE_DEVICE)
        attributes->type = cudaMemoryTypeDevice;
    else if (memory_type == CU_MEMORYTYPE_HOST)
        attributes->type = cudaMemoryTypeHost;
    else
        attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = device_ordinal;
    attributes->devicePointer = pointer_from_device(device_pointer);
    attributes->hostPointer = host_pointer;
    return cudaSuccess;
}

/* Pointer attributes: what the driver knows about an address. */
#include "sim_internal.h"

#include <string.h>

/* Fills one attribute for a pointer the driver knows. Under sim.lock. */
static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, uintptr_t address,
                                  struct sim_range *range)
{
    bool host = range->kind == SIM_RANGE_HOST;
    bool managed = range->kind == SIM_RANGE_MANAGED;
    struct sim_device *device = range->device;
    uintptr_t base = range->base;
    size_t size = range->size;
    if (range->kind == SIM_RANGE_RESERVATION) {
        if (sim_vmm_mapping_range(range, address, &base, &size) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_VALUE;
        sim_vmm_is_accessible(address, 1, &device);
    }
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = (CUcontext)range->context;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(CUmemorytype *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = (CUdeviceptr)address;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host && !managed)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)address;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = range->buffer_id;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = managed;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = device != NULL ? device->ordinal : -1;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = range->kind == SIM_RANGE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(void **)data = (void *)base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned long long *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = (CUmemoryPool)range->pool;
        break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(int *)data = 0;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    SIM_ENTER("cuPointerGetAttribute");
    if (data == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)ptr);
    CUresult result = range == NULL || range->kind == SIM_RANGE_CAPTURED
                          ? CUDA_ERROR_INVALID_VALUE
                          : pointer_attribute(data, attribute, (uintptr_t)ptr, range);
    sim_unlock();
    return result;
}

/* Unknown pointers are not an error here: they read as unregistered host
 * memory, as with the driver. */
static void unregistered_attribute(void *data, CUpointer_attribute attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(CUmemorytype *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(void **)data = NULL;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = -2;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(unsigned long long *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = NULL;
        break;
    default:
        *(int *)data = 0;
        break;
    }
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                           CUpointer_attribute *attributes, void **data,
                                           CUdeviceptr ptr)
{
    SIM_ENTER("cuPointerGetAttributes");
    if (attributes == NULL || data == NULL || numAttributes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)ptr);
    if (range != NULL && range->kind == SIM_RANGE_CAPTURED)
        range = NULL;
    CUresult result = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes && result == CUDA_SUCCESS; i++) {
        if (data[i] == NULL)
            continue;
        if (range == NULL ||
            pointer_attribute(data[i], attributes[i], (uintptr_t)ptr, range) != CUDA_SUCCESS)
            unregistered_attribute(data[i], attributes[i]);
    }
    sim_unlock();
    return result;
}

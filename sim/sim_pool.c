/* Stream-ordered allocation: memory pools, cuMemAllocAsync and
 * cuMemFreeAsync. An async free is an item in its stream; the memory is
 * unmapped and returned to the device only when the stream reaches it, so a
 * use after the free in stream order faults. */
#include "sim_internal.h"

#include <stdlib.h>

struct sim_pool *sim_pool_create_default(struct sim_device *device)
{
    struct sim_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        abort();
    pool->device = device;
    pool->is_default = true;
    pool->access[device->ordinal] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    pool->reuse_flags[0] = pool->reuse_flags[1] = pool->reuse_flags[2] = 1;
    sim_handle_register(&pool->handle, SIM_HANDLE_POOL);
    return pool;
}

static void pool_free_if_done(struct sim_pool *pool)
{
    if (pool->destroyed && pool->allocation_count == 0)
        free(pool);
}

void sim_pool_free_now(struct sim_range *range)
{
    struct sim_pool *pool = range->pool;
    pool->used_current -= range->size;
    pool->reserved_current -= range->physical;
    pool->allocation_count--;
    sim_range_destroy(range);
    pool_free_if_done(pool);
}

/* ---- device pools ------------------------------------------------------- */

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    SIM_ENTER("cuDeviceGetDefaultMemPool");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pool_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = (CUmemoryPool)device->default_pool;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    SIM_ENTER("cuDeviceGetMemPool");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    *pool = (CUmemoryPool)device->current_pool;
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult set_current_pool(struct sim_device *device, CUmemoryPool pool)
{
    CUresult result = CUDA_SUCCESS;
    sim_lock();
    struct sim_pool *chosen = (struct sim_pool *)pool;
    if (!sim_handle_is_live(chosen, SIM_HANDLE_POOL) || chosen->device != device)
        result = CUDA_ERROR_INVALID_VALUE;
    else
        device->current_pool = chosen;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    SIM_ENTER("cuDeviceSetMemPool");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    return result == CUDA_SUCCESS ? set_current_pool(device, pool) : result;
}

/* The device a (location, allocation type) pair names; only device pinned
 * memory is simulated. */
static CUresult pool_location_device(const CUmemLocation *location, CUmemAllocationType type,
                                     struct sim_device **device)
{
    if (location == NULL || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    return sim_device_lookup(location->id, device);
}

SIM_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                           CUmemAllocationType type)
{
    SIM_ENTER("cuMemGetDefaultMemPool");
    struct sim_device *device;
    CUresult result = pool_location_device(location, type, &device);
    if (result == CUDA_SUCCESS && pool_out == NULL)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        *pool_out = (CUmemoryPool)device->default_pool;
    return result;
}

SIM_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                    CUmemAllocationType type)
{
    SIM_ENTER("cuMemGetMemPool");
    struct sim_device *device;
    CUresult result = pool_location_device(location, type, &device);
    if (result == CUDA_SUCCESS && pool == NULL)
        result = CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS) {
        sim_lock();
        *pool = (CUmemoryPool)device->current_pool;
        sim_unlock();
    }
    return result;
}

SIM_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                    CUmemoryPool pool)
{
    SIM_ENTER("cuMemSetMemPool");
    struct sim_device *device;
    CUresult result = pool_location_device(location, type, &device);
    return result == CUDA_SUCCESS ? set_current_pool(device, pool) : result;
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    SIM_ENTER_ALLOCATION("cuMemPoolCreate");
    struct sim_device *device;
    if (pool == NULL || poolProps == NULL || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_device_lookup(poolProps->location.id, &device) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_pool *created = calloc(1, sizeof *created);
    if (created == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    created->device = device;
    created->access[device->ordinal] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    created->reuse_flags[0] = created->reuse_flags[1] = created->reuse_flags[2] = 1;
    sim_lock();
    sim_handle_register(&created->handle, SIM_HANDLE_POOL);
    sim_unlock();
    *pool = (CUmemoryPool)created;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    SIM_ENTER("cuMemPoolDestroy");
    struct sim_pool *target = (struct sim_pool *)pool;
    sim_lock();
    if (!sim_handle_is_live(target, SIM_HANDLE_POOL) || target->is_default) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (target->device->current_pool == target)
        target->device->current_pool = target->device->default_pool;
    sim_handle_unregister(&target->handle);
    /* Outstanding allocations stay valid; the pool goes with the last. */
    target->destroyed = true;
    pool_free_if_done(target);
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SIM_ENTER("cuMemPoolGetAttribute");
    struct sim_pool *target = (struct sim_pool *)pool;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = CUDA_SUCCESS;
    if (!sim_handle_is_live(target, SIM_HANDLE_POOL)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            *(int *)value = target->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
            break;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            *(cuuint64_t *)value = target->release_threshold;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            *(cuuint64_t *)value = target->reserved_current;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            *(cuuint64_t *)value = target->reserved_high;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
            *(cuuint64_t *)value = target->used_current;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            *(cuuint64_t *)value = target->used_high;
            break;
        default:
            result = CUDA_ERROR_INVALID_VALUE;
        }
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SIM_ENTER("cuMemPoolSetAttribute");
    struct sim_pool *target = (struct sim_pool *)pool;
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = CUDA_SUCCESS;
    if (!sim_handle_is_live(target, SIM_HANDLE_POOL)) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            target->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] =
                *(int *)value != 0;
            break;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            target->release_threshold = *(cuuint64_t *)value;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            /* Only a reset to zero is allowed: the mark restarts from now. */
            if (*(cuuint64_t *)value != 0)
                result = CUDA_ERROR_INVALID_VALUE;
            else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
                target->reserved_high = target->reserved_current;
            else
                target->used_high = target->used_current;
            break;
        default:
            result = CUDA_ERROR_INVALID_VALUE;
        }
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    SIM_ENTER("cuMemPoolTrimTo");
    (void)minBytesToKeep;
    sim_lock();
    bool live = sim_handle_is_live(pool, SIM_HANDLE_POOL);
    sim_unlock();
    /* Freed blocks are returned to the device at once, so nothing is cached
     * and there is nothing to trim. */
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    SIM_ENTER("cuMemPoolSetAccess");
    struct sim_pool *target = (struct sim_pool *)pool;
    if (map == NULL && count > 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_handle_is_live(target, SIM_HANDLE_POOL) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count && result == CUDA_SUCCESS; i++) {
        struct sim_device *device;
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            sim_device_lookup(map[i].location.id, &device) != CUDA_SUCCESS)
            result = CUDA_ERROR_INVALID_DEVICE;
        else if (device == target->device &&
                 map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            result = CUDA_ERROR_INVALID_DEVICE; /* the owner keeps full access */
    }
    for (size_t i = 0; i < count && result == CUDA_SUCCESS; i++)
        target->access[map[i].location.id] = map[i].flags;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                       CUmemLocation *location)
{
    SIM_ENTER("cuMemPoolGetAccess");
    struct sim_pool *target = (struct sim_pool *)memPool;
    struct sim_device *device;
    if (flags == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
        sim_device_lookup(location->id, &device) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    bool live = sim_handle_is_live(target, SIM_HANDLE_POOL);
    if (live)
        *flags = target->access[location->id];
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- stream-ordered allocation ------------------------------------------ */

static CUresult allocate_async(CUdeviceptr *dptr, size_t bytesize, struct sim_pool *pool,
                               CUstream hStream, bool per_thread_default)
{
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_device *device = stream->context->device;
    if (pool == NULL)
        pool = device->current_pool;
    if (!sim_handle_is_live(pool, SIM_HANDLE_POOL) || pool->device != device) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (stream->capture != NULL) {
        /* Inside a capture the allocation becomes a graph node: the address
         * is reserved but not usable until the graph runs. */
        result = sim_capture_allocate(stream, bytesize, dptr);
        sim_unlock();
        return result;
    }
    struct sim_range *range;
    result = sim_device_allocate(stream->context, bytesize, SIM_RANGE_POOL, &range);
    if (result == CUDA_SUCCESS) {
        range->pool = pool;
        pool->allocation_count++;
        pool->used_current += range->size;
        pool->reserved_current += range->physical;
        if (pool->used_current > pool->used_high)
            pool->used_high = pool->used_current;
        if (pool->reserved_current > pool->reserved_high)
            pool->reserved_high = pool->reserved_current;
        *dptr = (CUdeviceptr)range->base;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocAsync,
                              (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
                              allocate_async(dptr, bytesize, NULL, hStream, false))

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocAsync_ptsz,
                              (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
                              allocate_async(dptr, bytesize, NULL, hStream, true))

static CUresult allocate_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                   CUstream hStream, bool per_thread_default)
{
    if (pool == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return allocate_async(dptr, bytesize, (struct sim_pool *)pool, hStream, per_thread_default);
}

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocFromPoolAsync,
                              (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                               CUstream hStream),
                              allocate_from_pool(dptr, bytesize, pool, hStream, false))

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocFromPoolAsync_ptsz,
                              (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                               CUstream hStream),
                              allocate_from_pool(dptr, bytesize, pool, hStream, true))

static bool device_allocation_idle_to_free(const struct sim_range *range)
{
    return range->kind == SIM_RANGE_DEVICE && !range->free_pending;
}

/* cuMemFreeAsync of cuMemAlloc memory: the driver documents no restriction
 * on where the memory came from (unlike cuMemFree's list, and except during
 * capture), and accepts it. Here it is freed once the stream's work is done
 * (and, as cuMemFree does, the owning context's), which keeps the stream
 * order and blocks the host as a synchronizing free may. */
static CUresult free_device_allocation_async(struct sim_stream *stream, CUdeviceptr dptr)
{
    /* The sim's own wait: CUDA does not block the host here, so the race
     * detector must not count it as the host observing the stream. */
    sim_stream_drain(stream, false);
    struct sim_range *range =
        sim_range_claim_idle((uintptr_t)dptr, device_allocation_idle_to_free);
    if (range == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_range_destroy(range);
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream, bool per_thread_default)
{
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)dptr);
    if (range != NULL && range->base == (uintptr_t)dptr && range->kind == SIM_RANGE_DEVICE &&
        !range->free_pending && stream->capture == NULL) {
        sim_unlock();
        return free_device_allocation_async(stream, dptr);
    }
    if (range == NULL || range->base != (uintptr_t)dptr || range->free_pending ||
        (range->kind != SIM_RANGE_POOL && range->kind != SIM_RANGE_CAPTURED)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (stream->capture != NULL || range->kind == SIM_RANGE_CAPTURED) {
        /* Inside a capture the free is a graph node and must name a graph
         * allocation. Outside one a graph allocation cannot be freed here:
         * its memory belongs to the instantiation that maps it (freeing it
         * after a launch, which CUDA allows, is not simulated). */
        bool allowed = stream->capture != NULL && range->kind == SIM_RANGE_CAPTURED;
        if (allowed) {
            /* A no-op node: the memory lives as long as the instantiation
             * that maps it. */
            struct sim_work free_node = {.kind = SIM_WORK_MARKER};
            result = sim_capture_record(stream->capture, &free_node);
            allowed = result == CUDA_SUCCESS;
        }
        if (allowed)
            range->free_pending = true;
        sim_unlock();
        if (result != CUDA_SUCCESS)
            return result;
        return allowed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    range->free_pending = true;
    sim_unlock();
    struct sim_work work = {.kind = SIM_WORK_FREE};
    work.u.free.range = range;
    result = sim_stream_submit(stream, &work, NULL);
    if (result != CUDA_SUCCESS) {
        sim_lock();
        range->free_pending = false;
        sim_unlock();
    }
    return result;
}

SIM_EXPORT_VARIANT(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream),
                   free_async(dptr, hStream, false))

SIM_EXPORT_VARIANT(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream),
                   free_async(dptr, hStream, true))

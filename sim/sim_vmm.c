/* The virtual memory management API. A reservation is PROT_NONE address
 * space; a physical allocation is a range of a sparse memfd, charged to the
 * device; a mapping maps that range there but keeps it inaccessible until
 * cuMemSetAccess, as on a GPU. Physical memory returns to the device only
 * when its handle is released and its last mapping is gone.
 *
 * One file because reservations, physical handles and mappings refer to
 * each other and change under one lock. */
#include "sim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct sim_physical {
    struct sim_handle handle;
    struct sim_device *device;
    size_t size;
    int fd;            /* the device's shared file, or its own when exportable */
    off_t offset;      /* where the allocation starts in fd */
    bool own_file;
    /* From cuMemImportFromShareableHandle: the exporter's device memory,
     * charged to the exporting process's device, not to this one. */
    bool imported;
    unsigned handle_references; /* cuMemCreate + cuMemRetainAllocationHandle */
    unsigned map_count;
    CUmemAllocationProp properties;
};

struct sim_vmm_mapping {
    LIST_ENTRY(sim_vmm_mapping) link;
    uintptr_t base;
    size_t size;
    struct sim_physical *physical;
    /* Per accessing device, as cuMemSetAccess grants it: a GPU checks the
     * device that touches a mapping, so one flag for all would let a peer
     * use memory it was never given. */
    CUmemAccess_flags access[SIM_MAX_DEVICES];
};

/* The widest access any device has: the host is every device at once. */
static CUmemAccess_flags widest_access(const struct sim_vmm_mapping *mapping)
{
    CUmemAccess_flags widest = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (int device = 0; device < SIM_MAX_DEVICES; device++)
        if (mapping->access[device] > widest)
            widest = mapping->access[device];
    return widest;
}

static bool is_granular(size_t value)
{
    return value % sim.settings.granularity == 0;
}

/* Under sim.lock. */
static void physical_destroy_if_unused(struct sim_physical *physical)
{
    if (physical->handle_references > 0 || physical->map_count > 0)
        return;
    if (physical->own_file)
        close(physical->fd);
    else /* give the pages back; the offset range is never reused */
        fallocate(physical->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, physical->offset,
                  (off_t)physical->size);
    if (!physical->imported)
        sim_physical_release(physical->device, physical->size);
    free(physical);
}

static CUresult validate_properties(const CUmemAllocationProp *prop, struct sim_device **device)
{
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if ((prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = sim_device_lookup(prop->location.id, device);
    return result == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_DEVICE : result;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                  const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option)
{
    SIM_ENTER("cuMemGetAllocationGranularity");
    struct sim_device *device;
    if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = validate_properties(prop, &device);
    if (result != CUDA_SUCCESS)
        return result;
    *granularity = sim.settings.granularity;
    return CUDA_SUCCESS;
}

/* Gives a new allocation its backing: its own memfd when it may be exported
 * as a file descriptor, else a fresh range of the device's shared file.
 * Under sim.lock, with `size` already charged (uncharged on failure). */
static bool place_physical(struct sim_physical *physical, struct sim_device *device, size_t size,
                           bool exportable)
{
    if (exportable) {
        physical->fd = memfd_create("gpusim-exportable", MFD_CLOEXEC);
        if (physical->fd >= 0 && ftruncate(physical->fd, (off_t)size) == 0) {
            physical->own_file = true;
            return true;
        }
        if (physical->fd >= 0)
            close(physical->fd);
        sim_physical_release(device, size);
        return false;
    }
    if (device->physical_file < 0)
        device->physical_file = memfd_create("gpusim-physical", MFD_CLOEXEC);
    unsigned long long end = device->physical_file_end + size;
    if (device->physical_file < 0 || ftruncate(device->physical_file, (off_t)end) != 0) {
        sim_physical_release(device, size);
        return false;
    }
    physical->fd = device->physical_file;
    physical->offset = (off_t)device->physical_file_end;
    device->physical_file_end = end;
    return true;
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags)
{
    SIM_ENTER_ALLOCATION("cuMemCreate");
    struct sim_device *device;
    if (handle == NULL || flags != 0 || size == 0 || !is_granular(size))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = validate_properties(prop, &device);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_physical *physical = calloc(1, sizeof *physical);
    if (physical == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    bool placed = sim_physical_charge(device, size);
    if (placed)
        placed = place_physical(physical, device, size,
                                (prop->requestedHandleTypes &
                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0);
    sim_unlock();
    if (!placed) {
        free(physical);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    physical->device = device;
    physical->size = size;
    physical->handle_references = 1;
    physical->properties = *prop;
    sim_lock();
    sim_handle_register(&physical->handle, SIM_HANDLE_PHYSICAL);
    sim_unlock();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SIM_ENTER("cuMemRelease");
    struct sim_physical *physical = (struct sim_physical *)(uintptr_t)handle;
    sim_lock();
    if (!sim_handle_is_live(physical, SIM_HANDLE_PHYSICAL)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (--physical->handle_references == 0) {
        sim_handle_unregister(&physical->handle);
        physical_destroy_if_unused(physical);
    }
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags)
{
    SIM_ENTER_ALLOCATION("cuMemAddressReserve");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (ptr == NULL || flags != 0 || size == 0 || size % page != 0 || addr % page != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < sim.settings.granularity)
        alignment = sim.settings.granularity;
    struct sim_range *range = sim_range_new(SIM_RANGE_RESERVATION, NULL, NULL);
    if (range == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    char *base = NULL;
    if (addr != 0 && addr % alignment == 0) {
        void *hinted = mmap((void *)(uintptr_t)addr, size, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (hinted != MAP_FAILED)
            base = hinted;
    }
    if (base == NULL) {
        size_t span = size + alignment;
        if (span < size) {
            free(range);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        char *reserved = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0);
        if (reserved == MAP_FAILED) {
            free(range);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        base = (char *)(((uintptr_t)reserved + alignment - 1) / alignment * alignment);
        if (base > reserved)
            munmap(reserved, (size_t)(base - reserved));
        if (base + size < reserved + span)
            munmap(base + size, (size_t)(reserved + span - (base + size)));
    }
    range->base = (uintptr_t)base;
    range->size = size;
    range->mapping = base;
    range->mapping_size = size;
    sim_lock();
    sim_range_insert(range);
    sim_unlock();
    *ptr = (CUdeviceptr)(uintptr_t)base;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SIM_ENTER("cuMemAddressFree");
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)ptr);
    if (range == NULL || range->kind != SIM_RANGE_RESERVATION || range->base != (uintptr_t)ptr ||
        range->size != size) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Freeing a range that still has mappings would leak their physical
     * memory's mapping references: refuse, as the driver does. */
    if (!LIST_EMPTY(&range->vmm_mappings)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    sim_racecheck_release(range->base, range->size);
    sim_range_destroy(range);
    sim_unlock();
    return CUDA_SUCCESS;
}

/* The reservation that wholly contains [address, address + size). */
static struct sim_range *containing_reservation(uintptr_t address, size_t size)
{
    struct sim_range *range = sim_range_find(address);
    if (range == NULL || range->kind != SIM_RANGE_RESERVATION || size == 0 ||
        size > range->size - (address - range->base))
        return NULL;
    return range;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SIM_ENTER_ALLOCATION("cuMemMap");
    if (flags != 0 || offset != 0 || !is_granular(size) || !is_granular((size_t)ptr))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_physical *physical = (struct sim_physical *)(uintptr_t)handle;
    struct sim_vmm_mapping *mapping = calloc(1, sizeof *mapping);
    if (mapping == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    CUresult result = CUDA_SUCCESS;
    struct sim_range *range = containing_reservation((uintptr_t)ptr, size);
    if (!sim_handle_is_live(physical, SIM_HANDLE_PHYSICAL) || size > physical->size ||
        range == NULL) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        struct sim_vmm_mapping *existing;
        LIST_FOREACH(existing, &range->vmm_mappings, link)
            if ((uintptr_t)ptr < existing->base + existing->size &&
                existing->base < (uintptr_t)ptr + size)
                result = CUDA_ERROR_INVALID_VALUE;
    }
    if (result == CUDA_SUCCESS &&
        mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, physical->fd,
             physical->offset) ==
            MAP_FAILED)
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        mapping->base = (uintptr_t)ptr;
        mapping->size = size;
        mapping->physical = physical;
        for (int device = 0; device < SIM_MAX_DEVICES; device++)
            mapping->access[device] = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        physical->map_count++;
        LIST_INSERT_HEAD(&range->vmm_mappings, mapping, link);
        sim_racecheck_forget(mapping->base, mapping->size);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        free(mapping);
    return result;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SIM_ENTER("cuMemUnmap");
    /* The race detector judges the call as the program made it: unmapping
     * bytes whose last use the host has not synchronized with is a race,
     * even though the simulator then waits for that use. */
    sim_racecheck_release((uintptr_t)ptr, size);
    /* cuMemUnmap is synchronous: work already queued that touches the range
     * finishes first. That wait is the simulator's safety, not an ordering
     * CUDA promises, so the host does not learn from it. */
    struct sim_context *context = sim_current_context();
    if (context != NULL) {
        sim_lock();
        bool live = sim_handle_is_live(context, SIM_HANDLE_CONTEXT) && context->active;
        sim_unlock();
        if (live)
            sim_context_drain(context, false);
    }
    sim_lock();
    struct sim_range *range = containing_reservation((uintptr_t)ptr, size);
    uintptr_t start = (uintptr_t)ptr, end = start + size;
    bool covered = range != NULL;
    size_t mapped_bytes = 0;
    struct sim_vmm_mapping *mapping, *next;
    if (covered) {
        LIST_FOREACH(mapping, &range->vmm_mappings, link) {
            bool overlaps = mapping->base < end && start < mapping->base + mapping->size;
            bool inside = mapping->base >= start && mapping->base + mapping->size <= end;
            if (overlaps && !inside)
                covered = false; /* a sub-range of a mapping */
            if (inside)
                mapped_bytes += mapping->size;
        }
    }
    /* The range must be exactly a union of whole mappings. */
    if (!covered || mapped_bytes != size) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (mapping = LIST_FIRST(&range->vmm_mappings); mapping != NULL; mapping = next) {
        next = LIST_NEXT(mapping, link);
        if (mapping->base < start || mapping->base + mapping->size > end)
            continue;
        mmap((void *)mapping->base, mapping->size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        LIST_REMOVE(mapping, link);
        struct sim_physical *physical = mapping->physical;
        physical->map_count--;
        physical_destroy_if_unused(physical);
        free(mapping);
    }
    sim_unlock();
    return CUDA_SUCCESS;
}

static int protection_for(CUmemAccess_flags flags)
{
    switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
        return PROT_READ;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
        return PROT_READ | PROT_WRITE;
    default:
        return PROT_NONE;
    }
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                   size_t count)
{
    SIM_ENTER("cuMemSetAccess");
    if (desc == NULL || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        struct sim_device *device;
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (sim_device_lookup(desc[i].location.id, &device) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    sim_lock();
    struct sim_range *range = containing_reservation((uintptr_t)ptr, size);
    uintptr_t start = (uintptr_t)ptr, end = start + size;
    size_t mapped_bytes = 0;
    struct sim_vmm_mapping *mapping;
    if (range != NULL)
        LIST_FOREACH(mapping, &range->vmm_mappings, link) {
            uintptr_t low = mapping->base > start ? mapping->base : start;
            uintptr_t high = mapping->base + mapping->size < end ? mapping->base + mapping->size : end;
            if (low < high)
                mapped_bytes += high - low;
        }
    if (range == NULL || mapped_bytes != size) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Devices not named keep the access they had. The host is every
     * simulated device at once: the widest access of any device decides a
     * mapping's page protection. */
    LIST_FOREACH(mapping, &range->vmm_mappings, link) {
        if (mapping->base >= end || start >= mapping->base + mapping->size)
            continue;
        for (size_t i = 0; i < count; i++)
            mapping->access[desc[i].location.id] = desc[i].flags;
        uintptr_t low = mapping->base > start ? mapping->base : start;
        uintptr_t mapping_end = mapping->base + mapping->size;
        uintptr_t high = mapping_end < end ? mapping_end : end;
        mprotect((void *)low, high - low, protection_for(widest_access(mapping)));
    }
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                   CUdeviceptr ptr)
{
    SIM_ENTER("cuMemGetAccess");
    struct sim_device *device;
    if (flags == NULL || location == NULL || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
        sim_device_lookup(location->id, &device) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_range *range = containing_reservation((uintptr_t)ptr, 1);
    CUresult result = CUDA_ERROR_INVALID_VALUE;
    struct sim_vmm_mapping *mapping;
    if (range != NULL)
        LIST_FOREACH(mapping, &range->vmm_mappings, link)
            if ((uintptr_t)ptr >= mapping->base && (uintptr_t)ptr < mapping->base + mapping->size) {
                *flags = mapping->access[location->id];
                result = CUDA_SUCCESS;
            }
    sim_unlock();
    return result;
}

/* Under sim.lock: the mapping of a reservation that contains `address`. */
static struct sim_vmm_mapping *mapping_at(uintptr_t address)
{
    struct sim_range *range = containing_reservation(address, 1);
    struct sim_vmm_mapping *mapping;
    if (range != NULL)
        LIST_FOREACH(mapping, &range->vmm_mappings, link)
            if (address >= mapping->base && address < mapping->base + mapping->size)
                return mapping;
    return NULL;
}

CUresult sim_vmm_mapping_range(struct sim_range *reservation, uintptr_t address, uintptr_t *base,
                               size_t *size)
{
    (void)reservation;
    struct sim_vmm_mapping *mapping = mapping_at(address);
    if (mapping == NULL)
        return CUDA_ERROR_NOT_FOUND;
    *base = mapping->base;
    *size = mapping->size;
    return CUDA_SUCCESS;
}

/* A range may span several mappings placed side by side (an expandable
 * segment maps one handle per growth): the device sees one contiguous range,
 * so every byte of it must be mapped with access, whichever mapping holds it. */
bool sim_vmm_is_accessible(uintptr_t address, size_t size, struct sim_device **device)
{
    return sim_vmm_is_accessible_by(address, size, -1, device);
}

bool sim_vmm_is_accessible_by(uintptr_t address, size_t size, int accessor,
                              struct sim_device **device)
{
    struct sim_vmm_mapping *first = NULL;
    uintptr_t cursor = address;
    size_t remaining = size;
    for (;;) {
        struct sim_vmm_mapping *mapping = mapping_at(cursor);
        CUmemAccess_flags access = mapping == NULL ? CU_MEM_ACCESS_FLAGS_PROT_NONE
                                   : accessor < 0 || accessor >= SIM_MAX_DEVICES
                                       ? widest_access(mapping)
                                       : mapping->access[accessor];
        if (access == CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return false;
        if (first == NULL)
            first = mapping;
        size_t available = mapping->base + mapping->size - cursor;
        if (remaining <= available)
            break;
        cursor += available;
        remaining -= available;
    }
    if (device != NULL)
        *device = first->physical->device;
    return true;
}

SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SIM_ENTER("cuMemRetainAllocationHandle");
    if (handle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_vmm_mapping *mapping = mapping_at((uintptr_t)addr);
    if (mapping != NULL) {
        struct sim_physical *physical = mapping->physical;
        /* A released handle comes back to life while a mapping keeps it. */
        if (physical->handle_references++ == 0)
            sim_handle_register(&physical->handle, SIM_HANDLE_PHYSICAL);
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
    }
    sim_unlock();
    return mapping != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                           CUmemGenericAllocationHandle handle)
{
    SIM_ENTER("cuMemGetAllocationPropertiesFromHandle");
    struct sim_physical *physical = (struct sim_physical *)(uintptr_t)handle;
    if (prop == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    bool live = sim_handle_is_live(physical, SIM_HANDLE_PHYSICAL);
    if (live)
        *prop = physical->properties;
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                 CUmemGenericAllocationHandle handle,
                                                 CUmemAllocationHandleType handleType,
                                                 unsigned long long flags)
{
    SIM_ENTER("cuMemExportToShareableHandle");
    struct sim_physical *physical = (struct sim_physical *)(uintptr_t)handle;
    if (shareableHandle == NULL || flags != 0 ||
        handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = CUDA_ERROR_INVALID_VALUE;
    if (sim_handle_is_live(physical, SIM_HANDLE_PHYSICAL) && physical->own_file) {
        int fd = dup(physical->fd);
        if (fd >= 0) {
            *(int *)shareableHandle = fd;
            result = CUDA_SUCCESS;
        } else {
            result = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    sim_unlock();
    return result;
}

/* The importing side of a POSIX file descriptor export (from this process
 * or, passed over a socket or inherited, from another): the descriptor is
 * the exporter's memfd, so mappings of the new handle share its bytes. The
 * caller keeps its descriptor, as with the driver. */
SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                   void *osHandle,
                                                   CUmemAllocationHandleType shHandleType)
{
    SIM_ENTER("cuMemImportFromShareableHandle");
    if (handle == NULL || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    int descriptor = (int)(intptr_t)osHandle;
    struct stat status;
    if (descriptor < 0 || fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode) ||
        status.st_size <= 0 || !is_granular((size_t)status.st_size))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_physical *physical = calloc(1, sizeof *physical);
    if (physical == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    physical->fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 0);
    if (physical->fd < 0) {
        free(physical);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    physical->own_file = true;
    physical->imported = true;
    physical->device = context->device;
    physical->size = (size_t)status.st_size;
    physical->handle_references = 1;
    physical->properties = (CUmemAllocationProp){
        .type = CU_MEM_ALLOCATION_TYPE_PINNED,
        .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = context->device->ordinal},
    };
    sim_lock();
    sim_handle_register(&physical->handle, SIM_HANDLE_PHYSICAL);
    sim_unlock();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
    return CUDA_SUCCESS;
}

/* Device, host and managed memory: the registry of address ranges, the
 * capacity accounting, and cuMemAlloc/cuMemFree and their relatives.
 *
 * Device memory is host memory mapped with MAP_NORESERVE, so an 80 GiB
 * device costs nothing until it is touched. Each allocation is followed by
 * an inaccessible guard page and is unmapped when freed: overruns and uses
 * after free fault instead of silently reading another allocation. */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int compare_ranges(const struct sim_range *a, const struct sim_range *b)
{
    return a->base < b->base ? -1 : a->base > b->base;
}

RB_HEAD(sim_range_tree, sim_range);
RB_GENERATE_STATIC(sim_range_tree, sim_range, link, compare_ranges)

static struct sim_range_tree ranges = RB_INITIALIZER(&ranges);

struct sim_range *sim_range_new(enum sim_range_kind kind, struct sim_context *context,
                                struct sim_device *device)
{
    struct sim_range *range = calloc(1, sizeof *range);
    if (range == NULL)
        return NULL;
    range->kind = kind;
    range->context = context;
    range->device = device;
    range->shared_fd = -1;
    range->buffer_id = sim_next_id();
    LIST_INIT(&range->vmm_mappings);
    return range;
}

void sim_range_insert(struct sim_range *range)
{
    RB_INSERT(sim_range_tree, &ranges, range);
    /* New memory has no history, even at an address used before. A
     * reservation's bytes start fresh at each cuMemMap instead. */
    if (range->kind != SIM_RANGE_RESERVATION)
        sim_racecheck_forget(range->base, range->size);
}

static void range_remove(struct sim_range *range)
{
    RB_REMOVE(sim_range_tree, &ranges, range);
}

struct sim_range *sim_range_find(uintptr_t address)
{
    struct sim_range key = {.base = address};
    struct sim_range *found = RB_NFIND(sim_range_tree, &ranges, &key);
    if (found == NULL || found->base != address)
        found = found != NULL ? RB_PREV(sim_range_tree, &ranges, found)
                              : RB_MAX(sim_range_tree, &ranges);
    if (found != NULL && address >= found->base && address - found->base < found->size)
        return found;
    return NULL;
}

void sim_range_foreach(bool (*visit)(struct sim_range *, void *), void *argument)
{
    struct sim_range *range, *next;
    RB_FOREACH_SAFE(range, sim_range_tree, &ranges, next)
        if (!visit(range, argument))
            return;
}

bool sim_physical_charge(struct sim_device *device, size_t bytes)
{
    if (bytes > device->capacity - device->physical_bytes)
        return false;
    device->physical_bytes += bytes;
    if (device->physical_bytes > device->peak_physical_bytes)
        device->peak_physical_bytes = device->physical_bytes;
    return true;
}

void sim_physical_release(struct sim_device *device, size_t bytes)
{
    device->physical_bytes -= bytes;
}

static size_t round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

/* Maps `size` bytes of lazily committed memory aligned to `alignment`,
 * followed by an inaccessible guard page; NULL when out of address space. */
/* Large allocations fault in by huge pages where the kernel allows it: a
 * program that allocates and frees megabytes in a loop would otherwise spend
 * most of its time in the page-fault path. Called after the fresh-memory
 * pattern is written: the two edge pages are then small pages, and an
 * allocation nobody touches commits 8 KiB, not two zeroed huge pages. */
static void prefer_huge_pages(void *base, size_t size)
{
    if (size >= (size_t)2 << 20)
        (void)madvise(base, size, MADV_HUGEPAGE);
}

static void *map_region(size_t size, size_t alignment, size_t *mapping_size,
                            void **mapping)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (alignment < page)
        alignment = page;
    size_t usable = round_up(size, page);
    size_t span = usable + page + alignment;
    if (span < size)
        return NULL;
    char *reserved = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED)
        return NULL;
    char *aligned = (char *)round_up((uintptr_t)reserved, alignment);
    if (mmap(aligned, usable, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED) {
        munmap(reserved, span);
        return NULL;
    }
    /* Keep [aligned, aligned + usable + guard page); give back the rest. */
    if (aligned > reserved)
        munmap(reserved, (size_t)(aligned - reserved));
    char *tail = aligned + usable + page;
    if (tail < reserved + span)
        munmap(tail, (size_t)(reserved + span - tail));
    *mapping = aligned;
    *mapping_size = usable + page;
    return aligned;
}

/* Large allocations take whole 2 MiB pages, as the driver backs them with
 * large pages; small ones are charged in 512-byte units. */
static void allocation_shape(size_t size, size_t *alignment, size_t *physical)
{
    if (size >= SIM_LARGE_PAGE) {
        *alignment = SIM_LARGE_PAGE;
        *physical = round_up(size, SIM_LARGE_PAGE);
    } else {
        *alignment = SIM_SMALL_ALIGNMENT;
        *physical = round_up(size, SIM_SMALL_ALIGNMENT);
    }
}

/* Device memory is not cleared by the driver: fresh allocations start with a
 * recognisable pattern instead of zeros, so code that reads before writing
 * does not pass by luck. Only the first and last page are written, to keep
 * large allocations uncommitted. */
#define FRESH_MEMORY_PATTERN 0xA5
static void poison_fresh_memory(char *base, size_t size)
{
    size_t edge = 4096;
    if (size <= 2 * edge) {
        memset(base, FRESH_MEMORY_PATTERN, size);
        return;
    }
    memset(base, FRESH_MEMORY_PATTERN, edge);
    memset(base + size - edge, FRESH_MEMORY_PATTERN, edge);
}

CUresult sim_device_allocate(struct sim_context *context, size_t size, enum sim_range_kind kind,
                             struct sim_range **out)
{
    size_t alignment, physical;
    allocation_shape(size, &alignment, &physical);
    if (physical < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_device *device = context->device;
    if (!sim_physical_charge(device, physical))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_range *range = sim_range_new(kind, context, device);
    char *base = range == NULL ? NULL
                               : map_region(size, alignment, &range->mapping_size,
                                                &range->mapping);
    if (base == NULL) {
        free(range);
        sim_physical_release(device, physical);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range->base = (uintptr_t)base;
    range->size = size;
    range->physical = physical;
    poison_fresh_memory(base, size);
    prefer_huge_pages(base, size);
    sim_range_insert(range);
    *out = range;
    return CUDA_SUCCESS;
}

void sim_range_destroy(struct sim_range *range)
{
    range_remove(range);
    sim_racecheck_forget(range->base, range->size);
    if (range->mapping != NULL)
        munmap(range->mapping, range->mapping_size);
    if (range->shared_fd >= 0)
        close(range->shared_fd);
    if (range->physical > 0)
        sim_physical_release(range->device, range->physical);
    free(range);
}

static bool free_if_owned_by(struct sim_range *range, void *context)
{
    if (range->context == context &&
        (range->kind == SIM_RANGE_DEVICE || range->kind == SIM_RANGE_POOL ||
         range->kind == SIM_RANGE_HOST || range->kind == SIM_RANGE_MANAGED ||
         range->kind == SIM_RANGE_IPC_IMPORT || range->kind == SIM_RANGE_CAPTURED)) {
        if (range->pool != NULL)
            sim_pool_free_now(range);
        else
            sim_range_destroy(range);
    }
    return true;
}

void sim_free_context_memory(struct sim_context *context)
{
    sim_range_foreach(free_if_owned_by, context);
}

/* ---- cuMemAlloc / cuMemFree --------------------------------------------- */

/* The current context for an allocation or a free, which are potentially
 * unsafe during stream capture. */
static CUresult allocation_context(struct sim_context **context)
{
    CUresult result = sim_capture_check_unsafe_call();
    return result == CUDA_SUCCESS ? sim_require_context(context) : result;
}

static CUresult memory_allocate(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = allocation_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_range *range;
    sim_lock();
    result = sim_device_allocate(context, bytesize, SIM_RANGE_DEVICE, &range);
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)range->base;
    return result;
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SIM_ENTER_ALLOCATION("cuMemAlloc_v2");
    return memory_allocate(dptr, bytesize);
}

SIM_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    SIM_ENTER_ALLOCATION("cuMemAlloc");
    (void)bytesize;
    if (dptr == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    /* The v1 ABI has 32-bit device pointers, which a 64-bit address space
     * cannot honour. */
    return CUDA_ERROR_NOT_SUPPORTED;
}

struct sim_range *sim_range_claim_idle(uintptr_t address, bool (*accepts)(const struct sim_range *))
{
    sim_lock();
    struct sim_range *range = sim_range_find(address);
    bool found = range != NULL && range->base == address && accepts(range);
    struct sim_context *owner = found ? range->context : NULL;
    sim_unlock();
    if (!found)
        return NULL;
    /* The host waits, as the driver's free does: what the memory was used
     * for is then ordered before the host (race detector). */
    if (owner != NULL)
        sim_context_drain(owner, true);
    sim_lock();
    /* Another thread may have freed it meanwhile. */
    range = sim_range_find(address);
    if (range != NULL && range->base == address && accepts(range))
        return range;
    sim_unlock();
    return NULL;
}

static bool freeable_by_cuMemFree(const struct sim_range *range)
{
    return !range->free_pending && (range->kind == SIM_RANGE_DEVICE ||
                                    range->kind == SIM_RANGE_POOL ||
                                    range->kind == SIM_RANGE_MANAGED);
}

static CUresult memory_free(CUdeviceptr dptr)
{
    struct sim_context *context;
    CUresult result = allocation_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    if (dptr == 0)
        return CUDA_SUCCESS;
    /* cuMemFree synchronizes: in-flight work may still use the memory. */
    struct sim_range *range = sim_range_claim_idle((uintptr_t)dptr, freeable_by_cuMemFree);
    if (range == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (range->pool != NULL)
        sim_pool_free_now(range);
    else
        sim_range_destroy(range);
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT_VARIANT(cuMemFree_v2, (CUdeviceptr dptr), memory_free(dptr))

SIM_EXPORT_VARIANT(cuMemFree, (CUdeviceptr_v1 dptr), memory_free((CUdeviceptr)dptr))

static CUresult memory_info(size_t *free_bytes, size_t *total_bytes)
{
    if (free_bytes == NULL || total_bytes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    *total_bytes = context->device->capacity;
    *free_bytes = context->device->capacity - context->device->physical_bytes;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    SIM_ENTER("cuMemGetInfo_v2");
    return memory_info(free, total);
}

SIM_EXPORT CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    SIM_ENTER("cuMemGetInfo");
    size_t free_bytes, total_bytes;
    if (free == NULL || total == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = memory_info(&free_bytes, &total_bytes);
    if (result == CUDA_SUCCESS) {
        *free = free_bytes > 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned int)free_bytes;
        *total = total_bytes > 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned int)total_bytes;
    }
    return result;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    SIM_ENTER("cuMemGetAddressRange_v2");
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)dptr);
    uintptr_t base = 0;
    size_t size = 0;
    result = CUDA_ERROR_NOT_FOUND;
    if (range != NULL && range->kind != SIM_RANGE_HOST && range->kind != SIM_RANGE_RESERVATION &&
        range->kind != SIM_RANGE_CAPTURED) {
        base = range->base;
        size = range->size;
        result = CUDA_SUCCESS;
    } else if (range != NULL && range->kind == SIM_RANGE_RESERVATION) {
        result = sim_vmm_mapping_range(range, (uintptr_t)dptr, &base, &size);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        return result;
    if (pbase != NULL)
        *pbase = (CUdeviceptr)base;
    if (psize != NULL)
        *psize = size;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                         CUdeviceptr_v1 dptr)
{
    SIM_ENTER("cuMemGetAddressRange");
    (void)pbase;
    (void)psize;
    (void)dptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult allocate_pitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                               size_t Height, unsigned int ElementSizeBytes)
{
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    /* Rows are padded to the texture pitch alignment of the device. */
    size_t pitch = round_up(WidthInBytes, 512);
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = memory_allocate(dptr, pitch * Height);
    if (result == CUDA_SUCCESS)
        *pPitch = pitch;
    return result;
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                       size_t Height, unsigned int ElementSizeBytes)
{
    SIM_ENTER_ALLOCATION("cuMemAllocPitch_v2");
    return allocate_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

SIM_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                    unsigned int WidthInBytes, unsigned int Height,
                                    unsigned int ElementSizeBytes)
{
    SIM_ENTER_ALLOCATION("cuMemAllocPitch");
    (void)dptr;
    (void)pPitch;
    (void)WidthInBytes;
    (void)Height;
    (void)ElementSizeBytes;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- host and managed memory -------------------------------------------- */

static CUresult host_allocate(void **pp, size_t bytesize, unsigned int flags,
                              enum sim_range_kind kind)
{
    if (pp == NULL || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = allocation_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_range *range = sim_range_new(kind, context, context->device);
    if (range == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *base = map_region(bytesize, SIM_SMALL_ALIGNMENT, &range->mapping_size, &range->mapping);
    if (base == NULL) {
        free(range);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    prefer_huge_pages(base, bytesize);
    range->base = (uintptr_t)base;
    range->size = bytesize;
    range->host_flags = flags;
    sim_lock();
    sim_range_insert(range);
    sim_unlock();
    *pp = base;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SIM_ENTER_ALLOCATION("cuMemHostAlloc");
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                           CU_MEMHOSTALLOC_WRITECOMBINED;
    if ((Flags & ~known) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_allocate(pp, bytesize, Flags, SIM_RANGE_HOST);
}

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocHost_v2, (void **pp, size_t bytesize),
                              host_allocate(pp, bytesize, 0, SIM_RANGE_HOST))

SIM_EXPORT_ALLOCATION_VARIANT(cuMemAllocHost, (void **pp, unsigned int bytesize),
                              host_allocate(pp, bytesize, 0, SIM_RANGE_HOST))

/* cuMemHostAlloc memory, as opposed to registered memory, which the program
 * owns. */
static bool allocated_pinned_memory(const struct sim_range *range)
{
    return range->kind == SIM_RANGE_HOST && range->mapping != NULL;
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    SIM_ENTER("cuMemFreeHost");
    struct sim_context *context;
    CUresult result = allocation_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    /* Like cuMemFree, freeing pinned memory waits for work that may use it. */
    struct sim_range *range = sim_range_claim_idle((uintptr_t)p, allocated_pinned_memory);
    if (range == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_range_destroy(range);
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult host_get_device_pointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    if (pdptr == NULL || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)p);
    bool valid = range != NULL && range->kind == SIM_RANGE_HOST;
    sim_unlock();
    if (!valid)
        return CUDA_ERROR_INVALID_VALUE;
    /* Unified addressing: the device sees pinned memory at the host address. */
    *pdptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    SIM_ENTER("cuMemHostGetDevicePointer_v2");
    return host_get_device_pointer(pdptr, p, Flags);
}

SIM_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    SIM_ENTER("cuMemHostGetFlags");
    if (pFlags == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)p);
    bool valid = range != NULL && range->kind == SIM_RANGE_HOST;
    if (valid)
        *pFlags = range->host_flags;
    sim_unlock();
    return valid ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SIM_ENTER_ALLOCATION("cuMemAllocManaged");
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    void *pointer;
    /* Managed memory migrates on demand and may oversubscribe the device, so
     * it is not charged against the capacity. */
    CUresult result = host_allocate(&pointer, bytesize, flags, SIM_RANGE_MANAGED);
    if (result == CUDA_SUCCESS && dptr != NULL)
        *dptr = (CUdeviceptr)pointer;
    return result;
}

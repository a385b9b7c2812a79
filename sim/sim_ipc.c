/* Inter-process memory handles and host-memory registration. An exported
 * allocation is moved onto a memfd (keeping its contents); another process
 * maps that memfd through /proc/<pid>/fd, so both see the same bytes, as
 * with CUDA IPC. */
#include "sim_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char ipc_magic[8] = "gpusim1";

struct ipc_handle_contents {
    char magic[8];
    int pid;
    int fd;
    unsigned long long size;
    unsigned long long buffer_id;
};
_Static_assert(sizeof(struct ipc_handle_contents) <= CU_IPC_HANDLE_SIZE, "IPC handle too small");

/* Replaces the anonymous pages of a device allocation with a memfd mapping
 * holding the same data. Under sim.lock, with the allocation idle. */
static bool make_shareable(struct sim_range *range)
{
    if (range->shared_fd >= 0)
        return true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t usable = (range->size + page - 1) / page * page;
    int fd = memfd_create("gpusim-ipc", MFD_CLOEXEC);
    if (fd < 0)
        return false;
    if (ftruncate(fd, (off_t)usable) != 0) {
        close(fd);
        return false;
    }
    /* Copy only pages that were ever touched: the rest read as zero in both
     * and copying them would commit the whole allocation. mincore reports
     * swapped-out pages as absent, so on a swapping host their contents
     * would be lost; test machines are not expected to swap. */
    size_t pages = usable / page;
    unsigned char *resident = malloc(pages);
    if (resident == NULL || mincore((void *)range->base, usable, resident) != 0) {
        free(resident);
        close(fd);
        return false;
    }
    for (size_t i = 0; i < pages; i++) {
        if (!(resident[i] & 1))
            continue;
        if (pwrite(fd, (char *)range->base + i * page, page, (off_t)(i * page)) != (ssize_t)page) {
            free(resident);
            close(fd);
            return false;
        }
    }
    free(resident);
    if (mmap((void *)range->base, usable, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        close(fd);
        return false;
    }
    range->shared_fd = fd;
    return true;
}

/* Only cuMemAlloc memory has legacy IPC handles. */
static bool exportable_allocation(const struct sim_range *range)
{
    return range->kind == SIM_RANGE_DEVICE;
}

SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    SIM_ENTER("cuIpcGetMemHandle");
    if (pHandle == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    /* Queued copies may still write the allocation while it moves. */
    struct sim_range *range = sim_range_claim_idle((uintptr_t)dptr, exportable_allocation);
    if (range == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!make_shareable(range))
        result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        struct ipc_handle_contents contents = {.pid = getpid(),
                                               .fd = range->shared_fd,
                                               .size = range->size,
                                               .buffer_id = range->buffer_id};
        memcpy(contents.magic, ipc_magic, sizeof contents.magic);
        memset(pHandle, 0, sizeof *pHandle);
        memcpy(pHandle->reserved, &contents, sizeof contents);
    }
    sim_unlock();
    return result;
}

static bool find_import(struct sim_range *range, void *key)
{
    struct ipc_handle_contents *contents = key;
    if (range->kind == SIM_RANGE_IPC_IMPORT && range->buffer_id == contents->buffer_id &&
        range->host_flags == (unsigned)contents->pid) {
        contents->fd = -1; /* found: report through the key */
        contents->size = range->base;
        return false;
    }
    return true;
}

static CUresult open_memory_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    if (pdptr == NULL || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_handle_contents contents;
    memcpy(&contents, handle.reserved, sizeof contents);
    if (memcmp(contents.magic, ipc_magic, sizeof ipc_magic) != 0 || contents.size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* Like the driver, a process cannot open its own handles. */
    if (contents.pid == getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct ipc_handle_contents key = contents;
    sim_range_foreach(find_import, &key);
    if (key.fd == -1) {
        /* Opened before in this process: the same mapping, one more user. */
        struct sim_range *existing = sim_range_find((uintptr_t)key.size);
        existing->ipc_open_count++;
        *pdptr = (CUdeviceptr)existing->base;
        sim_unlock();
        return CUDA_SUCCESS;
    }
    sim_unlock();
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", contents.pid, contents.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_range *range = sim_range_new(SIM_RANGE_IPC_IMPORT, context, context->device);
    void *mapping = MAP_FAILED;
    if (range != NULL)
        mapping = mmap(NULL, contents.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapping == MAP_FAILED) {
        free(range);
        close(fd);
        return CUDA_ERROR_MAP_FAILED;
    }
    range->base = (uintptr_t)mapping;
    range->size = contents.size;
    range->mapping = mapping;
    range->mapping_size = contents.size;
    range->shared_fd = fd;
    range->buffer_id = contents.buffer_id;
    range->host_flags = (unsigned)contents.pid;
    range->ipc_open_count = 1;
    sim_lock();
    sim_range_insert(range);
    sim_unlock();
    *pdptr = (CUdeviceptr)range->base;
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2,
                         (CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags),
                         open_memory_handle(pdptr, handle, Flags))

SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    SIM_ENTER("cuIpcCloseMemHandle");
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)dptr);
    if (range == NULL || range->kind != SIM_RANGE_IPC_IMPORT || range->base != (uintptr_t)dptr) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (--range->ipc_open_count == 0)
        sim_range_destroy(range);
    sim_unlock();
    return CUDA_SUCCESS;
}

/* ---- host registration -------------------------------------------------- */

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == NULL || bytesize == 0 || (Flags & ~known) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    /* No mapping: the memory stays the caller's. */
    struct sim_range *range = sim_range_new(SIM_RANGE_HOST, context, context->device);
    if (range == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    range->base = (uintptr_t)p;
    range->size = bytesize;
    range->host_flags = Flags;
    sim_lock();
    bool overlaps = sim_range_find(range->base) != NULL ||
                    sim_range_find(range->base + bytesize - 1) != NULL;
    if (!overlaps)
        sim_range_insert(range);
    sim_unlock();
    if (overlaps) {
        free(range);
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuMemHostRegister, cuMemHostRegister_v2,
                         (void *p, size_t bytesize, unsigned int Flags),
                         host_register(p, bytesize, Flags))

SIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    SIM_ENTER("cuMemHostUnregister");
    sim_lock();
    struct sim_range *range = sim_range_find((uintptr_t)p);
    bool registered = range != NULL && range->kind == SIM_RANGE_HOST && range->mapping == NULL &&
                      range->base == (uintptr_t)p;
    if (registered)
        sim_range_destroy(range);
    sim_unlock();
    return registered ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* Copies and memsets, synchronous and asynchronous. Every one is an item in
 * a stream; the synchronous forms follow CUDA's host-synchronization rules:
 * copies that involve host memory return when done, device-to-device copies
 * and memsets of device memory return at once. */
#include "sim_internal.h"

static bool range_is_device_memory(struct sim_range *range)
{
    return range->kind == SIM_RANGE_DEVICE || range->kind == SIM_RANGE_POOL ||
           range->kind == SIM_RANGE_MANAGED || range->kind == SIM_RANGE_HOST ||
           range->kind == SIM_RANGE_IPC_IMPORT;
}

/* The ordinal of the current context's device; -1 without a context. */
static int current_device_ordinal(void)
{
    struct sim_context *context = sim_current_context();
    sim_lock();
    int ordinal = context != NULL && sim_handle_is_live(context, SIM_HANDLE_CONTEXT)
                      ? context->device->ordinal
                      : -1;
    sim_unlock();
    return ordinal;
}

/* `accessor`: the device whose access a VMM mapping must grant; -1: any. */
static bool address_accessible(uintptr_t address, size_t size, int accessor)
{
    sim_lock();
    struct sim_range *range = sim_range_find(address);
    bool accessible = false;
    if (range != NULL && range->kind == SIM_RANGE_RESERVATION)
        accessible = sim_vmm_is_accessible_by(address, size, accessor, NULL);
    else if (range != NULL && (range_is_device_memory(range) ||
                               (range->kind == SIM_RANGE_CAPTURED &&
                                sim_captured_range_usable(range))))
        accessible = size <= range->size - (address - range->base);
    sim_unlock();
    return accessible;
}

bool sim_address_is_device_accessible(uintptr_t address, size_t size)
{
    return address_accessible(address, size, current_device_ordinal());
}

/* True for device-resident memory (device, pool, managed, IPC or mapped
 * VMM), as opposed to host memory, pinned or not. */
static bool is_device_resident(uintptr_t address)
{
    sim_lock();
    struct sim_range *range = sim_range_find(address);
    bool host = range != NULL && range->kind == SIM_RANGE_HOST;
    sim_unlock();
    return !host && address_accessible(address, 1, -1);
}

/* How a copy or memset treats the calling host thread. */
enum host_synchronization {
    ASYNCHRONOUS_API,    /* the *Async forms: queue and return */
    SYNCHRONOUS_BLOCKING, /* a synchronous form involving host memory: wait */
    SYNCHRONOUS_DEVICE,  /* a synchronous form on device memory only: returns at once */
};

static CUresult copy(uintptr_t destination, uintptr_t source, size_t bytes, bool destination_device,
                     bool source_device, CUstream stream, bool per_thread_default,
                     enum host_synchronization synchronization)
{
    if (synchronization != ASYNCHRONOUS_API) {
        CUresult unsafe = sim_capture_check_unsafe_call();
        if (unsafe != CUDA_SUCCESS)
            return unsafe;
    }
    if (bytes == 0)
        return CUDA_SUCCESS;
    if ((destination_device && !sim_address_is_device_accessible(destination, bytes)) ||
        (source_device && !sim_address_is_device_accessible(source, bytes)) ||
        (!destination_device && destination == 0) || (!source_device && source == 0))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_COPY};
    work.u.copy.destination = (char *)destination;
    work.u.copy.source = (const char *)source;
    work.u.copy.bytes = bytes;
    work.u.copy.height = 1;
    return sim_stream_run(stream, per_thread_default, &work,
                          synchronization == SYNCHRONOUS_BLOCKING);
}

/* cuMemcpy with unified addressing: the kind of each side comes from the
 * pointer; a copy between two device buffers does not block the host. */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                             bool per_thread_default, bool asynchronous)
{
    bool destination_device = is_device_resident((uintptr_t)dst);
    bool source_device = is_device_resident((uintptr_t)src);
    enum host_synchronization synchronization =
        asynchronous                            ? ASYNCHRONOUS_API
        : destination_device && source_device ? SYNCHRONOUS_DEVICE
                                                : SYNCHRONOUS_BLOCKING;
    return copy((uintptr_t)dst, (uintptr_t)src, bytes, destination_device, source_device, stream,
                per_thread_default, synchronization);
}

/* What a NULL stream means in the entry point. */
#define LEGACY_DEFAULT_STREAM false
#define PER_THREAD_DEFAULT_STREAM true

SIM_EXPORT_VARIANT(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
                   unified_copy(dst, src, ByteCount, NULL, LEGACY_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
                   unified_copy(dst, src, ByteCount, NULL, PER_THREAD_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpyAsync,
                   (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
                   unified_copy(dst, src, ByteCount, hStream, LEGACY_DEFAULT_STREAM, true))

SIM_EXPORT_VARIANT(cuMemcpyAsync_ptsz,
                   (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
                   unified_copy(dst, src, ByteCount, hStream, PER_THREAD_DEFAULT_STREAM, true))

SIM_EXPORT_VARIANT(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, NULL,
                        LEGACY_DEFAULT_STREAM, SYNCHRONOUS_BLOCKING))

SIM_EXPORT_VARIANT(cuMemcpyHtoD_v2_ptds,
                   (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, NULL,
                        PER_THREAD_DEFAULT_STREAM, SYNCHRONOUS_BLOCKING))

SIM_EXPORT_VARIANT(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
                   copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, NULL,
                        LEGACY_DEFAULT_STREAM, SYNCHRONOUS_BLOCKING))

SIM_EXPORT_VARIANT(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
                   copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, NULL,
                        PER_THREAD_DEFAULT_STREAM, SYNCHRONOUS_BLOCKING))

SIM_EXPORT_VARIANT(cuMemcpyDtoD_v2,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, NULL,
                        LEGACY_DEFAULT_STREAM, SYNCHRONOUS_DEVICE))

SIM_EXPORT_VARIANT(cuMemcpyDtoD_v2_ptds,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, NULL,
                        PER_THREAD_DEFAULT_STREAM, SYNCHRONOUS_DEVICE))

SIM_EXPORT_VARIANT(cuMemcpyHtoDAsync_v2,
                   (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, hStream,
                        LEGACY_DEFAULT_STREAM, ASYNCHRONOUS_API))

SIM_EXPORT_VARIANT(cuMemcpyHtoDAsync_v2_ptsz,
                   (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, hStream,
                        PER_THREAD_DEFAULT_STREAM, ASYNCHRONOUS_API))

SIM_EXPORT_VARIANT(cuMemcpyDtoHAsync_v2,
                   (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
                   copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, hStream,
                        LEGACY_DEFAULT_STREAM, ASYNCHRONOUS_API))

SIM_EXPORT_VARIANT(cuMemcpyDtoHAsync_v2_ptsz,
                   (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
                   copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, hStream,
                        PER_THREAD_DEFAULT_STREAM, ASYNCHRONOUS_API))

SIM_EXPORT_VARIANT(cuMemcpyDtoDAsync_v2,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                    CUstream hStream),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, hStream,
                        LEGACY_DEFAULT_STREAM, ASYNCHRONOUS_API))

SIM_EXPORT_VARIANT(cuMemcpyDtoDAsync_v2_ptsz,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                    CUstream hStream),
                   copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, hStream,
                        PER_THREAD_DEFAULT_STREAM, ASYNCHRONOUS_API))

static CUresult peer_copy(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                          CUcontext srcContext, size_t bytes, CUstream stream,
                          bool per_thread_default, bool asynchronous)
{
    sim_lock();
    bool valid = sim_handle_is_live(dstContext, SIM_HANDLE_CONTEXT) &&
                 sim_handle_is_live(srcContext, SIM_HANDLE_CONTEXT);
    sim_unlock();
    if (!valid)
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy((uintptr_t)dst, (uintptr_t)src, bytes, true, true, stream, per_thread_default,
                asynchronous ? ASYNCHRONOUS_API : SYNCHRONOUS_BLOCKING);
}

SIM_EXPORT_VARIANT(cuMemcpyPeer,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount),
                   peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
                             LEGACY_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpyPeer_ptds,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount),
                   peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
                             PER_THREAD_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpyPeerAsync,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount, CUstream hStream),
                   peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                             LEGACY_DEFAULT_STREAM, true))

SIM_EXPORT_VARIANT(cuMemcpyPeerAsync_ptsz,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount, CUstream hStream),
                   peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                             PER_THREAD_DEFAULT_STREAM, true))

/* ---- 2D copies ---------------------------------------------------------- */

struct copy_side {
    uintptr_t start;
    size_t pitch;
    bool device;
};

/* Start address and kind of one side of a CUDA_MEMCPY2D. */
static CUresult copy_side(CUmemorytype type, const void *host, CUdeviceptr device, CUarray array,
                          size_t x, size_t y, size_t pitch, struct copy_side *side)
{
    (void)array;
    uintptr_t base;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        base = (uintptr_t)host;
        side->device = false;
        break;
    case CU_MEMORYTYPE_DEVICE:
        base = (uintptr_t)device;
        side->device = true;
        break;
    case CU_MEMORYTYPE_UNIFIED:
        base = (uintptr_t)device;
        side->device = is_device_resident(base);
        break;
    case CU_MEMORYTYPE_ARRAY:
        return CUDA_ERROR_NOT_SUPPORTED; /* CUDA arrays are not simulated */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (base == 0)
        return CUDA_ERROR_INVALID_VALUE;
    side->start = base + y * pitch + x;
    side->pitch = pitch;
    return CUDA_SUCCESS;
}

static CUresult copy_2d(const CUDA_MEMCPY2D *pCopy, CUstream stream, bool per_thread_default,
                        bool asynchronous)
{
    if (pCopy == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct copy_side source, destination;
    CUresult result = copy_side(pCopy->srcMemoryType, pCopy->srcHost, pCopy->srcDevice,
                                pCopy->srcArray, pCopy->srcXInBytes, pCopy->srcY, pCopy->srcPitch,
                                &source);
    if (result == CUDA_SUCCESS)
        result = copy_side(pCopy->dstMemoryType, pCopy->dstHost, pCopy->dstDevice,
                           pCopy->dstArray, pCopy->dstXInBytes, pCopy->dstY, pCopy->dstPitch,
                           &destination);
    if (result != CUDA_SUCCESS)
        return result;
    size_t width = pCopy->WidthInBytes, height = pCopy->Height;
    if (height > 1 && (source.pitch < width || destination.pitch < width))
        return CUDA_ERROR_INVALID_VALUE;
    enum host_synchronization synchronization =
        asynchronous                            ? ASYNCHRONOUS_API
        : source.device && destination.device ? SYNCHRONOUS_DEVICE
                                                : SYNCHRONOUS_BLOCKING;
    if (synchronization != ASYNCHRONOUS_API) {
        result = sim_capture_check_unsafe_call();
        if (result != CUDA_SUCCESS)
            return result;
    }
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    size_t source_extent = (height - 1) * source.pitch + width;
    size_t destination_extent = (height - 1) * destination.pitch + width;
    if ((source.device && !sim_address_is_device_accessible(source.start, source_extent)) ||
        (destination.device &&
         !sim_address_is_device_accessible(destination.start, destination_extent)))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_COPY};
    work.u.copy.destination = (char *)destination.start;
    work.u.copy.source = (const char *)source.start;
    work.u.copy.bytes = width;
    work.u.copy.height = height;
    work.u.copy.destination_pitch = destination.pitch;
    work.u.copy.source_pitch = source.pitch;
    return sim_stream_run(stream, per_thread_default, &work,
                          synchronization == SYNCHRONOUS_BLOCKING);
}

SIM_EXPORT_VARIANT(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy),
                   copy_2d(pCopy, NULL, LEGACY_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy),
                   copy_2d(pCopy, NULL, PER_THREAD_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy),
                   copy_2d(pCopy, NULL, LEGACY_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy),
                   copy_2d(pCopy, NULL, PER_THREAD_DEFAULT_STREAM, false))

SIM_EXPORT_VARIANT(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
                   copy_2d(pCopy, hStream, LEGACY_DEFAULT_STREAM, true))

SIM_EXPORT_VARIANT(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
                   copy_2d(pCopy, hStream, PER_THREAD_DEFAULT_STREAM, true))

/* ---- memset ------------------------------------------------------------- */

static CUresult memset_2d(CUdeviceptr destination, size_t pitch, unsigned value,
                          unsigned element_size, size_t width, size_t height, CUstream stream,
                          bool per_thread_default, enum host_synchronization synchronization)
{
    if (synchronization != ASYNCHRONOUS_API) {
        CUresult unsafe = sim_capture_check_unsafe_call();
        if (unsafe != CUDA_SUCCESS)
            return unsafe;
    }
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    size_t row_bytes = width * element_size;
    if (row_bytes / element_size != width || (height > 1 && pitch < row_bytes) ||
        destination % element_size != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t extent = (height - 1) * pitch + row_bytes;
    if (!sim_address_is_device_accessible((uintptr_t)destination, extent))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_SET};
    work.u.set.destination = (uintptr_t)destination;
    work.u.set.value = value;
    work.u.set.element_size = element_size;
    work.u.set.width = width;
    work.u.set.height = height;
    work.u.set.pitch = height > 1 ? pitch : row_bytes;
    /* A synchronous memset of device memory does not block the host; one of
     * pinned host memory does. */
    bool blocks = synchronization != ASYNCHRONOUS_API && !is_device_resident((uintptr_t)destination);
    return sim_stream_run(stream, per_thread_default, &work, blocks);
}

#define MEMSET_1D(name, type, size, per_thread)                                                \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, type value, size_t N)                      \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, 0, value, size, N, 1, NULL, per_thread,                    \
                         SYNCHRONOUS_DEVICE);                                                  \
    }
#define MEMSET_1D_ASYNC(name, type, size, per_thread)                                          \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, type value, size_t N, CUstream hStream)    \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, 0, value, size, N, 1, hStream, per_thread,                 \
                         ASYNCHRONOUS_API);                                                    \
    }
#define MEMSET_2D(name, type, size, per_thread)                                                \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, \
                             size_t Height)                                                    \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, dstPitch, value, size, Width, Height, NULL, per_thread,    \
                         SYNCHRONOUS_DEVICE);                                                  \
    }
#define MEMSET_2D_ASYNC(name, type, size, per_thread)                                          \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, \
                             size_t Height, CUstream hStream)                                  \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, dstPitch, value, size, Width, Height, hStream, per_thread, \
                         ASYNCHRONOUS_API);                                                    \
    }

MEMSET_1D(cuMemsetD8_v2, unsigned char, 1, false)
MEMSET_1D(cuMemsetD8_v2_ptds, unsigned char, 1, true)
MEMSET_1D(cuMemsetD16_v2, unsigned short, 2, false)
MEMSET_1D(cuMemsetD16_v2_ptds, unsigned short, 2, true)
MEMSET_1D(cuMemsetD32_v2, unsigned int, 4, false)
MEMSET_1D(cuMemsetD32_v2_ptds, unsigned int, 4, true)
MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1, false)
MEMSET_1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, true)
MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2, false)
MEMSET_1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, true)
MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4, false)
MEMSET_1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, true)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1, false)
MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2, false)
MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4, false)
MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, false)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, false)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, false)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)

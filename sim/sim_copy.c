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

bool sim_address_is_device_accessible(uintptr_t address, size_t size)
{
    sim_lock();
    struct sim_range *range = sim_range_find(address);
    bool accessible = false;
    if (range != NULL && range->kind == SIM_RANGE_RESERVATION)
        accessible = sim_vmm_is_accessible(address, size, NULL);
    else if (range != NULL && range_is_device_memory(range))
        accessible = size <= range->size - (address - range->base);
    sim_unlock();
    return accessible;
}

/* True when the address is memory the driver handed out (device, pinned,
 * managed or mapped VMM) rather than ordinary pageable host memory. */
static bool is_driver_memory(uintptr_t address)
{
    return sim_address_is_device_accessible(address, 1);
}

static CUresult copy(uintptr_t destination, uintptr_t source, size_t bytes, bool destination_device,
                     bool source_device, CUstream stream, bool per_thread_default, bool synchronous)
{
    if (bytes == 0)
        return CUDA_SUCCESS;
    if ((destination_device && !sim_address_is_device_accessible(destination, bytes)) ||
        (source_device && !sim_address_is_device_accessible(source, bytes)) ||
        (!destination_device && destination == 0) || (!source_device && source == 0))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_COPY};
    work.u.copy.destination = (void *)destination;
    work.u.copy.source = (const void *)source;
    work.u.copy.bytes = bytes;
    return sim_stream_run(stream, per_thread_default, &work, synchronous);
}

/* cuMemcpy with unified addressing: the kind of each side comes from the
 * pointer; a copy between two device buffers does not block the host. */
static CUresult unified_copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                             bool per_thread_default, bool asynchronous)
{
    bool destination_device = is_driver_memory((uintptr_t)dst);
    bool source_device = is_driver_memory((uintptr_t)src);
    bool synchronous = !asynchronous && !(destination_device && source_device);
    return copy((uintptr_t)dst, (uintptr_t)src, bytes, destination_device, source_device, stream,
                per_thread_default, synchronous);
}

#define SYNC_LEGACY false
#define SYNC_PER_THREAD true

SIM_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    SIM_ENTER("cuMemcpy");
    return unified_copy(dst, src, ByteCount, NULL, SYNC_LEGACY, false);
}

SIM_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    SIM_ENTER("cuMemcpy_ptds");
    return unified_copy(dst, src, ByteCount, NULL, SYNC_PER_THREAD, false);
}

SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                  CUstream hStream)
{
    SIM_ENTER("cuMemcpyAsync");
    return unified_copy(dst, src, ByteCount, hStream, SYNC_LEGACY, true);
}

SIM_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                       CUstream hStream)
{
    SIM_ENTER("cuMemcpyAsync_ptsz");
    return unified_copy(dst, src, ByteCount, hStream, SYNC_PER_THREAD, true);
}

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    SIM_ENTER("cuMemcpyHtoD_v2");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, NULL,
                SYNC_LEGACY, true);
}

SIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                         size_t ByteCount)
{
    SIM_ENTER("cuMemcpyHtoD_v2_ptds");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, NULL,
                SYNC_PER_THREAD, true);
}

SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    SIM_ENTER("cuMemcpyDtoH_v2");
    return copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, NULL,
                SYNC_LEGACY, true);
}

SIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    SIM_ENTER("cuMemcpyDtoH_v2_ptds");
    return copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, NULL,
                SYNC_PER_THREAD, true);
}

SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    SIM_ENTER("cuMemcpyDtoD_v2");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, NULL,
                SYNC_LEGACY, false);
}

SIM_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                         size_t ByteCount)
{
    SIM_ENTER("cuMemcpyDtoD_v2_ptds");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, NULL,
                SYNC_PER_THREAD, false);
}

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                         size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyHtoDAsync_v2");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, hStream,
                SYNC_LEGACY, false);
}

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                              size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyHtoDAsync_v2_ptsz");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcHost, ByteCount, true, false, hStream,
                SYNC_PER_THREAD, false);
}

SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                         CUstream hStream)
{
    SIM_ENTER("cuMemcpyDtoHAsync_v2");
    return copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, hStream,
                SYNC_LEGACY, false);
}

SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                              size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyDtoHAsync_v2_ptsz");
    return copy((uintptr_t)dstHost, (uintptr_t)srcDevice, ByteCount, false, true, hStream,
                SYNC_PER_THREAD, false);
}

SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                         size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyDtoDAsync_v2");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, hStream,
                SYNC_LEGACY, false);
}

SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                              size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyDtoDAsync_v2_ptsz");
    return copy((uintptr_t)dstDevice, (uintptr_t)srcDevice, ByteCount, true, true, hStream,
                SYNC_PER_THREAD, false);
}

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
                !asynchronous);
}

SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                                 CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    SIM_ENTER("cuMemcpyPeer");
    return peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, SYNC_LEGACY,
                     false);
}

SIM_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                      CUdeviceptr srcDevice, CUcontext srcContext,
                                      size_t ByteCount)
{
    SIM_ENTER("cuMemcpyPeer_ptds");
    return peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
                     SYNC_PER_THREAD, false);
}

SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                      CUdeviceptr srcDevice, CUcontext srcContext,
                                      size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyPeerAsync");
    return peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                     SYNC_LEGACY, true);
}

SIM_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                           CUdeviceptr srcDevice, CUcontext srcContext,
                                           size_t ByteCount, CUstream hStream)
{
    SIM_ENTER("cuMemcpyPeerAsync_ptsz");
    return peer_copy(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                     SYNC_PER_THREAD, true);
}

/* ---- memset ------------------------------------------------------------- */

static CUresult memset_2d(CUdeviceptr destination, size_t pitch, unsigned value,
                          unsigned element_size, size_t width, size_t height, CUstream stream,
                          bool per_thread_default, bool synchronous)
{
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
    /* A synchronous memset of device memory still does not block the host. */
    (void)synchronous;
    return sim_stream_run(stream, per_thread_default, &work, false);
}

#define MEMSET_1D(name, type, size, per_thread)                                                \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, type value, size_t N)                      \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        CUresult unsafe = sim_capture_check_unsafe_call();                                     \
        if (unsafe != CUDA_SUCCESS)                                                            \
            return unsafe;                                                                     \
        return memset_2d(dstDevice, 0, value, size, N, 1, NULL, per_thread, true);             \
    }
#define MEMSET_1D_ASYNC(name, type, size, per_thread)                                          \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, type value, size_t N, CUstream hStream)    \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, 0, value, size, N, 1, hStream, per_thread, false);         \
    }
#define MEMSET_2D(name, type, size, per_thread)                                                \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, \
                             size_t Height)                                                    \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        CUresult unsafe = sim_capture_check_unsafe_call();                                     \
        if (unsafe != CUDA_SUCCESS)                                                            \
            return unsafe;                                                                     \
        return memset_2d(dstDevice, dstPitch, value, size, Width, Height, NULL, per_thread,    \
                         true);                                                                \
    }
#define MEMSET_2D_ASYNC(name, type, size, per_thread)                                          \
    SIM_EXPORT CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, \
                             size_t Height, CUstream hStream)                                  \
    {                                                                                          \
        SIM_ENTER(#name);                                                                      \
        return memset_2d(dstDevice, dstPitch, value, size, Width, Height, hStream, per_thread, \
                         false);                                                               \
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

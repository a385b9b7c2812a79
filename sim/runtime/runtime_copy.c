/* Copies and fills, synchronous and stream-ordered. The copy direction picks
 * the driver call (HtoD, DtoH, DtoD, or the unified cuMemcpy for
 * cudaMemcpyDefault and host-to-host); the default-stream flavour picks the
 * legacy or the per-thread (_ptds/_ptsz) variant of it. */
#include <stdint.h>
#include <string.h>

#include "runtime_driver.h"

static CUdeviceptr device_address(const void *pointer)
{
    return (CUdeviceptr)(uintptr_t)pointer;
}

static int copy_kind_is_valid(enum cudaMemcpyKind kind)
{
    return kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice ||
           kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
           kind == cudaMemcpyDefault;
}

/* One linear copy; a NULL stream means the synchronous driver call. */
static cudaError_t copy_linear(void *destination, const void *source, size_t count, enum cudaMemcpyKind kind,
                               const cudaStream_t *stream, enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (!copy_kind_is_valid(kind))
        return sim_runtime_record(cudaErrorInvalidMemcpyDirection);
    if (count == 0)
        return cudaSuccess;
    const struct sim_runtime_stream_entry_points *calls = sim_runtime_stream_entry_points(default_stream);
    CUdeviceptr to = device_address(destination), from = device_address(source);
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemcpyHtoDAsync, to, source, count, *stream)
                              : SIM_RUNTIME_CALL(calls->cuMemcpyHtoD, to, source, count);
    case cudaMemcpyDeviceToHost:
        return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemcpyDtoHAsync, destination, from, count, *stream)
                              : SIM_RUNTIME_CALL(calls->cuMemcpyDtoH, destination, from, count);
    case cudaMemcpyDeviceToDevice:
        return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemcpyDtoDAsync, to, from, count, *stream)
                              : SIM_RUNTIME_CALL(calls->cuMemcpyDtoD, to, from, count);
    default:
        return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemcpyAsync, to, from, count, *stream)
                              : SIM_RUNTIME_CALL(calls->cuMemcpy, to, from, count);
    }
}

cudaError_t sim_runtime_memcpy(void *destination, const void *source, size_t count,
                               enum cudaMemcpyKind kind, enum sim_runtime_default_stream default_stream)
{
    return copy_linear(destination, source, count, kind, NULL, default_stream);
}

cudaError_t sim_runtime_memcpy_async(void *destination, const void *source, size_t count,
                                     enum cudaMemcpyKind kind, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream)
{
    return copy_linear(destination, source, count, kind, &stream, default_stream);
}

/* Fills one side of a 2D copy descriptor from a pointer and the copy kind. */
static void describe_2d_side(int is_device, int is_unified, const void *pointer, CUmemorytype *type,
                             const void **host, CUdeviceptr *device)
{
    if (is_unified) {
        *type = CU_MEMORYTYPE_UNIFIED;
        *device = device_address(pointer);
    } else if (is_device) {
        *type = CU_MEMORYTYPE_DEVICE;
        *device = device_address(pointer);
    } else {
        *type = CU_MEMORYTYPE_HOST;
        *host = pointer;
    }
}

static cudaError_t describe_2d_copy(CUDA_MEMCPY2D *copy, void *destination, size_t destination_pitch,
                                   const void *source, size_t source_pitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind)
{
    if (!copy_kind_is_valid(kind))
        return cudaErrorInvalidMemcpyDirection;
    if (width > destination_pitch || width > source_pitch)
        return cudaErrorInvalidPitchValue;
    memset(copy, 0, sizeof *copy);
    int unified = kind == cudaMemcpyDefault;
    int source_on_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    int destination_on_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const void *destination_host = NULL;
    describe_2d_side(source_on_device, unified, source, &copy->srcMemoryType, &copy->srcHost,
                     &copy->srcDevice);
    describe_2d_side(destination_on_device, unified, destination, &copy->dstMemoryType,
                     &destination_host, &copy->dstDevice);
    copy->dstHost = (void *)(uintptr_t)destination_host;
    copy->srcPitch = source_pitch;
    copy->dstPitch = destination_pitch;
    copy->WidthInBytes = width;
    copy->Height = height;
    return cudaSuccess;
}

/* One 2D copy; a NULL stream means the synchronous driver call. */
static cudaError_t copy_2d(void *destination, size_t destination_pitch, const void *source, size_t source_pitch,
                           size_t width, size_t height, enum cudaMemcpyKind kind, const cudaStream_t *stream,
                           enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    CUDA_MEMCPY2D copy;
    cudaError_t status = describe_2d_copy(&copy, destination, destination_pitch, source, source_pitch,
                                          width, height, kind);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    if (width == 0 || height == 0)
        return cudaSuccess;
    const struct sim_runtime_stream_entry_points *calls = sim_runtime_stream_entry_points(default_stream);
    return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemcpy2DAsync, &copy, *stream)
                          : SIM_RUNTIME_CALL(calls->cuMemcpy2DUnaligned, &copy);
}

cudaError_t sim_runtime_memcpy_2d(void *destination, size_t destination_pitch, const void *source,
                                  size_t source_pitch, size_t width, size_t height,
                                  enum cudaMemcpyKind kind, enum sim_runtime_default_stream default_stream)
{
    return copy_2d(destination, destination_pitch, source, source_pitch, width, height, kind, NULL,
                   default_stream);
}

cudaError_t sim_runtime_memcpy_2d_async(void *destination, size_t destination_pitch,
                                        const void *source, size_t source_pitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream,
                                        enum sim_runtime_default_stream default_stream)
{
    return copy_2d(destination, destination_pitch, source, source_pitch, width, height, kind, &stream,
                   default_stream);
}

/* One fill; a NULL stream means the synchronous driver call. */
static cudaError_t fill(void *destination, int value, size_t count, const cudaStream_t *stream,
                        enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (count == 0)
        return cudaSuccess;
    const struct sim_runtime_stream_entry_points *calls = sim_runtime_stream_entry_points(default_stream);
    CUdeviceptr to = device_address(destination);
    return stream != NULL ? SIM_RUNTIME_CALL(calls->cuMemsetD8Async, to, (unsigned char)value, count, *stream)
                          : SIM_RUNTIME_CALL(calls->cuMemsetD8, to, (unsigned char)value, count);
}

cudaError_t sim_runtime_memset(void *destination, int value, size_t count,
                               enum sim_runtime_default_stream default_stream)
{
    return fill(destination, value, count, NULL, default_stream);
}

cudaError_t sim_runtime_memset_async(void *destination, int value, size_t count, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream)
{
    return fill(destination, value, count, &stream, default_stream);
}

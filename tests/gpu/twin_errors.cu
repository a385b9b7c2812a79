// Twin of the error-code checks in tests/sim: the codes the driver returns
// for bad arguments, exhausted memory and calls made during stream capture.
#include "twin_driver.h"

int main()
{
    twin_start();
    PFN_cuMemAlloc_v3020 allocate = TWIN_ENTRY(cuMemAlloc, 3020);
    PFN_cuMemFree_v3020 release = TWIN_ENTRY(cuMemFree, 3020);
    PFN_cuMemGetInfo_v3020 memory_info = TWIN_ENTRY(cuMemGetInfo, 3020);
    PFN_cuMemGetAddressRange_v3020 address_range = TWIN_ENTRY(cuMemGetAddressRange, 3020);
    PFN_cuStreamCreate_v2000 stream_create = TWIN_ENTRY(cuStreamCreate, 2000);
    PFN_cuStreamBeginCapture_v10010 begin_capture = TWIN_ENTRY(cuStreamBeginCapture, 10010);
    PFN_cuStreamEndCapture_v10000 end_capture = TWIN_ENTRY(cuStreamEndCapture, 10000);
    PFN_cuStreamIsCapturing_v10000 is_capturing = TWIN_ENTRY(cuStreamIsCapturing, 10000);
    PFN_cuCtxSynchronize_v2000 synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);

    CUdeviceptr pointer, base;
    size_t size, free_bytes, total;
    TWIN_EXPECT(allocate(&pointer, 0), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(memory_info(&free_bytes, &total));
    TWIN_EXPECT(allocate(&pointer, total + ((size_t)1 << 30)), CUDA_ERROR_OUT_OF_MEMORY);
    TWIN_OK(allocate(&pointer, 10000));
    TWIN_CHECK(pointer % 512 == 0);
    TWIN_OK(address_range(&base, &size, pointer + 100));
    TWIN_CHECK(base == pointer && size == 10000);
    TWIN_EXPECT(release(pointer + 512), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(release(pointer));

    CUstream stream;
    TWIN_OK(stream_create(&stream, CU_STREAM_NON_BLOCKING));
    TWIN_EXPECT(begin_capture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    TWIN_OK(begin_capture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status;
    TWIN_OK(is_capturing(stream, &status));
    TWIN_CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    TWIN_EXPECT(synchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    TWIN_OK(is_capturing(stream, &status));
    TWIN_CHECK(status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph graph;
    TWIN_EXPECT(end_capture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    TWIN_OK(allocate(&pointer, 4096));
    TWIN_OK(release(pointer));
    return twin_finish("twin_errors");
}

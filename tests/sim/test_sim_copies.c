/* Copies and memsets on the simulated driver: synchronous and asynchronous
 * forms, bounds checks, and 2D copies with pitches. */
#include <string.h>

#include "sim_test_support.h"

Test(copies, synchronous_copies_and_memsets)
{
    start_device(0);
    CUdeviceptr a, b;
    EXPECT_OK(cuMemAlloc(&a, 1 << 16));
    EXPECT_OK(cuMemAlloc(&b, 1 << 16));
    EXPECT_OK(cuMemsetD16(a, 0xBEEF, 1 << 15));
    EXPECT_OK(cuMemcpyDtoD(b, a, 1 << 16));
    unsigned short host[8];
    EXPECT_OK(cuMemcpyDtoH(host, b + 64, sizeof host));
    cr_assert_eq(host[7], 0xBEEF);
    EXPECT_OK(cuMemsetD2D8(a, 256, 0x7, 16, 4));
    unsigned char rows[1024];
    EXPECT_OK(cuMemcpy((CUdeviceptr)rows, a, sizeof rows));
    cr_assert_eq(rows[256 + 15], 0x7);
    cr_assert_eq(rows[256 + 16], 0xEF, "outside the 2D region");
    EXPECT_RESULT(cuMemcpyHtoD(a + (1 << 16) - 4, host, 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemcpyHtoD((CUdeviceptr)rows, host, 8), CUDA_ERROR_INVALID_VALUE);
}


Test(copies, two_dimensional_copies_respect_pitches)
{
    start_device(0);
    CUdeviceptr pitched;
    size_t pitch;
    EXPECT_OK(cuMemAllocPitch(&pitched, &pitch, 100, 8, 4));
    EXPECT_OK(cuMemsetD8(pitched, 0xEE, pitch * 8));
    unsigned char rows[8][100];
    for (int row = 0; row < 8; row++)
        memset(rows[row], row + 1, sizeof rows[row]);
    CUDA_MEMCPY2D upload = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = rows,
                            .srcPitch = sizeof rows[0], .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                            .dstDevice = pitched, .dstPitch = pitch,
                            .WidthInBytes = sizeof rows[0], .Height = 8};
    EXPECT_OK(cuMemcpy2D(&upload));
    unsigned char device_view[8 * 512];
    cr_assert_leq(pitch * 8, sizeof device_view);
    EXPECT_OK(cuMemcpyDtoH(device_view, pitched, pitch * 8));
    cr_assert_eq(device_view[3 * pitch + 99], 4);
    cr_assert_eq(device_view[3 * pitch + 100], 0xEE, "the padding is not written");
    unsigned char back[4][50];
    CUDA_MEMCPY2D download = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = pitched,
                              .srcPitch = pitch, .srcXInBytes = 10, .srcY = 2,
                              .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back,
                              .dstPitch = sizeof back[0], .WidthInBytes = 50, .Height = 4};
    EXPECT_OK(cuMemcpy2DAsync(&download, NULL));
    EXPECT_OK(cuStreamSynchronize(NULL));
    cr_assert_eq(back[0][0], 3);
    cr_assert_eq(back[3][49], 6);
    download.Height = 7; /* rows 2..8 run past the allocation */
    EXPECT_RESULT(cuMemcpy2D(&download), CUDA_ERROR_INVALID_VALUE);
    download.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    EXPECT_RESULT(cuMemcpy2D(&download), CUDA_ERROR_NOT_SUPPORTED);
}


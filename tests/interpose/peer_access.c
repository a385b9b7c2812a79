/* Peer access to cached memory (GPUSIM_DEVICES=2; run plain and with
 * expandable_segments:True). Device 1 enables access to device 0 while
 * device 0's cache already holds mapped memory: device 1 must then read
 * both that memory and memory device 0 maps afterwards, as it would read
 * plain cudaMalloc memory. The simulated device checks the accessing
 * device per VMM mapping, so memory without access for device 1 fails the
 * copy with cudaErrorInvalidValue. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "test_support.h"

#define MiB ((size_t)1 << 20)

static void *filled_on_device_zero(size_t bytes, int value)
{
    CHECK_CUDA(cudaSetDevice(0));
    void *block = NULL;
    CHECK_CUDA(cudaMalloc(&block, bytes));
    CHECK_CUDA(cudaMemset(block, value, bytes));
    CHECK_CUDA(cudaDeviceSynchronize());
    return block;
}

/* Copies `source` (device 0) into device 1's memory with device 1 current,
 * then checks the last byte. */
static void read_from_device_one(const void *source, size_t bytes, int value, const char *what)
{
    CHECK_CUDA(cudaSetDevice(1));
    void *target = NULL;
    CHECK_CUDA(cudaMalloc(&target, bytes));
    cudaError_t result = cudaMemcpy(target, source, bytes, cudaMemcpyDeviceToDevice);
    CHECK(result == cudaSuccess, "device 1 cannot copy %s: error %d", what, (int)result);
    unsigned char byte = 0;
    CHECK_CUDA(cudaMemcpy(&byte, (const char *)target + bytes - 1, 1, cudaMemcpyDeviceToHost));
    CHECK(byte == (unsigned char)value, "%s read back %u", what, byte);
    CHECK_CUDA(cudaFree(target));
}

int main(void)
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    CHECK(count == 2, "expected 2 devices, found %d", count);
    /* The simulated runtime has no peer calls: the driver's, through the
     * runtime's entry-point lookup (a route the library hooks). */
    void *retain = NULL, *enable = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxRetain", &retain, 7000,
                                                cudaEnableDefault, &status));
    CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuCtxEnablePeerAccess", &enable, 4000,
                                                cudaEnableDefault, &status));

    void *before = filled_on_device_zero(30 * MiB, 0x21);
    CUcontext device_zero;
    CHECK_CUDA(((PFN_cuDevicePrimaryCtxRetain_v7000)retain)(&device_zero, 0));
    CHECK_CUDA(cudaSetDevice(1));
    CHECK_CUDA(cudaFree(0));
    CHECK_CUDA(((PFN_cuCtxEnablePeerAccess_v4000)enable)(device_zero, 0));
    read_from_device_one(before, 30 * MiB, 0x21, "memory mapped before peer access");

    void *after = filled_on_device_zero(60 * MiB, 0x43);
    read_from_device_one(after, 60 * MiB, 0x43, "memory mapped after peer access");

    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(before));
    CHECK_CUDA(cudaFree(after));
    return 0;
}

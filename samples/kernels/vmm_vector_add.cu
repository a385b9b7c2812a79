// A vector add whose buffers come from the driver's virtual memory
// management API rather than cudaMalloc: physical allocations are created
// (cuMemCreate), mapped into one reserved address range (cuMemAddressReserve,
// cuMemMap) with read-write access (cuMemSetAccess), used by an ordinary
// <<<>>> launch, then unmapped, released and the range freed. The driver
// functions come from cudaGetDriverEntryPointByVersion, so the program
// links no driver library.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <vector>

#include "sample_check.h"

#define CHECK_DRIVER(call)                                                                         \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS) {                                                             \
            std::fprintf(stderr, "%s:%d: %s: driver error %d\n", __FILE__, __LINE__, #call,        \
                         (int)result_);                                                            \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

template <typename Function> static void entry_point(const char *name, int version, Function *function)
{
    void *address = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CHECK(cudaGetDriverEntryPointByVersion(name, &address, version, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || address == nullptr) {
        std::fprintf(stderr, "the driver has no %s at version %d\n", name, version);
        std::exit(1);
    }
    *function = reinterpret_cast<Function>(address);
}

__global__ void add(const float *a, const float *b, float *sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        sum[i] = a[i] + b[i];
}

int main()
{
    PFN_cuMemGetAllocationGranularity_v10020 get_granularity;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
    entry_point("cuMemGetAllocationGranularity", 10020, &get_granularity);
    entry_point("cuMemCreate", 10020, &create);
    entry_point("cuMemRelease", 10020, &release);
    entry_point("cuMemAddressReserve", 10020, &reserve);
    entry_point("cuMemAddressFree", 10020, &address_free);
    entry_point("cuMemMap", 10020, &map);
    entry_point("cuMemUnmap", 10020, &unmap);
    entry_point("cuMemSetAccess", 10020, &set_access);

    // The runtime's primary context becomes current: the VMM calls need one.
    CHECK(cudaFree(nullptr));
    int device = 0;
    CHECK(cudaGetDevice(&device));

    const int n = 3 * 100000 + 7;
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granularity = 0;
    CHECK_DRIVER(get_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (granularity == 0) {
        std::printf("vmm_vector_add: zero allocation granularity\n");
        return 1;
    }
    // Each of the three arrays in its own physical allocation, rounded up to
    // the granularity, all three mapped back to back in one range.
    size_t array_bytes = ((n * sizeof(float) + granularity - 1) / granularity) * granularity;
    size_t range_bytes = 3 * array_bytes;
    CUdeviceptr base = 0;
    CHECK_DRIVER(reserve(&base, range_bytes, granularity, 0, 0));
    CUmemGenericAllocationHandle handles[3];
    for (int k = 0; k < 3; k++) {
        CHECK_DRIVER(create(&handles[k], array_bytes, &prop, 0));
        CHECK_DRIVER(map(base + k * array_bytes, array_bytes, 0, handles[k], 0));
    }
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_DRIVER(set_access(base, range_bytes, &access, 1));

    float *a = reinterpret_cast<float *>(base);
    float *b = reinterpret_cast<float *>(base + array_bytes);
    float *sum = reinterpret_cast<float *>(base + 2 * array_bytes);
    std::vector<float> host_a(n), host_b(n), host_sum(n);
    for (int i = 0; i < n; i++) {
        host_a[i] = (float)(i % 1000) * 0.5f;
        host_b[i] = (float)(i / 1000) - 3.0f;
    }
    CHECK(cudaMemcpy(a, host_a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, host_b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    add<<<(n + 255) / 256, 256>>>(a, b, sum, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(host_sum.data(), sum, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++)
        if (host_sum[i] != host_a[i] + host_b[i])
            wrong++;

    for (int k = 0; k < 3; k++) {
        CHECK_DRIVER(unmap(base + k * array_bytes, array_bytes));
        CHECK_DRIVER(release(handles[k]));
    }
    CHECK_DRIVER(address_free(base, range_bytes));
    if (wrong) {
        std::printf("vmm_vector_add: %d of %d sums wrong\n", wrong, n);
        return 1;
    }
    std::printf("vmm_vector_add: %d sums over 3 mapped allocations correct\n", n);
    return 0;
}

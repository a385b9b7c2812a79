// Twin of tests/sim/test_sim_vmm.c: VMM granularity, mapping rules and when
// physical memory returns to the device.
#include <string.h>

#include "twin_driver.h"

int main()
{
    twin_start();
    PFN_cuMemGetAllocationGranularity_v10020 granularity_of =
        TWIN_ENTRY(cuMemGetAllocationGranularity, 10020);
    PFN_cuMemCreate_v10020 create = TWIN_ENTRY(cuMemCreate, 10020);
    PFN_cuMemRelease_v10020 release = TWIN_ENTRY(cuMemRelease, 10020);
    PFN_cuMemAddressReserve_v10020 reserve = TWIN_ENTRY(cuMemAddressReserve, 10020);
    PFN_cuMemAddressFree_v10020 address_free = TWIN_ENTRY(cuMemAddressFree, 10020);
    PFN_cuMemMap_v10020 map = TWIN_ENTRY(cuMemMap, 10020);
    PFN_cuMemUnmap_v10020 unmap = TWIN_ENTRY(cuMemUnmap, 10020);
    PFN_cuMemSetAccess_v10020 set_access = TWIN_ENTRY(cuMemSetAccess, 10020);
    PFN_cuMemGetInfo_v3020 memory_info = TWIN_ENTRY(cuMemGetInfo, 3020);
    PFN_cuMemsetD8_v3020 memset_d8 = TWIN_ENTRY(cuMemsetD8, 3020);
    PFN_cuMemcpyDtoH_v3020 copy_to_host = TWIN_ENTRY(cuMemcpyDtoH, 3020);
    PFN_cuCtxSynchronize_v2000 synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);

    CUmemAllocationProp properties;
    memset(&properties, 0, sizeof properties);
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = 0;
    size_t page = 0;
    TWIN_OK(granularity_of(&page, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    TWIN_CHECK(page == ((size_t)2 << 20));

    CUmemGenericAllocationHandle handle;
    TWIN_EXPECT(create(&handle, page + 4096, &properties, 0), CUDA_ERROR_INVALID_VALUE);
    size_t free_before, free_after, total;
    TWIN_OK(memory_info(&free_before, &total));
    const size_t pages = 32; /* 64 MiB: large against driver noise */
    TWIN_OK(create(&handle, pages * page, &properties, 0));
    TWIN_OK(memory_info(&free_after, &total));
    TWIN_CHECK(free_before - free_after >= pages * page);

    CUdeviceptr base;
    TWIN_OK(reserve(&base, (pages + 2) * page, 0, 0, 0));
    TWIN_CHECK(base % page == 0);
    TWIN_EXPECT(map(base + 4096, pages * page, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(map(base + page, pages * page, 0, handle, 0));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location = properties.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    TWIN_EXPECT(set_access(base, pages * page, &access, 1), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(set_access(base + page, pages * page, &access, 1));
    TWIN_OK(memset_d8(base + page, 0x5A, pages * page));
    TWIN_OK(synchronize());
    unsigned char back[16];
    TWIN_OK(copy_to_host(back, base + page + 12345, sizeof back));
    TWIN_CHECK(back[0] == 0x5A && back[15] == 0x5A);

    TWIN_EXPECT(unmap(base + page, page), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(release(handle));
    size_t free_released;
    TWIN_OK(memory_info(&free_released, &total));
    TWIN_CHECK(free_before - free_released >= pages * page); /* still mapped */
    TWIN_EXPECT(address_free(base, (pages + 2) * page), CUDA_ERROR_INVALID_VALUE);
    TWIN_OK(unmap(base + page, pages * page));
    size_t free_unmapped;
    TWIN_OK(memory_info(&free_unmapped, &total));
    TWIN_CHECK(free_unmapped - free_released >= pages * page); /* returned now */
    TWIN_OK(address_free(base, (pages + 2) * page));
    return twin_finish("twin_vmm");
}

/* The VMM API on the simulated driver: reservation, physical allocation,
 * mapping, access, unmapping and release, with faults where a GPU would
 * fault. */
#include <string.h>
#include <sys/resource.h>

#include "sim_test_support.h"

#define PAGE ((size_t)2 << 20)

static CUmemAllocationProp device_properties(int ordinal)
{
    CUmemAllocationProp properties;
    memset(&properties, 0, sizeof properties);
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = ordinal;
    return properties;
}

static void grant_access(CUdeviceptr address, size_t size)
{
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_OK(cuMemSetAccess(address, size, &access, 1));
}

static void small_device(void)
{
    setenv("GPUSIM_MEMORY", "16MiB", 1);
}

Test(vmm, granularity_is_two_mebibytes)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    size_t minimum, recommended;
    EXPECT_OK(cuMemGetAllocationGranularity(&minimum, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_OK(cuMemGetAllocationGranularity(&recommended, &properties,
                                            CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    cr_assert_eq(minimum, PAGE);
    cr_assert_eq(recommended, PAGE);
    properties.location.id = 7;
    EXPECT_RESULT(cuMemGetAllocationGranularity(&minimum, &properties,
                                                CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                  CUDA_ERROR_INVALID_DEVICE);
}

Test(vmm, create_rejects_sizes_that_are_not_whole_pages)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUmemGenericAllocationHandle handle;
    EXPECT_RESULT(cuMemCreate(&handle, PAGE + 4096, &properties, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemCreate(&handle, 0, &properties, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemCreate(&handle, PAGE, &properties, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemCreate(&handle, PAGE, &properties, 0));
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_RESULT(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
}

Test(vmm, reserved_space_faults_until_mapped_and_accessible)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 4 * PAGE, 0, 0, 0));
    cr_assert_eq(base % PAGE, 0);
    cr_assert(faults_in_child(read_byte, (void *)base), "a bare reservation is not memory");
    CUmemGenericAllocationHandle handle;
    EXPECT_OK(cuMemCreate(&handle, 2 * PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base + PAGE, 2 * PAGE, 0, handle, 0));
    cr_assert(faults_in_child(write_byte, (void *)(base + PAGE)), "mapped but no access yet");
    EXPECT_RESULT(cuMemSetAccess(base, 2 * PAGE, &(CUmemAccessDesc){
                                     .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                                     .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE}, 1),
                  CUDA_ERROR_INVALID_VALUE);
    grant_access(base + PAGE, 2 * PAGE);
    memset((void *)(base + PAGE), 0x3C, 2 * PAGE);
    cr_assert_not(faults_in_child(write_byte, (void *)(base + 3 * PAGE - 1)));
    cr_assert(faults_in_child(write_byte, (void *)(base + 3 * PAGE)), "past the mapping");
    unsigned long long flags;
    CUmemLocation location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    EXPECT_OK(cuMemGetAccess(&flags, &location, base + PAGE));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUdeviceptr range_base;
    size_t range_size;
    EXPECT_OK(cuMemGetAddressRange(&range_base, &range_size, base + PAGE + 5));
    cr_assert_eq(range_base, base + PAGE);
    cr_assert_eq(range_size, 2 * PAGE);
    EXPECT_OK(cuMemUnmap(base + PAGE, 2 * PAGE));
    cr_assert(faults_in_child(read_byte, (void *)(base + PAGE)), "unmapped again");
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(base, 4 * PAGE));
}

Test(vmm, physical_memory_returns_only_when_released_and_unmapped, .init = small_device)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 8 * PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle first, second;
    EXPECT_OK(cuMemCreate(&first, 6 * PAGE, &properties, 0));
    EXPECT_RESULT(cuMemCreate(&second, 4 * PAGE, &properties, 0), CUDA_ERROR_OUT_OF_MEMORY);
    size_t free_bytes, total_bytes;
    EXPECT_OK(cuMemGetInfo(&free_bytes, &total_bytes));
    cr_assert_eq(free_bytes, 2 * PAGE);
    EXPECT_OK(cuMemMap(base, 6 * PAGE, 0, first, 0));
    grant_access(base, 6 * PAGE);
    ((char *)base)[12345] = 7;
    EXPECT_OK(cuMemRelease(first));
    cr_assert_eq(gpusim_physical_bytes(0), 6 * PAGE, "still mapped: not returned yet");
    cr_assert_eq(((char *)base)[12345], 7, "a released handle's mapping stays valid");
    EXPECT_RESULT(cuMemAddressFree(base, 8 * PAGE), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemUnmap(base, 6 * PAGE));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    EXPECT_OK(cuMemCreate(&second, 8 * PAGE, &properties, 0));
    EXPECT_OK(cuMemRelease(second));
    EXPECT_OK(cuMemAddressFree(base, 8 * PAGE));
}

Test(vmm, unmap_must_cover_whole_mappings)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 4 * PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle a, b;
    EXPECT_OK(cuMemCreate(&a, 2 * PAGE, &properties, 0));
    EXPECT_OK(cuMemCreate(&b, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base, 2 * PAGE, 0, a, 0));
    EXPECT_RESULT(cuMemMap(base + PAGE, PAGE, 0, b, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemMap(base + 2 * PAGE, PAGE, 0, b, 0));
    EXPECT_RESULT(cuMemUnmap(base, PAGE), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemUnmap(base, 4 * PAGE), CUDA_ERROR_INVALID_VALUE);
    grant_access(base, 3 * PAGE);
    EXPECT_OK(cuMemUnmap(base, 3 * PAGE));
    EXPECT_OK(cuMemRelease(a));
    EXPECT_OK(cuMemRelease(b));
    EXPECT_RESULT(cuMemMap(base, PAGE, 0, a, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemAddressFree(base, 4 * PAGE));
}

Test(vmm, mapping_arguments_are_checked)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 2 * PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle handle;
    EXPECT_OK(cuMemCreate(&handle, PAGE, &properties, 0));
    EXPECT_RESULT(cuMemMap(base + 4096, PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemMap(base, 2 * PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemMap(base, PAGE, PAGE, handle, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemMap(base + 2 * PAGE, PAGE, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemAddressFree(base, PAGE), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(base, 2 * PAGE));
}

Test(vmm, retain_allocation_handle_from_an_address)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle handle, retained;
    EXPECT_OK(cuMemCreate(&handle, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base, PAGE, 0, handle, 0));
    EXPECT_OK(cuMemRetainAllocationHandle(&retained, (void *)(base + 100)));
    cr_assert_eq(retained, handle);
    CUmemAllocationProp read_back;
    EXPECT_OK(cuMemGetAllocationPropertiesFromHandle(&read_back, retained));
    cr_assert_eq(read_back.location.id, 0);
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemUnmap(base, PAGE));
    cr_assert_eq(gpusim_physical_bytes(0), PAGE, "the retained reference keeps it");
    EXPECT_OK(cuMemRelease(retained));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    EXPECT_OK(cuMemAddressFree(base, PAGE));
}

Test(vmm, the_same_physical_memory_mapped_twice_is_shared)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr first, second;
    EXPECT_OK(cuMemAddressReserve(&first, PAGE, 0, 0, 0));
    EXPECT_OK(cuMemAddressReserve(&second, PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle handle;
    EXPECT_OK(cuMemCreate(&handle, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(first, PAGE, 0, handle, 0));
    EXPECT_OK(cuMemMap(second, PAGE, 0, handle, 0));
    grant_access(first, PAGE);
    grant_access(second, PAGE);
    ((volatile char *)first)[77] = 42;
    cr_assert_eq(((volatile char *)second)[77], 42);
    cr_assert_eq(gpusim_physical_bytes(0), PAGE, "one physical allocation");
    EXPECT_OK(cuMemUnmap(first, PAGE));
    EXPECT_OK(cuMemUnmap(second, PAGE));
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(first, PAGE));
    EXPECT_OK(cuMemAddressFree(second, PAGE));
}

static void eight_gibibytes(void)
{
    setenv("GPUSIM_MEMORY", "8GiB", 1);
}

Test(vmm, thousands_of_pages_need_no_descriptor_each, .init = eight_gibibytes)
{
    struct rlimit descriptors;
    getrlimit(RLIMIT_NOFILE, &descriptors);
    descriptors.rlim_cur = 256; /* far fewer than the pages below */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &descriptors), 0);
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    enum { PAGES = 3000 };
    static CUmemGenericAllocationHandle handles[PAGES];
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, PAGES * PAGE, 0, 0, 0));
    for (int i = 0; i < PAGES; i++) {
        EXPECT_OK(cuMemCreate(&handles[i], PAGE, &properties, 0));
        EXPECT_OK(cuMemMap(base + i * PAGE, PAGE, 0, handles[i], 0));
    }
    grant_access(base, PAGES * PAGE);
    ((volatile char *)base)[0] = 1;
    ((volatile char *)base)[(PAGES - 1) * PAGE] = 2;
    cr_assert_eq(((volatile char *)base)[0], 1, "pages do not alias each other");
    EXPECT_OK(cuMemUnmap(base, PAGES * PAGE));
    for (int i = 0; i < PAGES; i++)
        EXPECT_OK(cuMemRelease(handles[i]));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    /* Released pages come back zeroed, as fresh physical memory. */
    CUmemGenericAllocationHandle again;
    EXPECT_OK(cuMemCreate(&again, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base, PAGE, 0, again, 0));
    grant_access(base, PAGE);
    cr_assert_eq(((volatile char *)base)[0], 0);
    EXPECT_OK(cuMemUnmap(base, PAGE));
    EXPECT_OK(cuMemRelease(again));
    EXPECT_OK(cuMemAddressFree(base, PAGES * PAGE));
}

Test(vmm, exportable_allocations_share_through_a_file_descriptor)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUmemGenericAllocationHandle plain, exportable;
    EXPECT_OK(cuMemCreate(&plain, PAGE, &properties, 0));
    int descriptor = -1;
    EXPECT_RESULT(cuMemExportToShareableHandle(&descriptor, plain,
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                  CUDA_ERROR_INVALID_VALUE);
    properties.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    EXPECT_OK(cuMemCreate(&exportable, PAGE, &properties, 0));
    EXPECT_OK(cuMemExportToShareableHandle(&descriptor, exportable,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, PAGE, 0, 0, 0));
    EXPECT_OK(cuMemMap(base, PAGE, 0, exportable, 0));
    grant_access(base, PAGE);
    ((volatile char *)base)[4096] = 99;
    char seen = 0;
    cr_assert_eq(pread(descriptor, &seen, 1, 4096), 1);
    cr_assert_eq(seen, 99, "the exported descriptor is the same memory");
    close(descriptor);
    EXPECT_OK(cuMemUnmap(base, PAGE));
    EXPECT_OK(cuMemRelease(exportable));
    EXPECT_OK(cuMemRelease(plain));
    EXPECT_OK(cuMemAddressFree(base, PAGE));
}

Test(vmm, an_imported_descriptor_maps_the_same_memory)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    properties.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle exported, imported;
    EXPECT_OK(cuMemCreate(&exported, PAGE, &properties, 0));
    size_t charged = gpusim_physical_bytes(0);
    int descriptor = -1;
    EXPECT_OK(cuMemExportToShareableHandle(&descriptor, exported,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    EXPECT_OK(cuMemImportFromShareableHandle(&imported, (void *)(intptr_t)descriptor,
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    cr_assert_eq(gpusim_physical_bytes(0), charged, "an import takes no new device memory");
    close(descriptor); /* the handle keeps its own reference */
    CUmemAllocationProp seen;
    EXPECT_OK(cuMemGetAllocationPropertiesFromHandle(&seen, imported));
    cr_assert_eq(seen.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUdeviceptr first, second;
    EXPECT_OK(cuMemAddressReserve(&first, PAGE, 0, 0, 0));
    EXPECT_OK(cuMemAddressReserve(&second, PAGE, 0, 0, 0));
    EXPECT_OK(cuMemMap(first, PAGE, 0, exported, 0));
    EXPECT_OK(cuMemMap(second, PAGE, 0, imported, 0));
    grant_access(first, PAGE);
    grant_access(second, PAGE);
    unsigned word = 0xC0FFEE;
    EXPECT_OK(cuMemcpyHtoD(first + 64, &word, sizeof word));
    unsigned read_back = 0;
    EXPECT_OK(cuMemcpyDtoH(&read_back, second + 64, sizeof read_back));
    cr_assert_eq(read_back, word, "both mappings are the same bytes");
    EXPECT_OK(cuMemUnmap(second, PAGE));
    EXPECT_OK(cuMemRelease(imported));
    EXPECT_OK(cuMemUnmap(first, PAGE));
    EXPECT_OK(cuMemRelease(exported));
    cr_assert_eq(gpusim_physical_bytes(0), charged - PAGE);
    EXPECT_OK(cuMemAddressFree(first, PAGE));
    EXPECT_OK(cuMemAddressFree(second, PAGE));
}

Test(vmm, importing_what_is_not_an_exported_allocation_fails)
{
    start_device(0);
    CUmemGenericAllocationHandle handle;
    EXPECT_RESULT(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)-1,
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  CUDA_ERROR_INVALID_VALUE);
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    EXPECT_RESULT(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)pipe_ends[0],
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  CUDA_ERROR_INVALID_VALUE);
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    EXPECT_RESULT(cuMemImportFromShareableHandle(NULL, (void *)(intptr_t)0,
                                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                  CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)0,
                                                 CU_MEM_HANDLE_TYPE_FABRIC),
                  CUDA_ERROR_INVALID_VALUE);
}

static void small_pages(void)
{
    setenv("GPUSIM_GRANULARITY", "64KiB", 1);
}

Test(vmm, granularity_comes_from_the_environment, .init = small_pages)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    size_t granularity;
    EXPECT_OK(cuMemGetAllocationGranularity(&granularity, &properties,
                                            CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert_eq(granularity, 64 << 10);
    CUmemGenericAllocationHandle handle;
    EXPECT_RESULT(cuMemCreate(&handle, 96 << 10, &properties, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemCreate(&handle, 128 << 10, &properties, 0));
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 1 << 20, 0, 0, 0));
    cr_assert_eq(base % (64 << 10), 0);
    EXPECT_OK(cuMemMap(base + (64 << 10), 128 << 10, 0, handle, 0));
    grant_access(base + (64 << 10), 128 << 10);
    ((volatile char *)base)[(192 << 10) - 1] = 1;
    cr_assert(faults_in_child(write_byte, (void *)(base + (192 << 10))));
    cr_assert_eq(gpusim_physical_bytes(0), 128 << 10);
    EXPECT_OK(cuMemUnmap(base + (64 << 10), 128 << 10));
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(base, 1 << 20));
}

/* An expandable segment maps one handle per growth side by side; copies and
 * memsets that cross from one mapping into the next must work as on a GPU,
 * and one that reaches an unmapped page must still be refused. */
Test(vmm, copies_cross_adjacent_mappings)
{
    start_device(0);
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 3 * PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle first, second;
    EXPECT_OK(cuMemCreate(&first, PAGE, &properties, 0));
    EXPECT_OK(cuMemCreate(&second, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base, PAGE, 0, first, 0));
    EXPECT_OK(cuMemMap(base + PAGE, PAGE, 0, second, 0));
    grant_access(base, 2 * PAGE);
    CUdeviceptr straddling = base + PAGE - 512;
    EXPECT_OK(cuMemsetD8(straddling, 0x7E, 1024));
    unsigned char host[1024];
    EXPECT_OK(cuMemcpyDtoH(host, straddling, sizeof host));
    for (size_t i = 0; i < sizeof host; i++)
        cr_assert_eq(host[i], 0x7E, "byte %zu across the page boundary", i);
    EXPECT_RESULT(cuMemsetD8(base + 2 * PAGE - 512, 0, 1024), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemUnmap(base, PAGE));
    EXPECT_OK(cuMemUnmap(base + PAGE, PAGE));
    EXPECT_OK(cuMemRelease(first));
    EXPECT_OK(cuMemRelease(second));
    EXPECT_OK(cuMemAddressFree(base, 3 * PAGE));
}

static void two_devices(void)
{
    setenv("GPUSIM_DEVICES", "2", 1);
}

static void grant_device(CUdeviceptr address, size_t size, int device, CUmemAccess_flags flags)
{
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device},
                              .flags = flags};
    EXPECT_OK(cuMemSetAccess(address, size, &access, 1));
}

/* Access is per device, as on a GPU: a copy or memset issued in the context
 * of a device the mapping does not grant fails with
 * CUDA_ERROR_INVALID_VALUE (a GPU would fault); peer access between the
 * contexts does not grant it, cuMemSetAccess for that device does, and
 * leaves the other device's access as it was. */
Test(vmm, access_is_granted_per_device, .init = two_devices)
{
    EXPECT_OK(cuInit(0));
    CUcontext zero, one;
    EXPECT_OK(cuDevicePrimaryCtxRetain(&zero, 0));
    EXPECT_OK(cuDevicePrimaryCtxRetain(&one, 1));
    EXPECT_OK(cuCtxSetCurrent(zero));
    CUmemAllocationProp properties = device_properties(0);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, PAGE, 0, 0, 0));
    CUmemGenericAllocationHandle handle;
    EXPECT_OK(cuMemCreate(&handle, PAGE, &properties, 0));
    EXPECT_OK(cuMemMap(base, PAGE, 0, handle, 0));
    grant_device(base, PAGE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_OK(cuMemsetD8(base, 0x5A, PAGE));
    /* A device memset may return before it is done, and device 1's legacy
     * stream does not order with device 0's. */
    EXPECT_OK(cuCtxSynchronize());

    EXPECT_OK(cuCtxSetCurrent(one));
    CUdeviceptr on_one;
    EXPECT_OK(cuMemAlloc(&on_one, PAGE));
    EXPECT_OK(cuCtxEnablePeerAccess(zero, 0));
    EXPECT_RESULT(cuMemcpyDtoD(on_one, base, PAGE), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemcpyPeer(on_one, one, base, zero, PAGE), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemsetD8(base, 0, PAGE), CUDA_ERROR_INVALID_VALUE);
    unsigned long long flags = 99;
    CUmemLocation location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1};
    EXPECT_OK(cuMemGetAccess(&flags, &location, base));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);

    grant_device(base, PAGE, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_OK(cuMemcpyDtoD(on_one, base, PAGE));
    unsigned char byte = 0;
    EXPECT_OK(cuMemcpyDtoH(&byte, on_one + PAGE - 1, 1));
    cr_assert_eq(byte, 0x5A);
    location.id = 0;
    EXPECT_OK(cuMemGetAccess(&flags, &location, base));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "device 0 kept its access");

    EXPECT_OK(cuMemFree(on_one));
    EXPECT_OK(cuMemUnmap(base, PAGE));
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(base, PAGE));
}

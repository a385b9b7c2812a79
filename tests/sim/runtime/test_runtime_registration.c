/* The entry points nvcc-generated host code calls: launch configurations
 * nest and unwind in order, registered kernels exist but cannot run here
 * (cudaErrorNoKernelImageForDevice, never a pretended success), and unknown
 * host functions are invalid device functions. */
#include "cudart_registration.h"
#include "runtime_test_support.h"

/* Stand-ins for nvcc's host stubs: only their addresses matter. */
static void kernel_stub(void) {}
static void other_kernel_stub(void) {}
static char fake_fat_binary[16];

static const void *address_of(void (*stub)(void))
{
    const void *address;
    memcpy(&address, &stub, sizeof address);
    return address;
}

static void **register_module_with_kernel(void)
{
    void **module = __cudaRegisterFatBinary(fake_fat_binary);
    cr_assert_not_null(module);
    __cudaRegisterFunction(module, address_of(kernel_stub), (char *)"kernel", "kernel", -1, NULL, NULL,
                           NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(module);
    return module;
}

Test(runtime_registration, launch_configurations_unwind_last_in_first_out)
{
    dim3 outer_grid = { 4, 2, 1 }, outer_block = { 128, 1, 1 };
    dim3 inner_grid = { 1, 1, 1 }, inner_block = { 32, 2, 1 };
    cudaStream_t outer_stream = (cudaStream_t)0x10;
    cr_assert_eq(__cudaPushCallConfiguration(outer_grid, outer_block, 256, outer_stream), 0);
    cr_assert_eq(__cudaPushCallConfiguration(inner_grid, inner_block, 0, NULL), 0);
    dim3 grid, block;
    size_t shared = 99;
    cudaStream_t stream = (cudaStream_t)0x1;
    assert_cuda_success(__cudaPopCallConfiguration(&grid, &block, &shared, &stream));
    cr_assert_eq(block.x, 32);
    cr_assert_eq(block.y, 2);
    cr_assert_eq(shared, 0);
    cr_assert_null(stream);
    assert_cuda_success(__cudaPopCallConfiguration(&grid, &block, &shared, &stream));
    cr_assert_eq(grid.x, 4);
    cr_assert_eq(grid.y, 2);
    cr_assert_eq(block.x, 128);
    cr_assert_eq(shared, 256);
    cr_assert_eq(stream, outer_stream);
    assert_cuda(__cudaPopCallConfiguration(&grid, &block, &shared, &stream), cudaErrorMissingConfiguration);
}

Test(runtime_registration, launching_a_registered_kernel_reports_no_kernel_image)
{
    void **module = register_module_with_kernel();
    dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
    assert_cuda(cudaLaunchKernel(address_of(kernel_stub), grid, block, NULL, 0, 0),
                cudaErrorNoKernelImageForDevice);
    assert_cuda(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
    cudaKernel_t kernel = NULL;
    assert_cuda_success(__cudaGetKernel(&kernel, address_of(kernel_stub)));
    cr_assert_not_null(kernel);
    assert_cuda(__cudaLaunchKernel(kernel, grid, block, NULL, 0, 0), cudaErrorNoKernelImageForDevice);
    assert_cuda(__cudaLaunchKernel_ptsz(kernel, grid, block, NULL, 0, 0), cudaErrorNoKernelImageForDevice);
    cr_assert_neq(__cudaInitModule(module), 0);
    __cudaUnregisterFatBinary(module);
}

Test(runtime_registration, an_unregistered_host_function_is_an_invalid_device_function)
{
    void **module = register_module_with_kernel();
    dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
    assert_cuda(cudaLaunchKernel(address_of(other_kernel_stub), grid, block, NULL, 0, 0),
                cudaErrorInvalidDeviceFunction);
    cudaKernel_t kernel = NULL;
    assert_cuda(__cudaGetKernel(&kernel, address_of(other_kernel_stub)), cudaErrorInvalidDeviceFunction);
    assert_cuda(__cudaLaunchKernel(NULL, grid, block, NULL, 0, 0), cudaErrorInvalidDeviceFunction);
    __cudaUnregisterFatBinary(module);
}

Test(runtime_registration, unregistering_a_module_forgets_its_kernels)
{
    void **module = register_module_with_kernel();
    __cudaUnregisterFatBinary(module);
    cudaKernel_t kernel = NULL;
    assert_cuda(__cudaGetKernel(&kernel, address_of(kernel_stub)), cudaErrorInvalidDeviceFunction);
    dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
    assert_cuda(cudaLaunchKernel(address_of(kernel_stub), grid, block, NULL, 0, 0),
                cudaErrorInvalidDeviceFunction);
}

Test(runtime_registration, device_variables_register_without_effect_on_launches)
{
    void **module = register_module_with_kernel();
    static int host_shadow;
    __cudaRegisterVar(module, (char *)&host_shadow, (char *)"variable", "variable", 0, sizeof host_shadow, 0, 0);
    dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
    assert_cuda(cudaLaunchKernel(address_of(kernel_stub), grid, block, NULL, 0, 0),
                cudaErrorNoKernelImageForDevice);
    __cudaUnregisterFatBinary(module);
}

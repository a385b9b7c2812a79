/* The entry points nvcc-generated host code calls: launch configurations
 * nest and unwind in order, registered kernels exist but cannot run here
 * (cudaErrorNoKernelImageForDevice, never a pretended success), unknown
 * host functions are invalid device functions, and a device-linked image
 * (-rdc) runs its translation units' PTX linked together. */
#include "../fat_binary_builder.h"
#include "cudart_registration.h"
#include "runtime_test_support.h"

#include <criterion/redirect.h>

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

/* Two translation units as nvcc -rdc=true compiles them: the kernel's unit
 * calls twice() and reads offset, which only the other one defines. */
static const char unit_kernel[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".extern .func (.param .b32 r) twice (.param .b32 x);\n"
    ".extern .global .align 4 .u32 offset;\n"
    ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<5>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n"
    "{\n.param .b32 p0;\nst.param.b32 [p0], %r1;\n.param .b32 rv;\n"
    "call.uni (rv), twice, (p0);\nld.param.b32 %r2, [rv];\n}\n"
    "ld.global.u32 %r3, [offset];\nadd.u32 %r4, %r2, %r3;\n"
    "mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r4;\nret;\n}\n";
static const char unit_definitions[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .u32 offset = 5;\n"
    ".visible .func (.param .b32 r) twice (.param .b32 x)\n{\n.reg .b32 %r<3>;\n"
    "ld.param.u32 %r1, [x];\nshl.b32 %r2, %r1, 1;\nst.param.b32 [r], %r2;\nret;\n}\n";

/* The wrapper nvcc's link stub registers for the device-linked image:
 * version 2, with the units' own fat binaries listed after its SASS. */
struct linked_wrapper {
    int magic;
    int version;
    const void *data;
    void *prelinked;
};

static unsigned char fat_kernel[4096], fat_definitions[4096], fat_linked[256];
static void *prelinked[3];
static struct linked_wrapper wrapper;
static int offset_shadow;

static void **register_linked_image(bool with_ptx)
{
    const struct fat_entry kernel_entries[] = {{2, 90, "\177ELF relocatable"}, {1, 90, unit_kernel}};
    const struct fat_entry definition_entries[] = {{2, 90, "\177ELF relocatable"}, {1, 90, unit_definitions}};
    const struct fat_entry linked_entries[] = {{2, 90, "\177ELF linked"}};
    cr_assert_gt(build_fat_binary(fat_kernel, sizeof fat_kernel, kernel_entries, with_ptx ? 2 : 1), 0);
    cr_assert_gt(build_fat_binary(fat_definitions, sizeof fat_definitions, definition_entries, 2), 0);
    cr_assert_gt(build_fat_binary(fat_linked, sizeof fat_linked, linked_entries, 1), 0);
    prelinked[0] = fat_kernel;
    prelinked[1] = fat_definitions;
    prelinked[2] = NULL;
    wrapper = (struct linked_wrapper){0x466243b1, 2, fat_linked, prelinked};
    void **module = __cudaRegisterFatBinary(&wrapper);
    cr_assert_not_null(module);
    /* Each unit's callback registers its own kernels and variables against
     * the one handle. */
    __cudaRegisterFunction(module, address_of(kernel_stub), (char *)"k", "k", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterVar(module, (char *)&offset_shadow, (char *)"offset", "offset", 0, sizeof offset_shadow, 0, 0);
    __cudaRegisterFatBinaryEnd(module);
    return module;
}

Test(runtime_registration, a_device_linked_image_runs_its_units_ptx_linked)
{
    void **module = register_linked_image(true);
    unsigned *out;
    assert_cuda_success(cudaMalloc((void **)&out, 32 * sizeof *out));
    int seven = 7;
    assert_cuda_success(cudaMemcpyToSymbol(&offset_shadow, &seven, sizeof seven, 0, cudaMemcpyHostToDevice));
    void *arguments[] = {&out};
    dim3 grid = {1, 1, 1}, block = {32, 1, 1};
    assert_cuda_success(cudaLaunchKernel(address_of(kernel_stub), grid, block, arguments, 0, 0));
    unsigned results[32];
    assert_cuda_success(cudaMemcpy(results, out, sizeof results, cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < 32; t++)
        cr_expect_eq(results[t], 2 * t + 7, "thread %u wrote %u", t, results[t]);
    assert_cuda_success(cudaFree(out));
    __cudaUnregisterFatBinary(module);
}

Test(runtime_registration, a_device_linked_image_needs_every_units_ptx, .init = cr_redirect_stderr)
{
    void **module = register_linked_image(false);
    dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    void *out = NULL;
    void *arguments[] = {&out};
    assert_cuda(cudaLaunchKernel(address_of(kernel_stub), grid, block, arguments, 0, 0),
                cudaErrorNoKernelImageForDevice);
    __cudaUnregisterFatBinary(module);
}

// Twin of the PTX interpreter's choices where PTX leaves a result
// undefined (DESIGN.md, Kernels: undefined behaviour): integer division
// and remainder by zero, the most negative number divided by -1, and a
// shuffle that reads a lane outside its member mask. On the simulator each
// check holds by construction; on a GPU each says whether the choice
// matches the hardware. The kernels are PTX text loaded with
// cuModuleLoadData, so the twin needs no device code of its own.
#include <cstring>

#include "twin_driver.h"

static const char kernels[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    // out[0..5] = u/0, s/0 (positive and negative), u%0, s%0, INT_MIN/-1
    ".visible .entry integers(.param .u64 out, .param .u32 zero)\n{\n"
    ".reg .b32 %r<16>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [out];\nld.param.u32 %r1, [zero];\n"
    "div.u32 %r2, 7, %r1;\nst.global.u32 [%rd1], %r2;\n"
    "mov.u32 %r9, 7;\ndiv.s32 %r3, %r9, %r1;\nst.global.u32 [%rd1+4], %r3;\n"
    "mov.u32 %r10, -7;\ndiv.s32 %r4, %r10, %r1;\nst.global.u32 [%rd1+8], %r4;\n"
    "rem.u32 %r5, 7, %r1;\nst.global.u32 [%rd1+12], %r5;\n"
    "rem.s32 %r6, %r10, %r1;\nst.global.u32 [%rd1+16], %r6;\n"
    "mov.u32 %r11, -2147483648;\nsub.s32 %r12, %r1, 1;\n"
    "div.s32 %r7, %r11, %r12;\nst.global.u32 [%rd1+20], %r7;\n"
    "ret;\n}\n"
    // Every lane holds lane * 10; lanes 0-15 shuffle with member mask
    // 0xffff, each reading lane + 16, which is outside the mask and waits
    // at the reconvergence point; out[lane] = what it read.
    ".visible .entry outside_mask(.param .u64 out)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [out];\nmov.u32 %r1, %laneid;\nmul.lo.u32 %r2, %r1, 10;\n"
    "mov.u32 %r3, 0;\nsetp.ge.u32 %p1, %r1, 16;\n@%p1 bra JOIN;\n"
    "add.u32 %r4, %r1, 16;\nshfl.sync.idx.b32 %r3, %r2, %r4, 31, 0xffff;\n"
    "JOIN:\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r3;\n"
    "ret;\n}\n";

int main()
{
    twin_start();
    PFN_cuModuleLoadData_v2000 load = TWIN_ENTRY(cuModuleLoadData, 2000);
    PFN_cuModuleGetFunction_v2000 get_function = TWIN_ENTRY(cuModuleGetFunction, 2000);
    PFN_cuLaunchKernel_v4000 launch = TWIN_ENTRY(cuLaunchKernel, 4000);
    PFN_cuMemAlloc_v3020 allocate = TWIN_ENTRY(cuMemAlloc, 3020);
    PFN_cuMemFree_v3020 release = TWIN_ENTRY(cuMemFree, 3020);
    PFN_cuMemcpyDtoH_v3020 read_back = TWIN_ENTRY(cuMemcpyDtoH, 3020);
    PFN_cuMemsetD8_v3020 clear = TWIN_ENTRY(cuMemsetD8, 3020);
    PFN_cuCtxSynchronize_v2000 synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);
    PFN_cuModuleUnload_v2000 unload = TWIN_ENTRY(cuModuleUnload, 2000);

    CUmodule module;
    TWIN_OK(load(&module, kernels));
    CUfunction integers, outside_mask;
    TWIN_OK(get_function(&integers, module, "integers"));
    TWIN_OK(get_function(&outside_mask, module, "outside_mask"));
    CUdeviceptr out;
    TWIN_OK(allocate(&out, 32 * 4));

    unsigned zero = 0;
    void *integer_params[] = {&out, &zero};
    TWIN_OK(clear(out, 0, 32 * 4));
    TWIN_OK(launch(integers, 1, 1, 1, 1, 1, 1, 0, NULL, integer_params, NULL));
    TWIN_OK(synchronize());
    unsigned words[32];
    TWIN_OK(read_back(words, out, 6 * 4));
    printf("div.u32 7/0 = %#x, div.s32 7/0 = %#x, div.s32 -7/0 = %#x, rem.u32 7%%0 = %#x, "
           "rem.s32 -7%%0 = %#x, div.s32 INT_MIN/-1 = %#x\n",
           words[0], words[1], words[2], words[3], words[4], words[5]);
    TWIN_CHECK(words[0] == 0xffffffffu);
    TWIN_CHECK(words[1] == 0xffffffffu);
    TWIN_CHECK(words[2] == 0xffffffffu);
    TWIN_CHECK(words[3] == 7u);
    TWIN_CHECK(words[4] == 0xfffffff9u);
    TWIN_CHECK(words[5] == 0x80000000u);

    void *shuffle_params[] = {&out};
    TWIN_OK(clear(out, 0, 32 * 4));
    TWIN_OK(launch(outside_mask, 1, 1, 1, 32, 1, 1, 0, NULL, shuffle_params, NULL));
    TWIN_OK(synchronize());
    TWIN_OK(read_back(words, out, 32 * 4));
    printf("shfl.sync.idx from a lane outside the mask: lane 0 read %u, lane 15 read %u\n",
           words[0], words[15]);
    // The interpreter's choice: the source lane's register as it stands.
    for (unsigned lane = 0; lane < 16; lane++)
        TWIN_CHECK(words[lane] == (lane + 16) * 10);

    TWIN_OK(release(out));
    TWIN_OK(unload(module));
    return twin_finish("twin_kernels");
}

/* Helpers for the PTX interpreter suites: load a PTX string with
 * cuModuleLoadData, launch one of its kernels with cuLaunchKernel, and check
 * what it wrote.
 *
 * Most instruction tests use one template kernel: thread t reads three
 * 64-bit inputs a, b, c from in[3t..3t+2] into %rd10..%rd12 (with 32-bit
 * views %r10..%r12, f32 views %f10..%f12 and f64 views %fd10..%fd12), runs
 * the instruction text under test, and stores %rd20 to out[t]. */
#ifndef PTX_TEST_SUPPORT_H
#define PTX_TEST_SUPPORT_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../sim_test_support.h"

#define PTX_HEADER ".version 8.0\n.target sm_90\n.address_size 64\n"

/* The body's result, widened into %rd20 from a 32-bit or f32 register. */
#define RESULT_R32 "cvt.u64.u32 %rd20, %r20;\n"
#define RESULT_F32 "mov.b32 %r20, %f20;\ncvt.u64.u32 %rd20, %r20;\n"
#define RESULT_F64 "mov.b64 %rd20, %fd20;\n"
#define RESULT_PRED "selp.u64 %rd20, 1, 0, %p1;\n"

static inline CUmodule load_ptx(const char *ptx)
{
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, ptx));
    return module;
}

static inline CUfunction kernel_of(CUmodule module, const char *name)
{
    CUfunction function;
    EXPECT_OK(cuModuleGetFunction(&function, module, name));
    return function;
}

/* Runs `body` in the template kernel for `count` threads (one block) and
 * returns each thread's %rd20 in `results`. */
static inline void run_template(const char *body, unsigned count, const uint64_t *inputs, uint64_t *results)
{
    static char ptx[16384];
    snprintf(ptx, sizeof ptx,
             PTX_HEADER
             ".visible .entry k(.param .u64 out, .param .u64 in)\n{\n"
             ".reg .pred %%p<8>;\n.reg .b16 %%rs<30>;\n.reg .b32 %%r<30>;\n.reg .b64 %%rd<30>;\n"
             ".reg .f32 %%f<30>;\n.reg .f64 %%fd<30>;\n"
             "ld.param.u64 %%rd1, [out];\nld.param.u64 %%rd2, [in];\n"
             "mov.u32 %%r1, %%tid.x;\nmul.wide.u32 %%rd3, %%r1, 24;\nadd.s64 %%rd4, %%rd2, %%rd3;\n"
             "ld.global.u64 %%rd10, [%%rd4];\nld.global.u64 %%rd11, [%%rd4+8];\nld.global.u64 %%rd12, [%%rd4+16];\n"
             "cvt.u32.u64 %%r10, %%rd10;\ncvt.u32.u64 %%r11, %%rd11;\ncvt.u32.u64 %%r12, %%rd12;\n"
             "mov.b32 %%f10, %%r10;\nmov.b32 %%f11, %%r11;\nmov.b32 %%f12, %%r12;\n"
             "mov.b64 %%fd10, %%rd10;\nmov.b64 %%fd11, %%rd11;\nmov.b64 %%fd12, %%rd12;\n"
             "mov.u64 %%rd20, 0;\n"
             "%s\n"
             "mul.wide.u32 %%rd5, %%r1, 8;\nadd.s64 %%rd6, %%rd1, %%rd5;\nst.global.u64 [%%rd6], %%rd20;\nret;\n}\n",
             body);
    CUmodule module = load_ptx(ptx);
    CUfunction function = kernel_of(module, "k");
    CUdeviceptr in, out;
    EXPECT_OK(cuMemAlloc(&in, count * 24));
    EXPECT_OK(cuMemAlloc(&out, count * 8));
    EXPECT_OK(cuMemcpyHtoD(in, inputs, count * 24));
    void *params[] = {&out, &in};
    EXPECT_OK(cuLaunchKernel(function, 1, 1, 1, count, 1, 1, 0, NULL, params, NULL));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemcpyDtoH(results, out, count * 8));
    EXPECT_OK(cuMemFree(in));
    EXPECT_OK(cuMemFree(out));
    EXPECT_OK(cuModuleUnload(module));
}

struct case3 {
    uint64_t a, b, c;
    uint64_t expected;
};

/* Runs `body` once per case (one thread each) and checks every result. */
static inline void check_cases(const char *body, const struct case3 *cases, unsigned count)
{
    uint64_t inputs[3 * 64], results[64];
    cr_assert_leq(count, 64);
    for (unsigned i = 0; i < count; i++) {
        inputs[3 * i] = cases[i].a;
        inputs[3 * i + 1] = cases[i].b;
        inputs[3 * i + 2] = cases[i].c;
    }
    run_template(body, count, inputs, results);
    for (unsigned i = 0; i < count; i++)
        cr_expect_eq(results[i], cases[i].expected,
                     "%s\ncase %u: a=0x%llx b=0x%llx c=0x%llx gave 0x%llx, expected 0x%llx", body, i,
                     (unsigned long long)cases[i].a, (unsigned long long)cases[i].b,
                     (unsigned long long)cases[i].c, (unsigned long long)results[i],
                     (unsigned long long)cases[i].expected);
}

#define CHECK_CASES(body, ...)                                                                     \
    do {                                                                                           \
        const struct case3 cases_[] = {__VA_ARGS__};                                        \
        check_cases(body, cases_, sizeof cases_ / sizeof cases_[0]);                               \
    } while (0)

static inline uint64_t f32_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    return bits;
}

static inline uint64_t f64_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, 8);
    return bits;
}

#define U32(x) ((uint64_t)(uint32_t)(x))

#endif

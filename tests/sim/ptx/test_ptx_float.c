/* Floating-point instructions: IEEE results in each rounding mode, NaN and
 * denormal handling, and the conversions between floats and integers. */
#include "ptx_test_support.h"

#define F(x) f32_bits(x)
#define D(x) f64_bits(x)

/* 1 + 2^-30 is not a float: the rounding mode picks a neighbour. */
#define ONE_PLUS_TINY F(1.0f), F(0x1p-30f)

Test(ptx_float, add_sub_mul_in_every_rounding_mode)
{
    start_device(0);
    CHECK_CASES("add.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.5f), F(2.25f), 0, F(3.75f)}, {ONE_PLUS_TINY, 0, F(1.0f)});
    CHECK_CASES("add.rn.f32 %f20, %f10, %f11;\n" RESULT_F32, {ONE_PLUS_TINY, 0, F(1.0f)});
    CHECK_CASES("add.rp.f32 %f20, %f10, %f11;\n" RESULT_F32, {ONE_PLUS_TINY, 0, F(1.0f + 0x1p-23f)});
    CHECK_CASES("add.rm.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(-1.0f), F(-0x1p-30f), 0, F(-1.0f - 0x1p-23f)});
    CHECK_CASES("add.rz.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(-1.0f), F(-0x1p-30f), 0, F(-1.0f)});
    CHECK_CASES("sub.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f), F(3.0f), 0, F(-2.0f)});
    CHECK_CASES("mul.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(3.0f), F(-0.5f), 0, F(-1.5f)});
    CHECK_CASES("mul.rp.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f + 0x1p-23f), F(1.0f + 0x1p-23f), 0,
                                                             F(1.0f + 0x1p-22f + 0x1p-23f)});
    CHECK_CASES("mul.rz.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f + 0x1p-23f), F(1.0f + 0x1p-23f), 0,
                                                             F(1.0f + 0x1p-22f)});
    CHECK_CASES("add.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(0.1), D(0.2), 0, D(0.1 + 0.2)});
    CHECK_CASES("add.rp.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(1.0), D(0x1p-60), 0, D(1.0 + 0x1p-52)});
    CHECK_CASES("mul.rn.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(1e300), D(1e10), 0, D(INFINITY)});
    CHECK_CASES("sub.rz.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(1.0), D(0x1p-60), 0, D(1.0 - 0x1p-53)});
}

Test(ptx_float, fused_multiply_add_rounds_once)
{
    start_device(0);
    /* (1 + 2^-12)^2 - 1 - 2^-11 = 2^-24 exactly when fused, 0 when rounded first. */
    CHECK_CASES("fma.rn.f32 %f20, %f10, %f11, %f12;\n" RESULT_F32,
                {F(1.0f + 0x1p-12f), F(1.0f + 0x1p-12f), F(-(1.0f + 0x1p-11f)), F(0x1p-24f)});
    CHECK_CASES("mul.rn.f32 %f2, %f10, %f11;\nadd.rn.f32 %f20, %f2, %f12;\n" RESULT_F32,
                {F(1.0f + 0x1p-12f), F(1.0f + 0x1p-12f), F(-(1.0f + 0x1p-11f)), F(0.0f)});
    CHECK_CASES("mad.rn.f32 %f20, %f10, %f11, %f12;\n" RESULT_F32, {F(2.0f), F(3.0f), F(1.0f), F(7.0f)});
    CHECK_CASES("fma.rn.f64 %fd20, %fd10, %fd11, %fd12;\n" RESULT_F64,
                {D(1.0 + 0x1p-30), D(1.0 + 0x1p-30), D(-(1.0 + 0x1p-29)), D(0x1p-60)});
    CHECK_CASES("fma.rn.sat.f32 %f20, %f10, %f11, %f12;\n" RESULT_F32, {F(2.0f), F(3.0f), F(1.0f), F(1.0f)},
                {F(-2.0f), F(3.0f), F(1.0f), F(0.0f)});
}

Test(ptx_float, division_roots_and_reciprocals)
{
    start_device(0);
    CHECK_CASES("div.rn.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f), F(3.0f), 0, F(1.0f / 3.0f)},
                {F(1.0f), F(0.0f), 0, F(INFINITY)});
    CHECK_CASES("div.rz.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(2.0f), F(3.0f), 0, F(0x1.555554p-1f)});
    CHECK_CASES("div.approx.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(6.0f), F(3.0f), 0, F(2.0f)});
    CHECK_CASES("div.full.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(6.0f), F(4.0f), 0, F(1.5f)});
    CHECK_CASES("div.rn.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(1.0), D(3.0), 0, D(1.0 / 3.0)});
    CHECK_CASES("rcp.rn.f32 %f20, %f10;\n" RESULT_F32, {F(4.0f), 0, 0, F(0.25f)});
    CHECK_CASES("rcp.rn.f64 %fd20, %fd10;\n" RESULT_F64, {D(3.0), 0, 0, D(1.0 / 3.0)});
    CHECK_CASES("sqrt.rn.f32 %f20, %f10;\n" RESULT_F32, {F(2.0f), 0, 0, F(0x1.6a09e6p+0f)});
    CHECK_CASES("sqrt.rp.f32 %f20, %f10;\n" RESULT_F32, {F(2.0f), 0, 0, F(0x1.6a09e8p+0f)});
    CHECK_CASES("sqrt.rn.f64 %fd20, %fd10;\n" RESULT_F64, {D(2.0), 0, 0, D(0x1.6a09e667f3bcdp+0)});
    CHECK_CASES("rsqrt.approx.f32 %f20, %f10;\n" RESULT_F32, {F(4.0f), 0, 0, F(0.5f)});
    CHECK_CASES("ex2.approx.f32 %f20, %f10;\n" RESULT_F32, {F(3.0f), 0, 0, F(8.0f)});
    CHECK_CASES("lg2.approx.f32 %f20, %f10;\n" RESULT_F32, {F(8.0f), 0, 0, F(3.0f)});
    CHECK_CASES("sin.approx.f32 %f20, %f10;\n" RESULT_F32, {F(0.0f), 0, 0, F(0.0f)});
    CHECK_CASES("cos.approx.f32 %f20, %f10;\n" RESULT_F32, {F(0.0f), 0, 0, F(1.0f)});
    CHECK_CASES("tanh.approx.f32 %f20, %f10;\n" RESULT_F32, {F(0.0f), 0, 0, F(0.0f)},
                {F(20.0f), 0, 0, F(1.0f)}, {F(-20.0f), 0, 0, F(-1.0f)});
}

Test(ptx_float, min_max_abs_neg_and_nans)
{
    start_device(0);
    CHECK_CASES("min.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f), F(-2.0f), 0, F(-2.0f)},
                {F(NAN), F(5.0f), 0, F(5.0f)});
    CHECK_CASES("max.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(1.0f), F(-2.0f), 0, F(1.0f)},
                {F(4.0f), F(NAN), 0, F(4.0f)});
    CHECK_CASES("max.f64 %fd20, %fd10, %fd11;\n" RESULT_F64, {D(1.0), D(2.0), 0, D(2.0)});
    CHECK_CASES("abs.f32 %f20, %f10;\n" RESULT_F32, {F(-3.5f), 0, 0, F(3.5f)});
    CHECK_CASES("neg.f32 %f20, %f10;\n" RESULT_F32, {F(0.0f), 0, 0, F(-0.0f)});
    CHECK_CASES("neg.f64 %fd20, %fd10;\n" RESULT_F64, {D(2.0), 0, 0, D(-2.0)});
    CHECK_CASES("abs.f64 %fd20, %fd10;\n" RESULT_F64, {D(-2.0), 0, 0, D(2.0)});
    CHECK_CASES("copysign.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(-1.0f), F(3.0f), 0, F(-3.0f)});
    CHECK_CASES("testp.notanumber.f32 %p1, %f10;\n" RESULT_PRED, {F(NAN), 0, 0, 1}, {F(1.0f), 0, 0, 0});
    CHECK_CASES("testp.finite.f64 %p1, %fd10;\n" RESULT_PRED, {D(INFINITY), 0, 0, 0}, {D(1.0), 0, 0, 1});
    CHECK_CASES("testp.subnormal.f32 %p1, %f10;\n" RESULT_PRED, {F(0x1p-130f), 0, 0, 1});
    /* .ftz flushes subnormal inputs and results to zero. */
    CHECK_CASES("add.ftz.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(0x1p-130f), F(0.0f), 0, F(0.0f)});
    CHECK_CASES("add.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(0x1p-130f), F(0.0f), 0, F(0x1p-130f)});
    CHECK_CASES("mul.sat.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(2.0f), F(3.0f), 0, F(1.0f)});
}

Test(ptx_float, compares_ordered_and_unordered)
{
    start_device(0);
    CHECK_CASES("setp.lt.f32 %p1, %f10, %f11;\n" RESULT_PRED, {F(1.0f), F(2.0f), 0, 1}, {F(NAN), F(2.0f), 0, 0});
    CHECK_CASES("setp.ltu.f32 %p1, %f10, %f11;\n" RESULT_PRED, {F(NAN), F(2.0f), 0, 1}, {F(3.0f), F(2.0f), 0, 0});
    CHECK_CASES("setp.ne.f32 %p1, %f10, %f11;\n" RESULT_PRED, {F(NAN), F(NAN), 0, 0});
    CHECK_CASES("setp.neu.f32 %p1, %f10, %f11;\n" RESULT_PRED, {F(NAN), F(NAN), 0, 1});
    CHECK_CASES("setp.num.f64 %p1, %fd10, %fd11;\n" RESULT_PRED, {D(1.0), D(2.0), 0, 1}, {D(NAN), D(2.0), 0, 0});
    CHECK_CASES("setp.nan.f64 %p1, %fd10, %fd11;\n" RESULT_PRED, {D(1.0), D(NAN), 0, 1});
    CHECK_CASES("setp.geu.f64 %p1, %fd10, %fd11;\n" RESULT_PRED, {D(1.0), D(2.0), 0, 0});
    CHECK_CASES("set.gt.f32.f32 %f20, %f10, %f11;\n" RESULT_F32, {F(3.0f), F(2.0f), 0, F(1.0f)});
    CHECK_CASES("selp.f32 %f20, %f10, %f11, %p0;\nsetp.eq.f32 %p0, %f10, %f10;\nselp.f32 %f20, %f10, %f11, %p0;\n" RESULT_F32,
                {F(1.0f), F(2.0f), 0, F(1.0f)}, {F(NAN), F(2.0f), 0, F(2.0f)});
}

Test(ptx_float, conversions)
{
    start_device(0);
    CHECK_CASES("cvt.rn.f32.s32 %f20, %r10;\n" RESULT_F32, {U32(-7), 0, 0, F(-7.0f)},
                {16777217, 0, 0, F(16777216.0f)});
    CHECK_CASES("cvt.rp.f32.u32 %f20, %r10;\n" RESULT_F32, {16777217, 0, 0, F(16777218.0f)});
    CHECK_CASES("cvt.rz.f32.u32 %f20, %r10;\n" RESULT_F32, {0xffffffffu, 0, 0, F(0x1.fffffep31f)});
    CHECK_CASES("cvt.rn.f64.s64 %fd20, %rd10;\n" RESULT_F64, {(uint64_t)-3LL, 0, 0, D(-3.0)});
    CHECK_CASES("cvt.rn.f32.u64 %f20, %rd10;\n" RESULT_F32, {0xffffffffffffffffull, 0, 0, F(0x1p64f)});
    CHECK_CASES("cvt.rzi.s32.f32 %r20, %f10;\n" RESULT_R32, {F(-2.7f), 0, 0, U32(-2)}, {F(2.7f), 0, 0, 2});
    CHECK_CASES("cvt.rni.s32.f32 %r20, %f10;\n" RESULT_R32, {F(2.5f), 0, 0, 2}, {F(3.5f), 0, 0, 4},
                {F(-2.5f), 0, 0, U32(-2)});
    CHECK_CASES("cvt.rmi.s32.f32 %r20, %f10;\n" RESULT_R32, {F(-2.1f), 0, 0, U32(-3)});
    CHECK_CASES("cvt.rpi.s32.f32 %r20, %f10;\n" RESULT_R32, {F(2.1f), 0, 0, 3});
    /* Out of range saturates, NaN becomes 0. */
    CHECK_CASES("cvt.rzi.s32.f32 %r20, %f10;\n" RESULT_R32, {F(3e9f), 0, 0, 0x7fffffffu}, {F(-3e9f), 0, 0, 0x80000000u},
                {F(NAN), 0, 0, 0});
    CHECK_CASES("cvt.rzi.u32.f32 %r20, %f10;\n" RESULT_R32, {F(-5.0f), 0, 0, 0}, {F(5e9f), 0, 0, 0xffffffffu});
    CHECK_CASES("cvt.rzi.s64.f64 %rd20, %fd10;\n", {D(-1e30), 0, 0, 0x8000000000000000ull},
                {D(123456789012.9), 0, 0, 123456789012ull});
    CHECK_CASES("cvt.rzi.u64.f32 %rd20, %f10;\n", {F(1e19f), 0, 0, (uint64_t)1e19f});
    CHECK_CASES("cvt.f64.f32 %fd20, %f10;\n" RESULT_F64, {F(0.1f), 0, 0, D((double)0.1f)});
    CHECK_CASES("cvt.rn.f32.f64 %f20, %fd10;\n" RESULT_F32, {D(0.1), 0, 0, F(0.1f)});
    CHECK_CASES("cvt.rz.f32.f64 %f20, %fd10;\n" RESULT_F32, {D(1.0 + 0x1p-30), 0, 0, F(1.0f)});
    CHECK_CASES("cvt.rp.f32.f64 %f20, %fd10;\n" RESULT_F32, {D(1.0 + 0x1p-30), 0, 0, F(1.0f + 0x1p-23f)});
    CHECK_CASES("cvt.rni.f32.f32 %f20, %f10;\n" RESULT_F32, {F(2.5f), 0, 0, F(2.0f)});
    CHECK_CASES("cvt.rmi.f64.f64 %fd20, %fd10;\n" RESULT_F64, {D(-0.5), 0, 0, D(-1.0)});
    CHECK_CASES("cvt.sat.f32.f32 %f20, %f10;\n" RESULT_F32, {F(1.5f), 0, 0, F(1.0f)}, {F(-1.5f), 0, 0, F(0.0f)});
    /* Half precision: 1.5 is 0x3e00; 65520 and above overflow to infinity. */
    CHECK_CASES("cvt.rn.f16.f32 %rs1, %f10;\ncvt.u32.u16 %r20, %rs1;\n" RESULT_R32, {F(1.5f), 0, 0, 0x3e00},
                {F(70000.0f), 0, 0, 0x7c00}, {F(-0.0f), 0, 0, 0x8000}, {F(0x1p-24f), 0, 0, 0x0001});
    CHECK_CASES("mov.b16 %rs1, 0x3c00;\ncvt.f32.f16 %f20, %rs1;\n" RESULT_F32, {0, 0, 0, F(1.0f)});
    CHECK_CASES("cvt.u16.u32 %rs1, %r10;\ncvt.f32.f16 %f20, %rs1;\n" RESULT_F32, {0xc000, 0, 0, F(-2.0f)},
                {0x0001, 0, 0, F(0x1p-24f)});
    CHECK_CASES("cvt.rn.bf16.f32 %rs1, %f10;\ncvt.f32.bf16 %f20, %rs1;\n" RESULT_F32, {F(1.0f + 0x1p-9f), 0, 0, F(1.0f)},
                {F(3.0f), 0, 0, F(3.0f)});
}

#define HALF_IN "cvt.u16.u32 %rs1, %r10;\ncvt.u16.u32 %rs2, %r11;\ncvt.u16.u32 %rs3, %r12;\n"
#define HALF_OUT "cvt.u32.u16 %r20, %rs4;\n" RESULT_R32

Test(ptx_float, half_precision_arithmetic)
{
    start_device(0);
    /* 1.5 + 2.25 = 3.75; 2048 + 1 rounds to even (2048) at f16's precision. */
    CHECK_CASES(HALF_IN "add.f16 %rs4, %rs1, %rs2;\n" HALF_OUT, {0x3e00, 0x4080, 0, 0x4380}, {0x6800, 0x3c00, 0, 0x6800},
                {0x6800, 0x4000, 0, 0x6801});
    CHECK_CASES(HALF_IN "sub.f16 %rs4, %rs1, %rs2;\n" HALF_OUT, {0x3c00, 0x4000, 0, 0xbc00});
    CHECK_CASES(HALF_IN "mul.rn.f16 %rs4, %rs1, %rs2;\n" HALF_OUT, {0x3c00, 0x4000, 0, 0x4000}, {0x7bff, 0x4000, 0, 0x7c00});
    CHECK_CASES(HALF_IN "fma.rn.f16 %rs4, %rs1, %rs2, %rs3;\n" HALF_OUT, {0x4000, 0x4200, 0x3c00, 0x4700});
    CHECK_CASES(HALF_IN "neg.f16 %rs4, %rs1;\n" HALF_OUT, {0x3c00, 0, 0, 0xbc00});
    CHECK_CASES(HALF_IN "max.f16 %rs4, %rs1, %rs2;\n" HALF_OUT, {0xbc00, 0x3c00, 0, 0x3c00});
    CHECK_CASES(HALF_IN "setp.lt.f16 %p1, %rs1, %rs2;\n" RESULT_PRED, {0xbc00, 0x3c00, 0, 1}, {0x3c00, 0xbc00, 0, 0});
    /* Pairs: each 16-bit half on its own. */
    CHECK_CASES("add.rn.f16x2 %r20, %r10, %r11;\n" RESULT_R32, {0x3c004000, 0x3c003c00, 0, 0x40004200});
    CHECK_CASES("fma.rn.f16x2 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x40004000, 0x42003c00, 0x3c003c00, 0x47004200});
    CHECK_CASES("abs.f16x2 %r20, %r10;\n" RESULT_R32, {0xbc00bc00u, 0, 0, 0x3c003c00u});
    CHECK_CASES("add.bf16 %rs4, %rs1, %rs2;\ncvt.u16.u32 %rs1, %r10;\ncvt.u16.u32 %rs2, %r11;\nadd.rn.bf16 %rs4, %rs1, %rs2;\n"
                HALF_OUT, {0x3f80, 0x4000, 0, 0x4040});
    CHECK_CASES("mul.rn.bf16x2 %r20, %r10, %r11;\n" RESULT_R32, {0x3f804000, 0x40004000, 0, 0x40004080});
}

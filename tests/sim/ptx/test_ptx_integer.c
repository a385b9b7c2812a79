/* Integer and bitwise instructions: each form against values computed by
 * the C compiler or worked out by hand from the PTX ISA. */
#include "ptx_test_support.h"

TestSuite(ptx_integer, .init = NULL);

#define START() start_device(0)

Test(ptx_integer, add_sub_wrap_at_their_width)
{
    START();
    CHECK_CASES("add.s32 %r20, %r10, %r11;\n" RESULT_R32,
                {0x7fffffff, 1, 0, 0x80000000u}, {U32(-5), 3, 0, U32(-2)}, {0xffffffff, 1, 0, 0});
    CHECK_CASES("sub.s32 %r20, %r10, %r11;\n" RESULT_R32, {3, 5, 0, U32(-2)}, {0, 1, 0, 0xffffffffu});
    CHECK_CASES("add.s64 %rd20, %rd10, %rd11;\n", {0xffffffffffffffffull, 2, 0, 1},
                {0x100000000ull, 0xffffffffull, 0, 0x1ffffffffull});
    CHECK_CASES("sub.u64 %rd20, %rd10, %rd11;\n", {0, 1, 0, 0xffffffffffffffffull});
    CHECK_CASES("add.sat.s32 %r20, %r10, %r11;\n" RESULT_R32, {0x7fffffff, 1, 0, 0x7fffffff},
                {0x80000000u, U32(-1), 0, 0x80000000u}, {5, 6, 0, 11});
}

Test(ptx_integer, carry_chains)
{
    START();
    /* A 64-bit add from 32-bit halves: add.cc then addc. */
    const char *body = "mov.b64 {%r2, %r3}, %rd10;\nmov.b64 {%r4, %r5}, %rd11;\n"
                       "add.cc.u32 %r6, %r2, %r4;\naddc.u32 %r7, %r3, %r5;\nmov.b64 %rd20, {%r6, %r7};\n";
    CHECK_CASES(body, {0xffffffffull, 1, 0, 0x100000000ull}, {0x12345678ffffffffull, 0x1, 0, 0x1234567900000000ull});
    const char *subtract = "mov.b64 {%r2, %r3}, %rd10;\nmov.b64 {%r4, %r5}, %rd11;\n"
                           "sub.cc.u32 %r6, %r2, %r4;\nsubc.u32 %r7, %r3, %r5;\nmov.b64 %rd20, {%r6, %r7};\n";
    CHECK_CASES(subtract, {0x100000000ull, 1, 0, 0xffffffffull}, {5, 7, 0, 0xfffffffffffffffeull});
    /* madc adds the carry that add.cc left: c * 2 + 5 + carry. */
    CHECK_CASES("add.cc.u32 %r6, %r10, %r11;\nmadc.lo.u32 %r20, %r12, 2, 5;\n" RESULT_R32,
                {0xffffffffu, 1, 10, 26}, {1, 1, 10, 25});
}

Test(ptx_integer, multiplies)
{
    START();
    CHECK_CASES("mul.lo.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-3), 7, 0, U32(-21)},
                {0x10000, 0x10000, 0, 0});
    CHECK_CASES("mul.hi.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-3), 7, 0, 0xffffffffu},
                {0x40000000, 8, 0, 2});
    CHECK_CASES("mul.hi.u32 %r20, %r10, %r11;\n" RESULT_R32, {0xffffffffu, 0xffffffffu, 0, 0xfffffffeu});
    CHECK_CASES("mul.wide.s32 %rd20, %r10, %r11;\n", {U32(-2), 0x40000000, 0, (uint64_t)(-2LL * 0x40000000)});
    CHECK_CASES("mul.wide.u32 %rd20, %r10, %r11;\n", {0xffffffffu, 2, 0, 0x1fffffffeull});
    CHECK_CASES("mul.wide.u16 %r20, %rs1, %rs2;\n" RESULT_R32 , {0, 0, 0, 0});
    CHECK_CASES("mul.hi.u64 %rd20, %rd10, %rd11;\n", {0xffffffffffffffffull, 0xffffffffffffffffull, 0,
                                                       0xfffffffffffffffeull});
    CHECK_CASES("mul.hi.s64 %rd20, %rd10, %rd11;\n", {(uint64_t)-1LL, 5, 0, (uint64_t)-1LL});
    CHECK_CASES("mul.lo.u64 %rd20, %rd10, %rd11;\n", {0x100000001ull, 0x100000001ull, 0, 0x200000001ull});
    CHECK_CASES("mad.lo.s32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {3, 4, 5, 17}, {U32(-3), 4, 5, U32(-7)});
    CHECK_CASES("mad.wide.s32 %rd20, %r10, %r11, %rd12;\n", {U32(-1), 3, 10, 7});
    CHECK_CASES("mad.hi.u32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x80000000u, 4, 1, 3});
    CHECK_CASES("mul24.lo.u32 %r20, %r10, %r11;\n" RESULT_R32, {0x1000001, 3, 0, 3});
    CHECK_CASES("mad24.lo.s32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0xffffff, 2, 1, U32(-1)});
    CHECK_CASES("sad.u32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {3, 10, 1, 8}, {10, 3, 0, 7});
}

Test(ptx_integer, divide_and_remainder)
{
    START();
    CHECK_CASES("div.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-7), 2, 0, U32(-3)}, {7, U32(-2), 0, U32(-3)},
                {0x80000000u, U32(-1), 0, 0x80000000u});
    CHECK_CASES("div.u32 %r20, %r10, %r11;\n" RESULT_R32, {0xffffffffu, 2, 0, 0x7fffffffu},
                {5, 0, 0, 0xffffffffu});
    CHECK_CASES("rem.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-7), 2, 0, U32(-1)}, {7, U32(-3), 0, 1});
    CHECK_CASES("rem.u32 %r20, %r10, %r11;\n" RESULT_R32, {17, 5, 0, 2});
    CHECK_CASES("div.s64 %rd20, %rd10, %rd11;\n", {(uint64_t)-100LL, 7, 0, (uint64_t)-14LL});
    CHECK_CASES("rem.u64 %rd20, %rd10, %rd11;\n", {1000000000007ull, 1000, 0, 7});
}

Test(ptx_integer, abs_neg_min_max)
{
    START();
    CHECK_CASES("abs.s32 %r20, %r10;\n" RESULT_R32, {U32(-5), 0, 0, 5}, {0x80000000u, 0, 0, 0x80000000u});
    CHECK_CASES("neg.s32 %r20, %r10;\n" RESULT_R32, {5, 0, 0, U32(-5)});
    CHECK_CASES("neg.s64 %rd20, %rd10;\n", {1, 0, 0, 0xffffffffffffffffull});
    CHECK_CASES("min.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-1), 1, 0, U32(-1)});
    CHECK_CASES("min.u32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-1), 1, 0, 1});
    CHECK_CASES("max.s32 %r20, %r10, %r11;\n" RESULT_R32, {U32(-1), 1, 0, 1});
    CHECK_CASES("max.u64 %rd20, %rd10, %rd11;\n", {(uint64_t)-1LL, 1, 0, (uint64_t)-1LL});
    CHECK_CASES("min.s64 %rd20, %rd10, %rd11;\n", {(uint64_t)-1LL, 1, 0, (uint64_t)-1LL});
}

Test(ptx_integer, logic_and_shifts)
{
    START();
    CHECK_CASES("and.b32 %r20, %r10, %r11;\n" RESULT_R32, {0xf0f0, 0xff00, 0, 0xf000});
    CHECK_CASES("or.b32 %r20, %r10, %r11;\n" RESULT_R32, {0xf0f0, 0xff00, 0, 0xfff0});
    CHECK_CASES("xor.b32 %r20, %r10, %r11;\n" RESULT_R32, {0xf0f0, 0xff00, 0, 0x0ff0});
    CHECK_CASES("not.b32 %r20, %r10;\n" RESULT_R32, {0, 0, 0, 0xffffffffu});
    CHECK_CASES("cnot.b32 %r20, %r10;\n" RESULT_R32, {0, 0, 0, 1}, {7, 0, 0, 0});
    CHECK_CASES("xor.b64 %rd20, %rd10, %rd11;\n", {0xff00ff00ff00ff00ull, 0xffffffffffffffffull, 0,
                                                    0x00ff00ff00ff00ffull});
    CHECK_CASES("shl.b32 %r20, %r10, %r11;\n" RESULT_R32, {1, 31, 0, 0x80000000u}, {1, 32, 0, 0}, {3, 40, 0, 0});
    CHECK_CASES("shr.u32 %r20, %r10, %r11;\n" RESULT_R32, {0x80000000u, 31, 0, 1}, {0x80000000u, 33, 0, 0});
    CHECK_CASES("shr.s32 %r20, %r10, %r11;\n" RESULT_R32, {0x80000000u, 4, 0, 0xf8000000u},
                {0x80000000u, 40, 0, 0xffffffffu});
    CHECK_CASES("shl.b64 %rd20, %rd10, %r11;\n", {1, 63, 0, 0x8000000000000000ull});
    CHECK_CASES("shr.s64 %rd20, %rd10, %r11;\n", {0x8000000000000000ull, 63, 0, 0xffffffffffffffffull});
    CHECK_CASES("shl.b32 %r20, %r10, 4;\n" RESULT_R32, {0x0fffffff, 0, 0, 0xfffffff0u});
    CHECK_CASES("and.pred %p3, %p1, %p2;\nsetp.ne.s32 %p1, %r10, 0;\nsetp.ne.s32 %p2, %r11, 0;\n"
                "and.pred %p1, %p1, %p2;\n" RESULT_PRED, {1, 1, 0, 1}, {1, 0, 0, 0});
    CHECK_CASES("setp.ne.s32 %p2, %r10, 0;\nnot.pred %p1, %p2;\n" RESULT_PRED, {0, 0, 0, 1}, {3, 0, 0, 0});
}

Test(ptx_integer, bit_manipulation)
{
    START();
    CHECK_CASES("popc.b32 %r20, %r10;\n" RESULT_R32, {0xf0f0f0f0u, 0, 0, 16}, {0, 0, 0, 0});
    CHECK_CASES("popc.b64 %r20, %rd10;\n" RESULT_R32, {0xffffffffffffffffull, 0, 0, 64});
    CHECK_CASES("clz.b32 %r20, %r10;\n" RESULT_R32, {1, 0, 0, 31}, {0, 0, 0, 32}, {0x80000000u, 0, 0, 0});
    CHECK_CASES("clz.b64 %r20, %rd10;\n" RESULT_R32, {1, 0, 0, 63}, {0, 0, 0, 64});
    CHECK_CASES("brev.b32 %r20, %r10;\n" RESULT_R32, {1, 0, 0, 0x80000000u}, {0x0000ff00u, 0, 0, 0x00ff0000u});
    CHECK_CASES("brev.b64 %rd20, %rd10;\n", {1, 0, 0, 0x8000000000000000ull});
    CHECK_CASES("bfe.u32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x12345678u, 8, 8, 0x56}, {0xffffffffu, 28, 8, 0xf},
                {0x12345678u, 0, 0, 0});
    CHECK_CASES("bfe.s32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x0000f000u, 12, 4, 0xffffffffu},
                {0x00007000u, 12, 4, 7});
    CHECK_CASES("bfi.b32 %r20, %r10, %r11, %r12, 8;\n" RESULT_R32, {0xab, 0x11111111u, 8, 0x1111ab11u});
    CHECK_CASES("prmt.b32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x33221100u, 0x77665544u, 0x5410, 0x55441100u},
                {0x33221100u, 0x77665544u, 0x0123, 0x00112233u}, {0x00008000u, 0, 0x9999, 0xffffffffu});
    /* lop3 0x96 is a ^ b ^ c; 0xe8 is the majority function. */
    CHECK_CASES("lop3.b32 %r20, %r10, %r11, %r12, 0x96;\n" RESULT_R32, {0xf0, 0xcc, 0xaa, 0xf0 ^ 0xcc ^ 0xaa});
    CHECK_CASES("lop3.b32 %r20, %r10, %r11, %r12, 0xe8;\n" RESULT_R32, {0xf0, 0xcc, 0xaa, 0xe8});
    CHECK_CASES("shf.l.wrap.b32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x80000000u, 0x1, 4, 0x18}, {1, 2, 36, 0x20});
    CHECK_CASES("shf.r.clamp.b32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x10, 0x1, 4, 0x10000001u},
                {0x10, 0x1, 40, 0x1});
    CHECK_CASES("bfind.u32 %r20, %r10;\n" RESULT_R32, {0x00010000u, 0, 0, 16}, {0, 0, 0, 0xffffffffu});
    CHECK_CASES("bfind.s32 %r20, %r10;\n" RESULT_R32, {U32(-1), 0, 0, 0xffffffffu}, {U32(-2), 0, 0, 0});
    CHECK_CASES("dp4a.u32.u32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x01020304u, 0x01010101u, 100, 110});
    CHECK_CASES("dp4a.s32.s32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {0x000000ffu, 0x00000002u, 0, U32(-2)});
}

Test(ptx_integer, compares_and_selects)
{
    START();
    CHECK_CASES("setp.lt.s32 %p1, %r10, %r11;\n" RESULT_PRED, {U32(-1), 0, 0, 1}, {1, 0, 0, 0});
    CHECK_CASES("setp.lo.u32 %p1, %r10, %r11;\n" RESULT_PRED, {U32(-1), 0, 0, 0}, {0, 1, 0, 1});
    CHECK_CASES("setp.hs.u64 %p1, %rd10, %rd11;\n" RESULT_PRED, {5, 5, 0, 1});
    CHECK_CASES("setp.ge.s64 %p1, %rd10, %rd11;\n" RESULT_PRED, {(uint64_t)-1LL, 0, 0, 0});
    /* p|q: q is the complement; .and folds in a third predicate. */
    CHECK_CASES("setp.eq.s32 %p2|%p1, %r10, %r11;\n" RESULT_PRED, {1, 1, 0, 0}, {1, 2, 0, 1});
    CHECK_CASES("setp.ne.s32 %p3, %r12, 0;\nsetp.gt.s32.and %p1, %r10, %r11, %p3;\n" RESULT_PRED , {0, 0, 0, 0});
    CHECK_CASES("setp.ne.s32 %p3, %r12, 0;\nsetp.gt.and.s32 %p1, %r10, %r11, %p3;\n" RESULT_PRED, {2, 1, 1, 1},
                {2, 1, 0, 0}, {1, 2, 1, 0});
    CHECK_CASES("setp.ne.s32 %p3, %r12, 0;\nsetp.gt.or.s32 %p1, %r10, %r11, !%p3;\n" RESULT_PRED, {1, 2, 0, 1},
                {1, 2, 1, 0});
    CHECK_CASES("setp.ne.s32 %p1, %r12, 0;\nselp.b32 %r20, %r10, %r11, %p1;\n" RESULT_R32, {7, 9, 1, 7}, {7, 9, 0, 9});
    CHECK_CASES("slct.u32.s32 %r20, %r10, %r11, %r12;\n" RESULT_R32, {7, 9, U32(-1), 9}, {7, 9, 0, 7});
    CHECK_CASES("set.lt.u32.s32 %r20, %r10, %r11;\n" RESULT_R32, {1, 2, 0, 0xffffffffu}, {2, 1, 0, 0});
}

Test(ptx_integer, conversions_between_integers)
{
    START();
    CHECK_CASES("cvt.u16.u32 %rs1, %r10;\ncvt.s32.s16 %r20, %rs1;\n" RESULT_R32, {0x18000, 0, 0, 0xffff8000u});
    CHECK_CASES("cvt.s32.s8 %r20, %r10;\n" RESULT_R32, {0x80, 0, 0, 0xffffff80u}, {0x17f, 0, 0, 0x7f});
    CHECK_CASES("cvt.u32.u8 %r20, %r10;\n" RESULT_R32, {0x1ff, 0, 0, 0xff});
    CHECK_CASES("cvt.s64.s32 %rd20, %r10;\n", {0xfffffffeu, 0, 0, 0xfffffffffffffffeull});
    CHECK_CASES("cvt.u64.u32 %rd20, %r10;\n", {0xfffffffeu, 0, 0, 0xfffffffeull});
    CHECK_CASES("cvt.u32.u64 %r20, %rd10;\n" RESULT_R32, {0x1234567890ull, 0, 0, 0x34567890u});
    CHECK_CASES("cvt.sat.u8.s32 %r20, %r10;\n" RESULT_R32, {U32(-5), 0, 0, 0}, {300, 0, 0, 255}, {17, 0, 0, 17});
    CHECK_CASES("cvt.sat.s8.s32 %r20, %r10;\n" RESULT_R32, {U32(-500), 0, 0, 0xffffff80u}, {500, 0, 0, 127});
    CHECK_CASES("cvt.sat.u32.s64 %r20, %rd10;\n" RESULT_R32, {(uint64_t)-1LL, 0, 0, 0}, {0x100000000ull, 0, 0, 0xffffffffu});
}

Test(ptx_integer, moves_pack_and_unpack)
{
    START();
    CHECK_CASES("mov.b64 {%r2, %r3}, %rd10;\nmov.b64 %rd20, {%r3, %r2};\n", {0x1111111122222222ull, 0, 0,
                                                                            0x2222222211111111ull});
    CHECK_CASES("mov.b32 {%rs1, %rs2}, %r10;\nmov.b32 %r20, {%rs2, %rs1};\n" RESULT_R32, {0xaaaabbbbu, 0, 0, 0xbbbbaaaau});
    CHECK_CASES("mov.u32 %r20, 0x7fffffff;\n" RESULT_R32, {0, 0, 0, 0x7fffffffu});
    CHECK_CASES("mov.u64 %rd20, -1;\n", {0, 0, 0, 0xffffffffffffffffull});
    CHECK_CASES("mov.u64 %rd20, -9223372036854775808;\n", {0, 0, 0, 0x8000000000000000ull});
    CHECK_CASES("mov.b32 %r20, 0f3F800000;\n" RESULT_R32, {0, 0, 0, 0x3f800000u});
}

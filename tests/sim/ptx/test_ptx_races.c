/* GPUSIM_RACECHECK sees kernels: every global load, store and atomic of a
 * running grid is an access of its operation, ordered like any stream work.
 * Each ordering case is a pair: ordered, no race; unordered, exactly one.
 *
 * Kernels report what they touch only while they run, after later work has
 * been queued; several tests hold a kernel back behind a host function so
 * that work queued after it (ordered or not) is recorded first. */
#include <stdatomic.h>
#include <unistd.h>

#include "ptx_test_support.h"
#include "../racecheck_test_support.h"

#define WORDS 1024u
#define BYTES (WORDS * 4u)
#define BLOCK 256u

static const char kernels_ptx[] =
    PTX_HEADER
    /* p[i] = v for i < n */
    ".visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.param.u32 %r2, [v];\n"
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\n"
    "mad.lo.s32 %r6, %r3, %r4, %r5;\nsetp.ge.u32 %p1, %r6, %r1;\n@%p1 bra DONE;\n"
    "mul.wide.u32 %rd2, %r6, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r2;\n"
    "DONE:\nret;\n}\n"
    /* d[i] = s[i] for i < n */
    ".visible .entry copy(.param .u64 d, .param .u64 s, .param .u32 n)\n{\n"
    ".reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [d];\nld.param.u64 %rd2, [s];\nld.param.u32 %r1, [n];\n"
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\n"
    "mad.lo.s32 %r6, %r3, %r4, %r5;\nsetp.ge.u32 %p1, %r6, %r1;\n@%p1 bra DONE;\n"
    "mul.wide.u32 %rd3, %r6, 4;\nadd.s64 %rd4, %rd2, %rd3;\nld.global.u32 %r2, [%rd4];\n"
    "add.s64 %rd5, %rd1, %rd3;\nst.global.u32 [%rd5], %r2;\n"
    "DONE:\nret;\n}\n"
    /* every thread adds 1 to *p */
    ".visible .entry count(.param .u64 p)\n{\n"
    ".reg .b32 %r<4>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\natom.global.add.u32 %r1, [%rd1], 1;\nret;\n}\n"
    /* generic-address store of v at p[0] */
    ".visible .entry store_generic(.param .u64 p, .param .u32 v)\n{\n"
    ".reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\nld.param.u32 %r1, [v];\nst.u32 [%rd1], %r1;\nret;\n}\n";

TestSuite(ptx_races, .init = racecheck_on);

struct fixture {
    CUmodule module;
    CUfunction fill, copy, count, store_generic;
    CUdeviceptr buffer, other;
    CUstream first, second; /* non-blocking */
};

static struct fixture start(void)
{
    start_device(0);
    struct fixture f;
    f.module = load_ptx(kernels_ptx);
    f.fill = kernel_of(f.module, "fill");
    f.copy = kernel_of(f.module, "copy");
    f.count = kernel_of(f.module, "count");
    f.store_generic = kernel_of(f.module, "store_generic");
    EXPECT_OK(cuMemAlloc(&f.buffer, BYTES));
    EXPECT_OK(cuMemAlloc(&f.other, BYTES));
    EXPECT_OK(cuMemsetD8(f.buffer, 0, BYTES));
    EXPECT_OK(cuMemsetD8(f.other, 0, BYTES));
    /* cuMemsetD8 may return before it is done: order it before the
     * non-blocking streams' work. */
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuStreamCreate(&f.first, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuStreamCreate(&f.second, CU_STREAM_NON_BLOCKING));
    return f;
}

/* Fills `words` words at `address` with `value` on `stream`. */
static void fill_on(const struct fixture *f, CUdeviceptr address, unsigned words, unsigned value,
                    CUstream stream)
{
    void *params[] = {&address, &words, &value};
    EXPECT_OK(cuLaunchKernel(f->fill, (words + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, stream,
                             params, NULL));
}

static void copy_on(const struct fixture *f, CUdeviceptr target, CUdeviceptr source, CUstream stream)
{
    unsigned words = WORDS;
    void *params[] = {&target, &source, &words};
    EXPECT_OK(cuLaunchKernel(f->copy, WORDS / BLOCK, 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
}

static void count_on(const struct fixture *f, CUdeviceptr counter, CUstream stream)
{
    void *params[] = {&counter};
    EXPECT_OK(cuLaunchKernel(f->count, 2, 1, 1, 64, 1, 1, 0, stream, params, NULL));
}

static void hold(CUstream stream, atomic_int *flag)
{
    EXPECT_OK(cuLaunchHostFunc(stream, wait_for_flag, flag));
}

Test(ptx_races, kernels_in_one_stream_are_ordered)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    fill_on(&f, f.buffer, WORDS, 2, f.first);
    copy_on(&f, f.other, f.buffer, f.first);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(ptx_races, kernels_on_two_non_blocking_streams_race)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    fill_on(&f, f.buffer, WORDS, 2, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, kernels_touching_disjoint_words_do_not_race)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS / 2, 1, f.first);
    fill_on(&f, f.buffer + BYTES / 2, WORDS / 2, 2, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(ptx_races, an_event_wait_orders_a_kernel_before_another_streams_kernel)
{
    struct fixture f = start();
    CUevent event;
    EXPECT_OK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    EXPECT_OK(cuEventRecord(event, f.first));
    EXPECT_OK(cuStreamWaitEvent(f.second, event, 0));
    copy_on(&f, f.other, f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(ptx_races, a_kernel_reading_what_another_stream_writes_races)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    copy_on(&f, f.other, f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, kernels_reading_the_same_words_do_not_race)
{
    struct fixture f = start();
    CUdeviceptr third;
    EXPECT_OK(cuMemAlloc(&third, BYTES));
    copy_on(&f, f.other, f.buffer, f.first);
    copy_on(&f, third, f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

/* Work ordered after a kernel that has not run yet is recorded before the
 * kernel's own accesses; it must still count as after them. */
Test(ptx_races, work_ordered_after_a_held_kernel_is_no_race)
{
    struct fixture f = start();
    atomic_int go = 0;
    CUevent event;
    EXPECT_OK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    hold(f.first, &go);
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    EXPECT_OK(cuEventRecord(event, f.first));
    EXPECT_OK(cuStreamWaitEvent(f.second, event, 0));
    EXPECT_OK(cuMemsetD8Async(f.buffer, 7, BYTES, f.second));
    EXPECT_OK(cuMemcpyDtoDAsync(f.other, f.buffer, BYTES, f.second));
    atomic_store(&go, 1);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    uint32_t word;
    EXPECT_OK(cuMemcpyDtoH(&word, f.other, 4));
    cr_expect_eq(word, 0x07070707u);
}

Test(ptx_races, work_unordered_with_a_held_kernel_races)
{
    struct fixture f = start();
    atomic_int go = 0;
    hold(f.first, &go);
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    EXPECT_OK(cuMemsetD8Async(f.buffer, 7, BYTES, f.second));
    EXPECT_OK(cuStreamSynchronize(f.second));
    atomic_store(&go, 1);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, a_copy_reading_a_kernels_output_on_another_stream_races)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    EXPECT_OK(cuMemcpyDtoDAsync(f.other, f.buffer, BYTES, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, stream_synchronize_orders_a_kernel_before_later_work)
{
    struct fixture f = start();
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    EXPECT_OK(cuStreamSynchronize(f.first));
    fill_on(&f, f.buffer, WORDS, 2, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(ptx_races, atomics_of_two_streams_do_not_race)
{
    struct fixture f = start();
    count_on(&f, f.buffer, f.first);
    count_on(&f, f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    uint32_t total;
    EXPECT_OK(cuMemcpyDtoH(&total, f.buffer, 4));
    cr_expect_eq(total, 256u);
}

Test(ptx_races, an_atomic_unordered_with_a_plain_store_races)
{
    struct fixture f = start();
    count_on(&f, f.buffer, f.first);
    fill_on(&f, f.buffer, 1, 5, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, a_generic_address_store_is_an_access)
{
    struct fixture f = start();
    unsigned value = 9;
    void *params[] = {&f.buffer, &value};
    EXPECT_OK(cuLaunchKernel(f.store_generic, 1, 1, 1, 1, 1, 1, 0, f.first, params, NULL));
    EXPECT_OK(cuMemsetD8Async(f.buffer, 0, 4, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, a_free_unordered_with_a_kernel_races)
{
    struct fixture f = start();
    CUdeviceptr pooled;
    EXPECT_OK(cuMemAllocAsync(&pooled, BYTES, f.first));
    atomic_int written = 0;
    fill_on(&f, pooled, WORDS, 1, f.first);
    EXPECT_OK(cuLaunchHostFunc(f.first, raise_flag, &written));
    /* The host functions keep the free behind the kernel in this run (the
     * simulator would fault the kernel otherwise), but CUDA does not order
     * the two. */
    hold(f.second, &written);
    EXPECT_OK(cuMemFreeAsync(pooled, f.second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
}

Test(ptx_races, a_free_ordered_after_a_kernel_is_no_race)
{
    struct fixture f = start();
    CUdeviceptr pooled;
    EXPECT_OK(cuMemAllocAsync(&pooled, BYTES, f.first));
    atomic_int go = 0;
    hold(f.first, &go);
    fill_on(&f, pooled, WORDS, 1, f.first);
    EXPECT_OK(cuMemFreeAsync(pooled, f.first));
    CUdeviceptr next;
    EXPECT_OK(cuMemAllocAsync(&next, BYTES, f.first));
    fill_on(&f, next, WORDS, 2, f.first);
    atomic_store(&go, 1);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
}

Test(ptx_races, unmapping_memory_a_held_kernel_uses_races)
{
    struct fixture f = start();
    const size_t page = (size_t)2 << 20;
    CUmemAllocationProp properties = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                      .location.type = CU_MEM_LOCATION_TYPE_DEVICE};
    CUmemGenericAllocationHandle handle;
    CUdeviceptr address;
    EXPECT_OK(cuMemAddressReserve(&address, page, 0, 0, 0));
    EXPECT_OK(cuMemCreate(&handle, page, &properties, 0));
    EXPECT_OK(cuMemMap(address, page, 0, handle, 0));
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_OK(cuMemSetAccess(address, page, &access, 1));
    atomic_int written = 0;
    fill_on(&f, address, WORDS, 1, f.first);
    EXPECT_OK(cuLaunchHostFunc(f.first, raise_flag, &written));
    /* Let the kernel run first (unmapping under a running kernel would
     * fault it), without a CUDA call that would order the host after it. */
    while (atomic_load(&written) == 0)
        sleep_milliseconds(1);
    EXPECT_OK(cuMemUnmap(address, page));
    EXPECT_RACES(1);
    EXPECT_OK(cuMemRelease(handle));
    EXPECT_OK(cuMemAddressFree(address, page));
}

Test(ptx_races, kernel_accesses_to_pinned_host_memory_are_not_tracked)
{
    struct fixture f = start();
    void *host;
    EXPECT_OK(cuMemHostAlloc(&host, BYTES, CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr mapped;
    EXPECT_OK(cuMemHostGetDevicePointer(&mapped, host, 0));
    fill_on(&f, mapped, WORDS, 1, f.first);
    fill_on(&f, mapped, WORDS, 2, f.second);
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);
    EXPECT_OK(cuMemFreeHost(host));
}

Test(ptx_races, the_report_names_the_kernel)
{
    struct fixture f = start();
    FILE *captured = tmpfile();
    cr_assert_not_null(captured);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(captured), STDERR_FILENO);
    fill_on(&f, f.buffer, WORDS, 1, f.first);
    copy_on(&f, f.other, f.buffer, f.second);
    EXPECT_OK(cuCtxSynchronize());
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    EXPECT_RACES(1);
    char text[4096] = {0};
    rewind(captured);
    size_t length = fread(text, 1, sizeof text - 1, captured);
    text[length] = '\0';
    fclose(captured);
    cr_expect(strstr(text, "race: kernel ") != NULL && strstr(text, "unordered with kernel ") != NULL,
              "the report names both kernels: %s", text);
}

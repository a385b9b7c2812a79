/* GPUSIM_FAIL: injected failures hit exactly the calls they name. */
#include "sim_test_support.h"

static void third_allocation_fails(void)
{
    setenv("GPUSIM_FAIL", "cuMemAlloc:3", 1);
}

Test(fault_injection, the_nth_call_fails_with_out_of_memory, .init = third_allocation_fails)
{
    start_device(0);
    CUdeviceptr pointers[4];
    EXPECT_OK(cuMemAlloc(&pointers[0], 1024));
    EXPECT_OK(cuMemAlloc(&pointers[1], 1024));
    size_t before = gpusim_physical_bytes(0);
    EXPECT_RESULT(cuMemAlloc(&pointers[2], 1024), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(gpusim_physical_bytes(0), before, "a failed call has no side effect");
    EXPECT_OK(cuMemAlloc(&pointers[3], 1024));
}

static void vmm_failures(void)
{
    setenv("GPUSIM_FAIL", "cuMemCreate:2,cuMemMap:1:invalid,cuMemSetAccess:2+", 1);
}

Test(fault_injection, several_rules_and_error_names, .init = vmm_failures)
{
    start_device(0);
    CUmemAllocationProp properties = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                      .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle handle;
    EXPECT_OK(cuMemCreate(&handle, 2 << 20, &properties, 0));
    CUmemGenericAllocationHandle second;
    EXPECT_RESULT(cuMemCreate(&second, 2 << 20, &properties, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr base;
    EXPECT_OK(cuMemAddressReserve(&base, 2 << 20, 0, 0, 0));
    EXPECT_RESULT(cuMemMap(base, 2 << 20, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemMap(base, 2 << 20, 0, handle, 0));
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_OK(cuMemSetAccess(base, 2 << 20, &access, 1));
    EXPECT_RESULT(cuMemSetAccess(base, 2 << 20, &access, 1), CUDA_ERROR_UNKNOWN);
    EXPECT_RESULT(cuMemSetAccess(base, 2 << 20, &access, 1), CUDA_ERROR_UNKNOWN);
}

static void exact_variant_only(void)
{
    setenv("GPUSIM_FAIL", "cuMemAllocAsync_ptsz:1", 1);
}

/* Under the test's rule: a cuMemAllocAsync call that succeeds, then a
 * cuMemAllocAsync_ptsz call that fails. Returns the _ptsz variant. */
static allocate_async_function legacy_succeeds_then_per_thread_fails(void)
{
    start_device(0);
    allocate_async_function allocate_ptsz =
        (allocate_async_function)per_thread_variant("cuMemAllocAsync", 11020);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocAsync(&pointer, 1024, NULL));
    EXPECT_RESULT(allocate_ptsz(&pointer, 1024, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    return allocate_ptsz;
}

Test(fault_injection, exported_names_match_one_variant, .init = exact_variant_only)
{
    allocate_async_function allocate_ptsz = legacy_succeeds_then_per_thread_fails();
    CUdeviceptr pointer;
    EXPECT_OK(allocate_ptsz(&pointer, 1024, NULL));
}

static void base_name_rule(void)
{
    setenv("GPUSIM_FAIL", "cuMemAllocAsync:2", 1);
}

Test(fault_injection, base_names_count_every_variant, .init = base_name_rule)
{
    legacy_succeeds_then_per_thread_fails();
}

/* Which of `count` cuMemAlloc calls fail, as a bit mask. */
static unsigned long long failure_pattern(int count)
{
    unsigned long long pattern = 0;
    for (int i = 0; i < count; i++) {
        CUdeviceptr pointer;
        CUresult result = cuMemAlloc(&pointer, 512);
        cr_assert(result == CUDA_SUCCESS || result == CUDA_ERROR_OUT_OF_MEMORY);
        if (result == CUDA_SUCCESS)
            cuMemFree(pointer);
        else
            pattern |= 1ULL << i;
    }
    return pattern;
}

/* The failure patterns of 64 cuMemAlloc calls in this process and in a
 * child started from the same state; `child_rule`, when not NULL, replaces
 * GPUSIM_FAIL in the child. */
static void failure_patterns_here_and_in_child(const char *child_rule, unsigned long long *here,
                                               unsigned long long *in_child)
{
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) {
        if (child_rule != NULL)
            setenv("GPUSIM_FAIL", child_rule, 1);
        start_device(0);
        unsigned long long pattern = failure_pattern(64);
        if (write(pipe_ends[1], &pattern, sizeof pattern) != sizeof pattern)
            _exit(1);
        _exit(0);
    }
    start_device(0);
    *here = failure_pattern(64);
    *in_child = 0;
    cr_assert_eq(read(pipe_ends[0], in_child, sizeof *in_child), sizeof *in_child);
    waitpid(child, NULL, 0);
}

static void seeded_rate(void)
{
    setenv("GPUSIM_FAIL", "rate:0.25:seed:42", 1);
}

Test(fault_injection, a_seeded_rate_is_reproducible, .init = seeded_rate)
{
    /* Two processes that start from the same seed fail the same calls. */
    unsigned long long pattern, child_pattern;
    failure_patterns_here_and_in_child(NULL, &pattern, &child_pattern);
    cr_assert_eq(child_pattern, pattern);
    int failures = __builtin_popcountll(pattern);
    cr_assert(failures >= 6 && failures <= 30, "%d of 64 failed at rate 0.25", failures);
    cr_assert_eq(gpusim_call_count("cuMemFree_v2"), (unsigned long long)(64 - failures),
                 "frees are not allocation calls and never fail");
}

static void other_seed(void)
{
    setenv("GPUSIM_FAIL", "rate:0.25:seed:43", 1);
}

Test(fault_injection, another_seed_gives_another_sequence, .init = other_seed)
{
    unsigned long long pattern, child_pattern;
    failure_patterns_here_and_in_child("rate:0.25:seed:42", &pattern, &child_pattern);
    cr_assert_neq(child_pattern, pattern);
}

static void second_query_waits(void)
{
    setenv("GPUSIM_DELAY", "cuCtxGetDevice:2:30000,cuDeviceGetCount:1+:20000", 1);
}

static double seconds_of(void (*call)(void))
{
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    call();
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
}

static void get_device(void)
{
    CUdevice device;
    EXPECT_OK(cuCtxGetDevice(&device));
}

static void get_count(void)
{
    int count;
    EXPECT_OK(cuDeviceGetCount(&count));
}

/* GPUSIM_DELAY: the named call sleeps before it starts, and only the calls
 * its rule selects; the call itself is unchanged. */
Test(fault_injection, delays_hit_exactly_the_calls_they_name, .init = second_query_waits)
{
    start_device(0);
    cr_assert_lt(seconds_of(get_device), 0.025, "the first cuCtxGetDevice is not delayed");
    cr_assert_geq(seconds_of(get_device), 0.030, "the second cuCtxGetDevice sleeps 30 ms");
    cr_assert_lt(seconds_of(get_device), 0.025, "the third cuCtxGetDevice is not delayed");
    cr_assert_geq(seconds_of(get_count), 0.020, "every cuDeviceGetCount sleeps 20 ms");
    cr_assert_geq(seconds_of(get_count), 0.020, "every cuDeviceGetCount sleeps 20 ms");
}

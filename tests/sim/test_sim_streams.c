/* Asynchronous execution on the simulated driver: stream order, events, the
 * legacy default stream's implicit synchronization, per-thread streams and
 * stream-ordered allocation. Multithreaded: also run under TSan. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "sim_test_support.h"

static void sleep_milliseconds(int milliseconds)
{
    struct timespec pause = {.tv_sec = 0, .tv_nsec = milliseconds * 1000000L};
    nanosleep(&pause, NULL);
}

struct late_write {
    atomic_int value;
    int delay_milliseconds;
    int written;
};

static void CUDA_CB write_late(void *argument)
{
    struct late_write *late = argument;
    sleep_milliseconds(late->delay_milliseconds);
    atomic_store(&late->value, late->written);
}

Test(streams, a_late_host_function_is_visible_only_after_its_event)
{
    start_device(0);
    CUstream stream;
    CUevent done;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuEventCreate(&done, 0));
    struct late_write late = {.delay_milliseconds = 150, .written = 42};
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    EXPECT_OK(cuEventRecord(done, stream));
    EXPECT_RESULT(cuEventQuery(done), CUDA_ERROR_NOT_READY);
    EXPECT_RESULT(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    cr_assert_eq(atomic_load(&late.value), 0, "the host function has not run yet");
    EXPECT_OK(cuEventSynchronize(done));
    cr_assert_eq(atomic_load(&late.value), 42);
    EXPECT_OK(cuEventQuery(done));
    EXPECT_OK(cuStreamQuery(stream));
    EXPECT_OK(cuEventDestroy(done));
    EXPECT_OK(cuStreamDestroy(stream));
}

Test(streams, copies_run_in_stream_order_after_host_work)
{
    start_device(0);
    CUstream stream;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr device;
    EXPECT_OK(cuMemAlloc(&device, 4096));
    EXPECT_OK(cuMemsetD32Async(device, 0x01010101, 1024, stream));
    static char host[4096];
    struct late_write late = {.delay_milliseconds = 50, .written = 1};
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    EXPECT_OK(cuMemcpyDtoHAsync(host, device, sizeof host, stream));
    cr_assert_eq(host[0], 0, "the copy waits behind the host function");
    EXPECT_OK(cuStreamSynchronize(stream));
    cr_assert_eq(host[4095], 1);
    EXPECT_OK(cuStreamDestroy(stream));
}

struct ordering_probe {
    atomic_int *clock;
    atomic_int seen_at;
};

static void CUDA_CB stamp(void *argument)
{
    struct ordering_probe *probe = argument;
    atomic_store(&probe->seen_at, atomic_fetch_add(probe->clock, 1));
}

/* Legacy work queued after slow work on `other` runs before or after it. */
static bool legacy_work_waits_for(unsigned stream_flags)
{
    CUstream other;
    EXPECT_OK(cuStreamCreate(&other, stream_flags));
    atomic_int clock = 1;
    struct late_write slow = {.delay_milliseconds = 150, .written = 1};
    struct ordering_probe slow_done = {.clock = &clock}, legacy = {.clock = &clock};
    EXPECT_OK(cuLaunchHostFunc(other, write_late, &slow));
    EXPECT_OK(cuLaunchHostFunc(other, stamp, &slow_done));
    EXPECT_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, stamp, &legacy));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuStreamDestroy(other));
    return atomic_load(&legacy.seen_at) > atomic_load(&slow_done.seen_at);
}

Test(streams, legacy_stream_waits_for_blocking_streams_only)
{
    start_device(0);
    cr_assert(legacy_work_waits_for(CU_STREAM_DEFAULT));
    cr_assert_not(legacy_work_waits_for(CU_STREAM_NON_BLOCKING));
}

/* Work on `stream` queued after slow legacy work runs before or after it. */
static bool stream_waits_for_legacy(CUstream stream)
{
    atomic_int clock = 1;
    struct late_write slow = {.delay_milliseconds = 150, .written = 1};
    struct ordering_probe legacy_done = {.clock = &clock}, later = {.clock = &clock};
    EXPECT_OK(cuLaunchHostFunc(NULL, write_late, &slow));
    EXPECT_OK(cuLaunchHostFunc(NULL, stamp, &legacy_done));
    EXPECT_OK(cuLaunchHostFunc(stream, stamp, &later));
    EXPECT_OK(cuCtxSynchronize());
    return atomic_load(&later.seen_at) > atomic_load(&legacy_done.seen_at);
}

Test(streams, blocking_streams_wait_for_prior_legacy_work)
{
    start_device(0);
    CUstream blocking, non_blocking;
    EXPECT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    EXPECT_OK(cuStreamCreateWithPriority(&non_blocking, CU_STREAM_NON_BLOCKING, -1));
    cr_assert(stream_waits_for_legacy(blocking));
    cr_assert_not(stream_waits_for_legacy(non_blocking));
    cr_assert(stream_waits_for_legacy(CU_STREAM_PER_THREAD),
              "the per-thread stream is a blocking stream");
    EXPECT_OK(cuStreamDestroy(blocking));
    EXPECT_OK(cuStreamDestroy(non_blocking));
}

Test(streams, flags_priority_and_ids)
{
    start_device(0);
    CUstream stream;
    EXPECT_OK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, -3));
    unsigned flags;
    int priority, least, greatest;
    EXPECT_OK(cuStreamGetFlags(stream, &flags));
    EXPECT_OK(cuStreamGetPriority(stream, &priority));
    EXPECT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
    cr_assert_eq(priority, -3);
    cr_assert(greatest <= priority && priority <= least);
    unsigned long long id, legacy_id, per_thread_id, default_id;
    EXPECT_OK(cuStreamGetId(stream, &id));
    EXPECT_OK(cuStreamGetId(CU_STREAM_LEGACY, &legacy_id));
    EXPECT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &per_thread_id));
    EXPECT_OK(cuStreamGetId(NULL, &default_id));
    cr_assert(id != legacy_id && legacy_id != per_thread_id);
    cr_assert_eq(default_id, legacy_id, "NULL is the legacy stream in the default API");
    stream_id_function get_id_ptsz = (stream_id_function)per_thread_variant("cuStreamGetId", 12000);
    EXPECT_OK(get_id_ptsz(NULL, &default_id));
    cr_assert_eq(default_id, per_thread_id, "NULL is the per-thread stream in _ptsz calls");
    EXPECT_OK(cuStreamDestroy(stream));
    EXPECT_RESULT(cuStreamGetFlags(stream, &flags), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_RESULT(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
}

struct thread_stream_id {
    CUcontext context;
    unsigned long long id;
};

static void *per_thread_stream_id(void *argument)
{
    struct thread_stream_id *result = argument;
    cuCtxSetCurrent(result->context);
    cuStreamGetId(CU_STREAM_PER_THREAD, &result->id);
    return NULL;
}

Test(streams, each_thread_has_its_own_per_thread_stream)
{
    CUcontext context = start_device(0);
    struct thread_stream_id other = {.context = context};
    pthread_t thread;
    pthread_create(&thread, NULL, per_thread_stream_id, &other);
    pthread_join(thread, NULL);
    unsigned long long mine;
    EXPECT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &mine));
    cr_assert_neq(other.id, 0);
    cr_assert_neq(mine, other.id);
}

Test(streams, wait_event_orders_two_non_blocking_streams)
{
    start_device(0);
    CUstream producer, consumer;
    EXPECT_OK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
    CUevent ready;
    EXPECT_OK(cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING));
    atomic_int clock = 1;
    struct late_write slow = {.delay_milliseconds = 100, .written = 1};
    struct ordering_probe produced = {.clock = &clock}, consumed = {.clock = &clock};
    EXPECT_OK(cuLaunchHostFunc(producer, write_late, &slow));
    EXPECT_OK(cuLaunchHostFunc(producer, stamp, &produced));
    EXPECT_OK(cuEventRecord(ready, producer));
    EXPECT_OK(cuStreamWaitEvent(consumer, ready, 0));
    EXPECT_OK(cuLaunchHostFunc(consumer, stamp, &consumed));
    EXPECT_OK(cuStreamSynchronize(consumer));
    cr_assert_gt(atomic_load(&consumed.seen_at), atomic_load(&produced.seen_at));
    EXPECT_OK(cuStreamDestroy(producer));
    EXPECT_OK(cuStreamDestroy(consumer));
    EXPECT_OK(cuEventDestroy(ready));
}

Test(events, elapsed_time_and_errors)
{
    start_device(0);
    CUevent start, end, untimed;
    EXPECT_OK(cuEventCreate(&start, 0));
    EXPECT_OK(cuEventCreate(&end, 0));
    EXPECT_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    float milliseconds;
    EXPECT_RESULT(cuEventElapsedTime(&milliseconds, start, end), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_OK(cuEventQuery(start));
    struct late_write slow = {.delay_milliseconds = 60, .written = 1};
    EXPECT_OK(cuEventRecord(start, NULL));
    EXPECT_OK(cuLaunchHostFunc(NULL, write_late, &slow));
    EXPECT_OK(cuEventRecordWithFlags(end, NULL, 0));
    EXPECT_OK(cuEventRecord(untimed, NULL));
    EXPECT_RESULT(cuEventElapsedTime(&milliseconds, start, end), CUDA_ERROR_NOT_READY);
    EXPECT_OK(cuEventSynchronize(end));
    EXPECT_OK(cuEventElapsedTime(&milliseconds, start, end));
    cr_assert(milliseconds >= 55.0f && milliseconds < 5000.0f, "elapsed %f ms", milliseconds);
    EXPECT_RESULT(cuEventElapsedTime(&milliseconds, start, untimed), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_OK(cuEventDestroy(start));
    EXPECT_RESULT(cuEventQuery(start), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_OK(cuEventDestroy(end));
    EXPECT_OK(cuEventDestroy(untimed));
    EXPECT_RESULT(cuEventCreate(&start, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
}

Test(streams, context_synchronize_waits_for_every_stream)
{
    start_device(0);
    CUstream streams[4];
    struct late_write writes[4];
    for (int i = 0; i < 4; i++) {
        EXPECT_OK(cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
        writes[i] = (struct late_write){.delay_milliseconds = 30 * (i + 1), .written = i + 1};
        EXPECT_OK(cuLaunchHostFunc(streams[i], write_late, &writes[i]));
    }
    unsigned long long before = gpusim_synchronization_count();
    EXPECT_OK(cuCtxSynchronize());
    cr_assert_eq(gpusim_synchronization_count(), before + 1);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(atomic_load(&writes[i].value), i + 1);
        EXPECT_OK(cuStreamDestroy(streams[i]));
    }
}

Test(streams, destroying_a_busy_stream_lets_its_work_finish)
{
    start_device(0);
    CUstream stream;
    CUevent done;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuEventCreate(&done, 0));
    struct late_write late = {.delay_milliseconds = 80, .written = 5};
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    EXPECT_OK(cuEventRecord(done, stream));
    EXPECT_OK(cuStreamDestroy(stream));
    EXPECT_OK(cuEventSynchronize(done));
    cr_assert_eq(atomic_load(&late.value), 5);
    EXPECT_OK(cuEventDestroy(done));
}

Test(async_allocation, free_is_stream_ordered)
{
    start_device(0);
    CUstream stream;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocAsync(&pointer, 3 << 20, stream));
    cr_assert_eq(gpusim_physical_bytes(0), (size_t)4 << 20);
    struct late_write late = {.delay_milliseconds = 100, .written = 1};
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    EXPECT_OK(cuMemFreeAsync(pointer, stream));
    cr_assert_eq(gpusim_physical_bytes(0), (size_t)4 << 20, "not yet reached by the stream");
    ((volatile char *)pointer)[0] = 1; /* still valid: the free has not run */
    EXPECT_RESULT(cuMemFreeAsync(pointer, stream), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuStreamSynchronize(stream));
    cr_assert_eq(gpusim_physical_bytes(0), 0);
    cr_assert(faults_in_child(read_byte, (void *)pointer), "use after the stream-ordered free");
    EXPECT_OK(cuStreamDestroy(stream));
}

Test(async_allocation, pools)
{
    start_device(0);
    CUmemoryPool default_pool, current, created;
    EXPECT_OK(cuDeviceGetDefaultMemPool(&default_pool, 0));
    EXPECT_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(default_pool, current);
    CUmemPoolProps properties;
    memset(&properties, 0, sizeof properties);
    properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = 0;
    EXPECT_OK(cuMemPoolCreate(&created, &properties));
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocFromPoolAsync(&pointer, 1000, created, NULL));
    cuuint64_t used, used_default;
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT_OK(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used_default));
    cr_assert_eq(used, 1000);
    cr_assert_eq(used_default, 0);
    CUmemoryPool owner;
    EXPECT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer));
    cr_assert_eq(owner, created);
    EXPECT_OK(cuDeviceSetMemPool(0, created));
    CUdeviceptr from_current;
    allocate_async_function allocate_ptsz =
        (allocate_async_function)per_thread_variant("cuMemAllocAsync", 11020);
    EXPECT_OK(allocate_ptsz(&from_current, 10, NULL));
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    cr_assert_eq(used, 1010);
    EXPECT_OK(cuMemFreeAsync(pointer, NULL));
    EXPECT_OK(cuMemFree(from_current));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    cr_assert_eq(used, 0);
    EXPECT_RESULT(cuMemPoolDestroy(default_pool), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuMemPoolDestroy(created));
    EXPECT_OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(current, default_pool);
}

Test(copies, synchronous_copies_and_memsets)
{
    start_device(0);
    CUdeviceptr a, b;
    EXPECT_OK(cuMemAlloc(&a, 1 << 16));
    EXPECT_OK(cuMemAlloc(&b, 1 << 16));
    EXPECT_OK(cuMemsetD16(a, 0xBEEF, 1 << 15));
    EXPECT_OK(cuMemcpyDtoD(b, a, 1 << 16));
    unsigned short host[8];
    EXPECT_OK(cuMemcpyDtoH(host, b + 64, sizeof host));
    cr_assert_eq(host[7], 0xBEEF);
    EXPECT_OK(cuMemsetD2D8(a, 256, 0x7, 16, 4));
    unsigned char rows[1024];
    EXPECT_OK(cuMemcpy((CUdeviceptr)rows, a, sizeof rows));
    cr_assert_eq(rows[256 + 15], 0x7);
    cr_assert_eq(rows[256 + 16], 0xEF, "outside the 2D region");
    EXPECT_RESULT(cuMemcpyHtoD(a + (1 << 16) - 4, host, 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuMemcpyHtoD((CUdeviceptr)rows, host, 8), CUDA_ERROR_INVALID_VALUE);
}

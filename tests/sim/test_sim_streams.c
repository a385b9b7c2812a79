/* Asynchronous execution on the simulated driver: stream order, events, the
 * legacy default stream's implicit synchronization, per-thread streams and
 * stream memory operations. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "sim_test_support.h"

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

/* That non-blocking streams do not order with the legacy stream is checked
 * without timing in implicit_legacy_synchronization_with_a_held_stream. */
Test(streams, legacy_stream_waits_for_blocking_streams)
{
    start_device(0);
    cr_assert(legacy_work_waits_for(CU_STREAM_DEFAULT));
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
    CUstream blocking;
    EXPECT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    cr_assert(stream_waits_for_legacy(blocking));
    cr_assert(stream_waits_for_legacy(CU_STREAM_PER_THREAD),
              "the per-thread stream is a blocking stream");
    EXPECT_OK(cuStreamDestroy(blocking));
}

Test(streams, flags_priority_and_ids)
{
    CUcontext context = start_device(0);
    CUstream stream;
    EXPECT_OK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, -3));
    unsigned flags;
    int priority, least, greatest;
    EXPECT_OK(cuStreamGetFlags(stream, &flags));
    EXPECT_OK(cuStreamGetPriority(stream, &priority));
    EXPECT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
    cr_assert_eq(priority, -3);
    CUcontext owner;
    CUdevice device = -1;
    EXPECT_OK(cuStreamGetCtx(stream, &owner));
    EXPECT_OK(cuStreamGetDevice(stream, &device));
    cr_assert_eq(owner, context);
    cr_assert_eq(device, 0);
    EXPECT_RESULT(cuStreamGetDevice(stream, NULL), CUDA_ERROR_INVALID_VALUE);
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

struct thread_stream_work {
    CUcontext context;
    struct late_write *late;
    unsigned long long stream_id;
};

static void *queue_on_per_thread_stream_and_exit(void *argument)
{
    struct thread_stream_work *work = argument;
    cuCtxSetCurrent(work->context);
    cuStreamGetId(CU_STREAM_PER_THREAD, &work->stream_id);
    cuLaunchHostFunc(CU_STREAM_PER_THREAD, write_late, work->late);
    return NULL;
}

Test(streams, a_threads_per_thread_stream_finishes_its_work_after_the_thread_ends)
{
    CUcontext context = start_device(0);
    struct late_write late = {.delay_milliseconds = 80, .written = 9};
    struct thread_stream_work work = {.context = context, .late = &late};
    pthread_t thread;
    pthread_create(&thread, NULL, queue_on_per_thread_stream_and_exit, &work);
    pthread_join(thread, NULL);
    unsigned long long calls_before = gpusim_call_count("cuCtxSynchronize");
    EXPECT_OK(cuCtxSynchronize());
    cr_assert_eq(gpusim_call_count("cuCtxSynchronize"), calls_before + 1);
    cr_assert_eq(atomic_load(&late.value), 9, "queued work ran although its thread is gone");
    unsigned long long mine;
    EXPECT_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &mine));
    cr_assert_neq(mine, work.stream_id);
}

static void CUDA_CB mark_ran(void *argument)
{
    atomic_store((atomic_int *)argument, 1);
}

/* Holds `blocked` with cuStreamWaitValue32 on a pinned flag, queues a host
 * function on `probe`, and reports whether it ran while `blocked` was held
 * (the same check as tests/gpu/twin_streams.cu). A probe that should run is
 * given seconds; one that should wait, a short while. */
#define SHOULD_RUN 5000
#define SHOULD_WAIT 200
static bool runs_while_blocked(CUstream blocked, CUstream probe, int patience_milliseconds)
{
    unsigned *flag;
    CUdeviceptr flag_on_device;
    EXPECT_OK(cuMemHostAlloc((void **)&flag, sizeof *flag, CU_MEMHOSTALLOC_DEVICEMAP));
    __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
    EXPECT_OK(cuMemHostGetDevicePointer(&flag_on_device, flag, 0));
    EXPECT_OK(cuStreamWaitValue32(blocked, flag_on_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
    atomic_int ran = 0;
    EXPECT_OK(cuLaunchHostFunc(probe, mark_ran, &ran));
    for (int waited = 0; waited < patience_milliseconds && !atomic_load(&ran); waited++)
        sleep_milliseconds(1);
    bool ran_while_blocked = atomic_load(&ran);
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    EXPECT_OK(cuCtxSynchronize());
    cr_assert_eq(atomic_load(&ran), 1);
    EXPECT_OK(cuMemFreeHost(flag));
    return ran_while_blocked;
}

Test(streams, implicit_legacy_synchronization_with_a_held_stream)
{
    start_device(0);
    CUstream blocking, non_blocking;
    EXPECT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    EXPECT_OK(cuStreamCreate(&non_blocking, CU_STREAM_NON_BLOCKING));
    cr_assert_not(runs_while_blocked(blocking, CU_STREAM_LEGACY, SHOULD_WAIT));
    cr_assert(runs_while_blocked(non_blocking, CU_STREAM_LEGACY, SHOULD_RUN));
    cr_assert_not(runs_while_blocked(CU_STREAM_LEGACY, blocking, SHOULD_WAIT));
    cr_assert(runs_while_blocked(CU_STREAM_LEGACY, non_blocking, SHOULD_RUN));
    cr_assert_not(runs_while_blocked(CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, SHOULD_WAIT));
    cr_assert(runs_while_blocked(blocking, non_blocking, SHOULD_RUN),
              "two created streams never order");
    EXPECT_OK(cuStreamDestroy(blocking));
    EXPECT_OK(cuStreamDestroy(non_blocking));
}

Test(streams, write_value_and_wait_value_conditions)
{
    start_device(0);
    CUdeviceptr words;
    EXPECT_OK(cuMemAlloc(&words, 64));
    EXPECT_OK(cuMemsetD8(words, 0, 64));
    EXPECT_OK(cuStreamWriteValue32(NULL, words, 7, 0));
    EXPECT_OK(cuStreamWriteValue64(NULL, words + 8, 0x100000000ULL, 0));
    EXPECT_OK(cuStreamWaitValue32(NULL, words, 7, CU_STREAM_WAIT_VALUE_EQ));
    EXPECT_OK(cuStreamWaitValue32(NULL, words, 2, CU_STREAM_WAIT_VALUE_AND));
    EXPECT_OK(cuStreamWaitValue64(NULL, words + 8, 0xFFFFFFFFULL, CU_STREAM_WAIT_VALUE_GEQ));
    EXPECT_OK(cuStreamWaitValue32(NULL, words + 16, 1, CU_STREAM_WAIT_VALUE_NOR));
    EXPECT_OK(cuStreamSynchronize(NULL));
    unsigned long long back[2];
    EXPECT_OK(cuMemcpyDtoH(back, words, sizeof back));
    cr_assert_eq(back[0], 7);
    cr_assert_eq(back[1], 0x100000000ULL);
    EXPECT_RESULT(cuStreamWaitValue32(NULL, words + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);
    int on_stack;
    EXPECT_RESULT(cuStreamWriteValue32(NULL, (CUdeviceptr)&on_stack, 1, 0),
                  CUDA_ERROR_INVALID_VALUE);
}


/* Streams, events and host functions seen through the runtime: work runs in
 * stream order, events complete when their stream reaches them, the legacy
 * default stream orders with blocking streams but not with non-blocking ones,
 * and device synchronisation waits for all of it. */
#include <stdatomic.h>
#include <string.h>

#include "runtime_test_support.h"
#include "stream_gate.h"

/* Long enough for a worker that should not wait to have run. */
#define SETTLE_MILLISECONDS 50

struct fill_request {
    unsigned char *buffer;
    size_t size;
    unsigned char value;
};

static void CUDART_CB fill_buffer(void *request_pointer)
{
    struct fill_request *request = request_pointer;
    memset(request->buffer, request->value, request->size);
}

Test(runtime_streams, events_complete_when_their_stream_reaches_them, .timeout = 10)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    struct stream_gate gate = STREAM_GATE_INITIALIZER;
    atomic_int flag = 0;
    cudaEvent_t event;
    assert_cuda_success(cudaEventCreate(&event));
    assert_cuda_success(cudaLaunchHostFunc(stream, stream_gate_wait, &gate));
    assert_cuda_success(cudaLaunchHostFunc(stream, raise_flag, &flag));
    assert_cuda_success(cudaEventRecord(event, stream));
    sleep_milliseconds(SETTLE_MILLISECONDS);
    assert_cuda(cudaEventQuery(event), cudaErrorNotReady);
    assert_cuda(cudaStreamQuery(stream), cudaErrorNotReady);
    cr_assert_eq(atomic_load(&flag), 0, "work behind a blocked host function ran early");
    stream_gate_open(&gate);
    assert_cuda_success(cudaEventSynchronize(event));
    cr_assert_eq(atomic_load(&flag), 1);
    assert_cuda_success(cudaEventQuery(event));
    assert_cuda_success(cudaStreamSynchronize(stream));
    assert_cuda_success(cudaStreamQuery(stream));
    assert_cuda_success(cudaPeekAtLastError());
    assert_cuda_success(cudaEventDestroy(event));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_streams, an_async_copy_sees_what_an_earlier_host_function_wrote, .timeout = 10)
{
    enum { size = 4096 };
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    unsigned char *staging = NULL, *result = NULL;
    void *device_memory = NULL;
    assert_cuda_success(cudaMallocHost((void **)&staging, size));
    assert_cuda_success(cudaMallocHost((void **)&result, size));
    assert_cuda_success(cudaMalloc(&device_memory, size));
    memset(staging, 0, size);
    memset(result, 0, size);
    struct stream_gate gate = STREAM_GATE_INITIALIZER;
    struct fill_request late_write = { staging, size, 0x5a };
    assert_cuda_success(cudaLaunchHostFunc(stream, stream_gate_wait, &gate));
    assert_cuda_success(cudaLaunchHostFunc(stream, fill_buffer, &late_write));
    assert_cuda_success(cudaMemcpyAsync(device_memory, staging, size, cudaMemcpyHostToDevice, stream));
    assert_cuda_success(cudaMemsetAsync(device_memory, 0x11, 16, stream));
    assert_cuda_success(cudaMemcpyAsync(result, device_memory, size, cudaMemcpyDeviceToHost, stream));
    sleep_milliseconds(SETTLE_MILLISECONDS);
    cr_assert_eq(result[100], 0, "the copy ran before the host function it follows");
    stream_gate_open(&gate);
    assert_cuda_success(cudaStreamSynchronize(stream));
    for (size_t index = 0; index < size; index++)
        cr_assert_eq(result[index], index < 16 ? 0x11 : 0x5a, "byte %zu is %#x", index, result[index]);
    assert_cuda_success(cudaFree(device_memory));
    assert_cuda_success(cudaFreeHost(staging));
    assert_cuda_success(cudaFreeHost(result));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_streams, the_legacy_stream_blocks_blocking_streams_but_not_non_blocking_ones, .timeout = 10)
{
    cudaStream_t blocking, non_blocking;
    assert_cuda_success(cudaStreamCreate(&blocking));
    assert_cuda_success(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
    struct stream_gate gate = STREAM_GATE_INITIALIZER;
    atomic_int blocking_ran = 0, non_blocking_ran = 0;
    assert_cuda_success(cudaLaunchHostFunc(0, stream_gate_wait, &gate));
    assert_cuda_success(cudaLaunchHostFunc(blocking, raise_flag, &blocking_ran));
    assert_cuda_success(cudaLaunchHostFunc(non_blocking, raise_flag, &non_blocking_ran));
    assert_cuda_success(cudaStreamSynchronize(non_blocking));
    cr_assert_eq(atomic_load(&non_blocking_ran), 1);
    sleep_milliseconds(SETTLE_MILLISECONDS);
    cr_assert_eq(atomic_load(&blocking_ran), 0, "a blocking stream overtook the legacy default stream");
    stream_gate_open(&gate);
    assert_cuda_success(cudaStreamSynchronize(blocking));
    cr_assert_eq(atomic_load(&blocking_ran), 1);
    assert_cuda_success(cudaStreamDestroy(blocking));
    assert_cuda_success(cudaStreamDestroy(non_blocking));
}

Test(runtime_streams, a_stream_waiting_on_an_event_waits_for_the_recording_stream, .timeout = 10)
{
    cudaStream_t producer, consumer;
    assert_cuda_success(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
    assert_cuda_success(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
    cudaEvent_t ready;
    assert_cuda_success(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    struct stream_gate gate = STREAM_GATE_INITIALIZER;
    atomic_int consumed = 0;
    assert_cuda_success(cudaLaunchHostFunc(producer, stream_gate_wait, &gate));
    assert_cuda_success(cudaEventRecord(ready, producer));
    assert_cuda_success(cudaStreamWaitEvent(consumer, ready, 0));
    assert_cuda_success(cudaLaunchHostFunc(consumer, raise_flag, &consumed));
    sleep_milliseconds(SETTLE_MILLISECONDS);
    cr_assert_eq(atomic_load(&consumed), 0, "the consumer did not wait for the event");
    stream_gate_open(&gate);
    assert_cuda_success(cudaStreamSynchronize(consumer));
    cr_assert_eq(atomic_load(&consumed), 1);
    assert_cuda_success(cudaEventDestroy(ready));
    assert_cuda_success(cudaStreamDestroy(producer));
    assert_cuda_success(cudaStreamDestroy(consumer));
}

struct delayed_flag {
    long delay_milliseconds;
    atomic_int flag;
};

static void CUDART_CB raise_flag_after_delay(void *request_pointer)
{
    struct delayed_flag *request = request_pointer;
    sleep_milliseconds(request->delay_milliseconds);
    atomic_store(&request->flag, 1);
}

Test(runtime_streams, device_synchronize_waits_for_every_stream, .timeout = 10)
{
    cudaStream_t first, second;
    assert_cuda_success(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
    assert_cuda_success(cudaStreamCreate(&second));
    struct delayed_flag first_work = { 40, 0 }, second_work = { 60, 0 };
    assert_cuda_success(cudaLaunchHostFunc(first, raise_flag_after_delay, &first_work));
    assert_cuda_success(cudaLaunchHostFunc(second, raise_flag_after_delay, &second_work));
    assert_cuda_success(cudaDeviceSynchronize());
    cr_assert_eq(atomic_load(&first_work.flag), 1);
    cr_assert_eq(atomic_load(&second_work.flag), 1);
    assert_cuda_success(cudaStreamDestroy(first));
    assert_cuda_success(cudaStreamDestroy(second));
}

Test(runtime_streams, elapsed_time_covers_the_work_between_two_events, .timeout = 10)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    assert_cuda_success(cudaEventCreate(&start));
    assert_cuda_success(cudaEventCreate(&stop));
    struct delayed_flag work = { 30, 0 };
    assert_cuda_success(cudaEventRecord(start, stream));
    assert_cuda_success(cudaLaunchHostFunc(stream, raise_flag_after_delay, &work));
    assert_cuda_success(cudaEventRecord(stop, stream));
    assert_cuda_success(cudaEventSynchronize(stop));
    float milliseconds = -1;
    assert_cuda_success(cudaEventElapsedTime(&milliseconds, start, stop));
    cr_assert_geq(milliseconds, 25.0f, "elapsed %f ms", (double)milliseconds);
    cr_assert_lt(milliseconds, 5000.0f, "elapsed %f ms", (double)milliseconds);
    assert_cuda_success(cudaEventDestroy(start));
    assert_cuda_success(cudaEventDestroy(stop));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_streams, streams_report_their_flags_priority_device_and_distinct_ids)
{
    cudaStream_t plain, non_blocking;
    assert_cuda_success(cudaStreamCreate(&plain));
    assert_cuda_success(cudaStreamCreateWithPriority(&non_blocking, cudaStreamNonBlocking, 0));
    unsigned int flags = 99;
    assert_cuda_success(cudaStreamGetFlags(plain, &flags));
    cr_assert_eq(flags, cudaStreamDefault);
    assert_cuda_success(cudaStreamGetFlags(non_blocking, &flags));
    cr_assert_eq(flags, cudaStreamNonBlocking);
    int priority = 99;
    assert_cuda_success(cudaStreamGetPriority(non_blocking, &priority));
    cr_assert_eq(priority, 0);
    int device = -1;
    assert_cuda_success(cudaStreamGetDevice(plain, &device));
    cr_assert_eq(device, 0);
    unsigned long long plain_id = 0, non_blocking_id = 0, legacy_id = 0, plain_id_again = 0;
    assert_cuda_success(cudaStreamGetId(plain, &plain_id));
    assert_cuda_success(cudaStreamGetId(non_blocking, &non_blocking_id));
    assert_cuda_success(cudaStreamGetId(cudaStreamLegacy, &legacy_id));
    assert_cuda_success(cudaStreamGetId(plain, &plain_id_again));
    cr_assert_neq(plain_id, non_blocking_id);
    cr_assert_neq(plain_id, legacy_id);
    cr_assert_eq(plain_id, plain_id_again);
    assert_cuda_success(cudaStreamDestroy(plain));
    assert_cuda_success(cudaStreamDestroy(non_blocking));
}

Test(runtime_streams, a_fresh_stream_is_not_capturing)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    assert_cuda_success(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    assert_cuda_success(cudaStreamIsCapturing(0, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_streams, a_host_function_needs_a_function)
{
    assert_cuda(cudaLaunchHostFunc(0, NULL, NULL), cudaErrorInvalidValue);
}

struct callback_record {
    atomic_int calls;
    atomic_int order;
    cudaStream_t stream;
    cudaError_t status;
    int position;
};

static void CUDART_CB record_callback(cudaStream_t stream, cudaError_t status, void *record_pointer)
{
    struct callback_record *record = record_pointer;
    record->stream = stream;
    record->status = status;
    record->position = atomic_fetch_add(&record->order, 1);
    atomic_fetch_add(&record->calls, 1);
}

static void CUDART_CB count_position(void *record_pointer)
{
    struct callback_record *record = record_pointer;
    atomic_fetch_add(&record->order, 1);
}

Test(runtime_streams, a_stream_callback_runs_in_stream_order_with_the_stream_and_status, .timeout = 10)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreate(&stream));
    struct stream_gate gate = STREAM_GATE_INITIALIZER;
    struct callback_record record = { 0 };
    record.status = cudaErrorUnknown;
    assert_cuda_success(cudaLaunchHostFunc(stream, stream_gate_wait, &gate));
    assert_cuda_success(cudaLaunchHostFunc(stream, count_position, &record));
    assert_cuda_success(cudaStreamAddCallback(stream, record_callback, &record, 0));
    sleep_milliseconds(SETTLE_MILLISECONDS);
    cr_assert_eq(atomic_load(&record.calls), 0, "a callback behind a blocked stream ran early");
    stream_gate_open(&gate);
    assert_cuda_success(cudaStreamSynchronize(stream));
    cr_assert_eq(atomic_load(&record.calls), 1);
    cr_assert_eq(record.position, 1, "the callback ran before the host function queued ahead of it");
    cr_assert_eq(record.stream, stream);
    cr_assert_eq(record.status, cudaSuccess);
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_streams, a_stream_callback_on_the_legacy_stream_runs, .timeout = 10)
{
    struct callback_record record = { 0 };
    assert_cuda_success(cudaStreamAddCallback(0, record_callback, &record, 0));
    assert_cuda_success(cudaDeviceSynchronize());
    cr_assert_eq(atomic_load(&record.calls), 1);
    cr_assert_eq(record.status, cudaSuccess);
}

Test(runtime_streams, a_stream_callback_needs_a_function_and_no_flags)
{
    struct callback_record record = { 0 };
    assert_cuda(cudaStreamAddCallback(0, NULL, NULL, 0), cudaErrorInvalidValue);
    assert_cuda(cudaStreamAddCallback(0, record_callback, &record, 1), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the failure is recorded");
    assert_cuda_success(cudaDeviceSynchronize());
    cr_assert_eq(atomic_load(&record.calls), 0);
}

Test(runtime_streams, a_stream_callback_is_refused_in_stream_capture)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    assert_cuda_success(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    struct callback_record record = { 0 };
    assert_cuda(cudaStreamAddCallback(stream, record_callback, &record, 0), cudaErrorStreamCaptureUnsupported);
    cudaGraph_t graph = NULL;
    assert_cuda_success(cudaStreamEndCapture(stream, &graph));
    if (graph != NULL)
        assert_cuda_success(cudaGraphDestroy(graph));
    assert_cuda_success(cudaStreamDestroy(stream));
    cr_assert_eq(atomic_load(&record.calls), 0);
}

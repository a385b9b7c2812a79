/* Stream capture on the simulated driver: what an allocator can observe
 * while a stream is being captured into a graph. */
#include <pthread.h>

#include "sim_test_support.h"

static CUstream capturing_stream(CUstreamCaptureMode mode)
{
    CUstream stream;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuStreamBeginCapture(stream, mode));
    return stream;
}

Test(capture, capturing_is_observable_and_ends_with_a_graph)
{
    start_device(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUstreamCaptureStatus status;
    EXPECT_OK(cuStreamIsCapturing(stream, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cuuint64_t id = 0;
    EXPECT_OK(cuStreamGetCaptureInfo(stream, &status, &id, NULL, NULL, NULL, NULL));
    cr_assert_neq(id, 0);
    EXPECT_RESULT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
                  CUDA_ERROR_ILLEGAL_STATE);
    CUgraph graph;
    EXPECT_OK(cuStreamEndCapture(stream, &graph));
    cr_assert_not_null(graph);
    EXPECT_OK(cuStreamIsCapturing(stream, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_OK(cuGraphDestroy(graph));
    EXPECT_RESULT(cuStreamEndCapture(stream, &graph), CUDA_ERROR_ILLEGAL_STATE);
}

Test(capture, the_legacy_stream_cannot_be_captured)
{
    start_device(0);
    EXPECT_RESULT(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

Test(capture, unsafe_calls_fail_and_invalidate_a_global_capture)
{
    start_device(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUdeviceptr pointer;
    EXPECT_RESULT(cuMemAlloc(&pointer, 1024), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_RESULT(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUdeviceptr no_copy = 0;
    EXPECT_RESULT(cuMemcpyDtoD(no_copy, no_copy, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_RESULT(cuMemsetD8(no_copy, 0, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus status;
    EXPECT_OK(cuStreamIsCapturing(stream, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph graph;
    EXPECT_RESULT(cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_null(graph);
    EXPECT_OK(cuMemAlloc(&pointer, 1024));
}

Test(capture, relaxed_mode_allows_unsafe_calls)
{
    start_device(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_RELAXED);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAlloc(&pointer, 1024));
    EXPECT_OK(cuMemFree(pointer));
    CUgraph graph;
    EXPECT_OK(cuStreamEndCapture(stream, &graph));
    EXPECT_OK(cuGraphDestroy(graph));
}

struct other_thread_call {
    CUcontext context;
    CUstreamCaptureMode mode;
    CUresult result;
};

static void *allocate_from_other_thread(void *argument)
{
    struct other_thread_call *call = argument;
    cuCtxSetCurrent(call->context);
    CUstreamCaptureMode mode = call->mode;
    cuThreadExchangeStreamCaptureMode(&mode);
    CUdeviceptr pointer;
    call->result = cuMemAlloc(&pointer, 1024);
    if (call->result == CUDA_SUCCESS)
        cuMemFree(pointer);
    return NULL;
}

Test(capture, a_global_capture_forbids_other_threads_unless_they_opt_out)
{
    CUcontext context = start_device(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    struct other_thread_call call = {.context = context, .mode = CU_STREAM_CAPTURE_MODE_GLOBAL};
    pthread_t thread;
    pthread_create(&thread, NULL, allocate_from_other_thread, &call);
    pthread_join(thread, NULL);
    EXPECT_RESULT(call.result, CUDA_SUCCESS); /* thread-local captures ignore others */
    CUgraph graph;
    EXPECT_OK(cuStreamEndCapture(stream, &graph));
    EXPECT_OK(cuGraphDestroy(graph));

    stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    pthread_create(&thread, NULL, allocate_from_other_thread, &call);
    pthread_join(thread, NULL);
    EXPECT_RESULT(call.result, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    call.mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    pthread_create(&thread, NULL, allocate_from_other_thread, &call);
    pthread_join(thread, NULL);
    EXPECT_RESULT(call.result, CUDA_SUCCESS);
    EXPECT_RESULT(cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

static void CUDA_CB must_not_run(void *argument)
{
    *(int *)argument = 1;
}

Test(capture, captured_work_and_events_do_not_run)
{
    start_device(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    static int ran;
    EXPECT_OK(cuLaunchHostFunc(stream, must_not_run, &ran));
    CUevent event;
    EXPECT_OK(cuEventCreate(&event, 0));
    EXPECT_OK(cuEventRecord(event, stream));
    CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
    EXPECT_OK(cuThreadExchangeStreamCaptureMode(&relaxed));
    EXPECT_RESULT(cuEventQuery(event), CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_RESULT(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_OK(cuThreadExchangeStreamCaptureMode(&relaxed));
    cr_assert_eq(relaxed, CU_STREAM_CAPTURE_MODE_RELAXED, "the previous mode comes back");
    CUgraph graph;
    EXPECT_RESULT(cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(ran, 0);
}

Test(capture, async_allocations_inside_a_capture_are_graph_memory)
{
    start_device(0);
    CUdeviceptr before_capture;
    EXPECT_OK(cuMemAllocAsync(&before_capture, 4096, NULL));
    size_t physical_before = gpusim_physical_bytes(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    EXPECT_RESULT(cuMemFreeAsync(before_capture, stream), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr pointer;
    EXPECT_OK(cuMemAllocAsync(&pointer, 4 << 20, stream));
    cr_assert_eq(gpusim_physical_bytes(0), physical_before,
                 "nothing is allocated until the graph runs");
    EXPECT_OK(cuMemFreeAsync(pointer, stream));
    EXPECT_RESULT(cuMemFreeAsync(pointer, stream), CUDA_ERROR_INVALID_VALUE);
    cr_assert(faults_in_child(write_byte, (void *)pointer));
    CUgraph graph;
    EXPECT_OK(cuStreamEndCapture(stream, &graph));
    EXPECT_RESULT(cuMemFreeAsync(pointer, stream), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuGraphDestroy(graph));
}

Test(capture, legacy_work_during_a_blocking_capture_is_an_implicit_dependency)
{
    start_device(0);
    CUstream blocking;
    EXPECT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    EXPECT_OK(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    static int ran;
    EXPECT_RESULT(cuLaunchHostFunc(CU_STREAM_LEGACY, must_not_run, &ran),
                  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CUgraph graph;
    EXPECT_RESULT(cuStreamEndCapture(blocking, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

Test(capture, waiting_on_a_captured_event_joins_the_capture)
{
    start_device(0);
    CUstream origin = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUstream joined;
    EXPECT_OK(cuStreamCreate(&joined, CU_STREAM_NON_BLOCKING));
    CUevent fork_point;
    EXPECT_OK(cuEventCreate(&fork_point, CU_EVENT_DISABLE_TIMING));
    EXPECT_OK(cuEventRecord(fork_point, origin));
    EXPECT_OK(cuStreamWaitEvent(joined, fork_point, 0));
    CUstreamCaptureStatus status;
    cuuint64_t origin_id, joined_id;
    EXPECT_OK(cuStreamGetCaptureInfo(origin, &status, &origin_id, NULL, NULL, NULL, NULL));
    EXPECT_OK(cuStreamGetCaptureInfo(joined, &status, &joined_id, NULL, NULL, NULL, NULL));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_eq(origin_id, joined_id);
    CUgraph graph;
    EXPECT_RESULT(cuStreamEndCapture(joined, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    EXPECT_OK(cuStreamEndCapture(origin, &graph));
    EXPECT_OK(cuStreamIsCapturing(joined, &status));
    cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_OK(cuGraphDestroy(graph));
}

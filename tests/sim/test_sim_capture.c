/* Stream capture on the simulated driver: what an allocator can observe
 * while a stream is being captured into a graph, and the graphs it records
 * being instantiated and launched. */
#include <pthread.h>
#include <string.h>

#include "racecheck_test_support.h"

/* The graph tests check what the race detector sees of a launch; the suite
 * runs with it on even outside meson. */
TestSuite(capture, .init = racecheck_on);

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

/* ---- graphs: instantiation and launch ----------------------------------- */

static CUgraph end_capture(CUstream stream)
{
    CUgraph graph = NULL;
    EXPECT_OK(cuStreamEndCapture(stream, &graph));
    cr_assert_not_null(graph);
    return graph;
}

static CUgraphExec instantiate(CUgraph graph)
{
    CUgraphExec exec = NULL;
    EXPECT_OK(cuGraphInstantiate(&exec, graph, 0));
    cr_assert_not_null(exec);
    return exec;
}

static void CUDA_CB count_call(void *argument)
{
    atomic_fetch_add((atomic_int *)argument, 1);
}

#define REPLAY_BYTES 256

Test(capture, a_captured_memset_copy_and_host_function_run_on_every_launch)
{
    start_device(0);
    CUdeviceptr device;
    EXPECT_OK(cuMemAlloc(&device, REPLAY_BYTES));
    static unsigned char source[REPLAY_BYTES / 2], result[REPLAY_BYTES];
    static atomic_int calls;
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    EXPECT_OK(cuMemsetD8Async(device, 0x5A, REPLAY_BYTES, stream));
    EXPECT_OK(cuMemcpyHtoDAsync(device + REPLAY_BYTES / 2, source, sizeof source, stream));
    EXPECT_OK(cuMemcpyDtoHAsync(result, device, REPLAY_BYTES, stream));
    EXPECT_OK(cuLaunchHostFunc(stream, count_call, &calls));
    CUgraph graph = end_capture(stream);
    cr_assert_eq(atomic_load(&calls), 0, "captured work does not run at capture");
    size_t count = 0;
    EXPECT_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 4);
    CUgraphNode nodes[6];
    count = 6;
    EXPECT_OK(cuGraphGetNodes(graph, nodes, &count));
    cr_assert_eq(count, 4);
    cr_assert_not_null(nodes[3]);
    cr_assert_null(nodes[4]);
    CUgraphExec exec = instantiate(graph);
    EXPECT_OK(cuGraphUpload(exec, stream));
    for (int launch = 0; launch < 3; launch++) {
        memset(source, 0x10 + launch, sizeof source);
        memset(result, 0, sizeof result);
        EXPECT_OK(cuGraphLaunch(exec, stream));
        EXPECT_OK(cuStreamSynchronize(stream));
        for (size_t i = 0; i < REPLAY_BYTES; i++)
            cr_assert_eq(result[i], i < REPLAY_BYTES / 2 ? 0x5A : 0x10 + launch,
                         "launch %d byte %zu is 0x%x", launch, i, result[i]);
        cr_assert_eq(atomic_load(&calls), launch + 1);
    }
    EXPECT_OK(cuGraphExecDestroy(exec));
    EXPECT_OK(cuGraphDestroy(graph));
    EXPECT_OK(cuMemFree(device));
}

/* out[i] = in[i] * factor, one thread per element. */
static const char scale_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale(.param .u64 out, .param .u64 in, .param .u32 factor)\n{\n"
    ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [out];\nld.param.u64 %rd2, [in];\nld.param.u32 %r2, [factor];\n"
    "mov.u32 %r1, %tid.x;\nmul.wide.u32 %rd3, %r1, 4;\n"
    "add.s64 %rd4, %rd2, %rd3;\nld.global.u32 %r3, [%rd4];\nmul.lo.u32 %r4, %r3, %r2;\n"
    "add.s64 %rd5, %rd1, %rd3;\nst.global.u32 [%rd5], %r4;\nret;\n}\n";

#define SCALE_COUNT 64

Test(capture, a_captured_kernel_keeps_its_arguments_and_reads_new_input_each_launch)
{
    start_device(0);
    CUmodule module;
    EXPECT_OK(cuModuleLoadData(&module, scale_ptx));
    CUfunction scale;
    EXPECT_OK(cuModuleGetFunction(&scale, module, "scale"));
    CUdeviceptr in, out;
    EXPECT_OK(cuMemAlloc(&in, SCALE_COUNT * 4));
    EXPECT_OK(cuMemAlloc(&out, SCALE_COUNT * 4));
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    unsigned factor = 3;
    void *params[] = {&out, &in, &factor};
    EXPECT_OK(cuLaunchKernel(scale, 1, 1, 1, SCALE_COUNT, 1, 1, 0, stream, params, NULL));
    CUgraph graph = end_capture(stream);
    /* The graph copied the arguments when the kernel was captured. */
    factor = 1000;
    CUgraphExec exec = instantiate(graph);
    EXPECT_OK(cuGraphDestroy(graph));
    for (unsigned launch = 0; launch < 4; launch++) {
        static unsigned input[SCALE_COUNT], output[SCALE_COUNT];
        for (unsigned i = 0; i < SCALE_COUNT; i++)
            input[i] = 100 * launch + i;
        EXPECT_OK(cuMemcpyHtoDAsync(in, input, sizeof input, stream));
        EXPECT_OK(cuGraphLaunch(exec, stream));
        EXPECT_OK(cuMemcpyDtoHAsync(output, out, sizeof output, stream));
        EXPECT_OK(cuStreamSynchronize(stream));
        for (unsigned i = 0; i < SCALE_COUNT; i++)
            cr_assert_eq(output[i], 3 * input[i], "launch %u element %u is %u", launch, i,
                         output[i]);
    }
    EXPECT_OK(cuGraphExecDestroy(exec));
    EXPECT_OK(cuModuleUnload(module));
}

static void CUDA_CB observe_late_write(void *argument)
{
    struct late_write *late = argument;
    late->written = atomic_load(&late->value) + 1;
}

Test(capture, work_queued_after_a_graph_launch_waits_for_the_graph)
{
    start_device(0);
    static struct late_write late = {.delay_milliseconds = 50};
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    EXPECT_OK(cuLaunchHostFunc(stream, write_late, &late));
    CUgraph graph = end_capture(stream);
    CUgraphExec exec = instantiate(graph);
    late.written = 41;
    EXPECT_OK(cuGraphLaunch(exec, stream));
    /* Reads what the graph's host function stored, or 0 if it ran first. */
    EXPECT_OK(cuLaunchHostFunc(stream, observe_late_write, &late));
    EXPECT_OK(cuStreamSynchronize(stream));
    cr_assert_eq(late.written, 42, "the host function after the launch saw %d",
                 late.written - 1);
    EXPECT_OK(cuGraphExecDestroy(exec));
    EXPECT_OK(cuGraphDestroy(graph));
}

/* A graph that writes `buffer` with a memset. */
static CUgraphExec memset_graph(CUdeviceptr buffer, CUstream stream)
{
    EXPECT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_OK(cuMemsetD8Async(buffer, 0x11, REPLAY_BYTES, stream));
    CUgraph graph = end_capture(stream);
    CUgraphExec exec = instantiate(graph);
    EXPECT_OK(cuGraphDestroy(graph));
    return exec;
}

Test(capture, the_race_detector_sees_a_graph_launch_as_work_of_its_stream)
{
    start_device(0);
    cr_assert_neq(getenv("GPUSIM_RACECHECK"), NULL, "the suite runs with the detector on");
    CUdeviceptr buffer;
    EXPECT_OK(cuMemAlloc(&buffer, REPLAY_BYTES));
    CUstream first, second;
    EXPECT_OK(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuStreamCreate(&second, CU_STREAM_NON_BLOCKING));
    CUgraphExec exec = memset_graph(buffer, first);
    CUevent done;
    EXPECT_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));

    /* Ordered: the other stream waits for an event recorded after the launch. */
    EXPECT_OK(cuGraphLaunch(exec, first));
    EXPECT_OK(cuEventRecord(done, first));
    EXPECT_OK(cuStreamWaitEvent(second, done, 0));
    EXPECT_OK(cuMemsetD8Async(buffer, 0x22, REPLAY_BYTES, second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(0);

    /* Unordered: the graph's memset and the other stream's write race. */
    EXPECT_OK(cuGraphLaunch(exec, first));
    EXPECT_OK(cuMemsetD8Async(buffer, 0x33, REPLAY_BYTES, second));
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RACES(1);
    EXPECT_OK(cuGraphExecDestroy(exec));
}

Test(capture, captured_allocations_are_memory_while_the_graph_is_instantiated)
{
    start_device(0);
    size_t physical_before = gpusim_physical_bytes(0);
    CUstream stream = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUdeviceptr pointer;
    enum { BYTES = 4 << 20 };
    EXPECT_OK(cuMemAllocAsync(&pointer, BYTES, stream));
    EXPECT_OK(cuMemsetD8Async(pointer, 0x77, BYTES, stream));
    static unsigned char tail[64];
    EXPECT_OK(cuMemcpyDtoHAsync(tail, pointer + BYTES - sizeof tail, sizeof tail, stream));
    EXPECT_OK(cuMemFreeAsync(pointer, stream));
    CUgraph graph = end_capture(stream);
    size_t count = 0;
    EXPECT_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 4, "allocation, memset, copy and free nodes");
    cr_assert_eq(gpusim_physical_bytes(0), physical_before);

    CUgraphExec exec = instantiate(graph);
    cr_assert_geq(gpusim_physical_bytes(0), physical_before + BYTES,
                  "instantiation maps the allocation");
    CUgraphExec second;
    EXPECT_RESULT(cuGraphInstantiate(&second, graph, 0), CUDA_ERROR_INVALID_VALUE);
    for (int launch = 0; launch < 2; launch++) {
        memset(tail, 0, sizeof tail);
        EXPECT_OK(cuGraphLaunch(exec, stream));
        EXPECT_OK(cuStreamSynchronize(stream));
        for (size_t i = 0; i < sizeof tail; i++)
            cr_assert_eq(tail[i], 0x77);
    }
    EXPECT_OK(cuGraphExecDestroy(exec));
    cr_assert_eq(gpusim_physical_bytes(0), physical_before, "destroying the exec frees it");
    cr_assert(faults_in_child(write_byte, (void *)pointer), "the address is reserved again");

    /* Instantiable again; the instantiation outlives its graph. */
    exec = instantiate(graph);
    EXPECT_OK(cuGraphDestroy(graph));
    memset(tail, 0, sizeof tail);
    EXPECT_OK(cuGraphLaunch(exec, stream));
    EXPECT_OK(cuStreamSynchronize(stream));
    cr_assert_eq(tail[0], 0x77);
    EXPECT_OK(cuGraphExecDestroy(exec));
    cr_assert_eq(gpusim_physical_bytes(0), physical_before);
}

Test(capture, graph_entry_points_reject_bad_arguments)
{
    start_device(0);
    CUgraph graph;
    EXPECT_RESULT(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGraphCreate(&graph, 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuGraphCreate(&graph, 0));
    CUgraphExec exec;
    EXPECT_RESULT(cuGraphInstantiate(NULL, graph, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGraphInstantiate(&exec, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGraphInstantiate(&exec, graph, 1ull << 40), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGraphGetNodes(graph, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    size_t count = 99;
    EXPECT_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 0);
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .result_out = CUDA_GRAPH_INSTANTIATE_ERROR};
    EXPECT_RESULT(cuGraphInstantiateWithParams(&exec, graph, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuGraphInstantiateWithParams(&exec, graph, &params));
    cr_assert_eq(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    EXPECT_OK(cuGraphLaunch(exec, NULL)); /* an empty graph does nothing */
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_RESULT(cuGraphLaunch(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_RESULT(cuGraphLaunch((CUgraphExec)graph, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_RESULT(cuGraphUpload((CUgraphExec)graph, NULL), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_OK(cuGraphExecDestroy(exec));
    EXPECT_RESULT(cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_RESULT(cuGraphExecDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_OK(cuGraphDestroy(graph));
}

Test(capture, a_multi_stream_capture_replays_its_branches_in_order)
{
    start_device(0);
    CUdeviceptr buffer;
    EXPECT_OK(cuMemAlloc(&buffer, REPLAY_BYTES));
    CUstream origin = capturing_stream(CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUstream branch;
    EXPECT_OK(cuStreamCreate(&branch, CU_STREAM_NON_BLOCKING));
    CUevent fork_point, join_point;
    EXPECT_OK(cuEventCreate(&fork_point, CU_EVENT_DISABLE_TIMING));
    EXPECT_OK(cuEventCreate(&join_point, CU_EVENT_DISABLE_TIMING));
    EXPECT_OK(cuMemsetD8Async(buffer, 1, REPLAY_BYTES, origin));
    EXPECT_OK(cuEventRecord(fork_point, origin));
    EXPECT_OK(cuStreamWaitEvent(branch, fork_point, 0));
    EXPECT_OK(cuMemsetD8Async(buffer, 2, REPLAY_BYTES / 2, branch));
    EXPECT_OK(cuEventRecord(join_point, branch));
    EXPECT_OK(cuStreamWaitEvent(origin, join_point, 0));
    static unsigned char result[REPLAY_BYTES];
    EXPECT_OK(cuMemcpyDtoHAsync(result, buffer, REPLAY_BYTES, origin));
    CUgraph graph = end_capture(origin);
    size_t count = 0;
    EXPECT_OK(cuGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 3);
    CUgraphExec exec = instantiate(graph);
    CUstream launch_stream;
    EXPECT_OK(cuStreamCreate(&launch_stream, CU_STREAM_NON_BLOCKING));
    EXPECT_OK(cuGraphLaunch(exec, launch_stream));
    EXPECT_OK(cuStreamSynchronize(launch_stream));
    for (size_t i = 0; i < REPLAY_BYTES; i++)
        cr_assert_eq(result[i], i < REPLAY_BYTES / 2 ? 2 : 1);
    EXPECT_OK(cuGraphExecDestroy(exec));
    EXPECT_OK(cuGraphDestroy(graph));
}

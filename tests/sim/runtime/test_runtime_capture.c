/* Stream capture through the runtime: a capturing stream reports it,
 * stream-ordered allocations are captured, calls that are unsafe while a
 * global capture runs fail and invalidate it, and the relaxed mode allows
 * them. */
#include "runtime_test_support.h"

static cudaStream_t capturing_stream(enum cudaStreamCaptureMode mode)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    assert_cuda_success(cudaStreamBeginCapture(stream, mode));
    return stream;
}

Test(runtime_capture, a_capture_runs_from_begin_to_end_and_yields_a_graph)
{
    cudaStream_t stream = capturing_stream(cudaStreamCaptureModeGlobal);
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    assert_cuda_success(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusActive);
    void *captured = NULL;
    assert_cuda_success(cudaMallocAsync(&captured, 1 << 20, stream));
    cr_assert_not_null(captured);
    assert_cuda_success(cudaFreeAsync(captured, stream));
    cudaGraph_t graph = NULL;
    assert_cuda_success(cudaStreamEndCapture(stream, &graph));
    cr_assert_not_null(graph);
    assert_cuda_success(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusNone);
    assert_cuda_success(cudaGraphDestroy(graph));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_capture, an_unsafe_call_during_global_capture_fails_and_invalidates_it)
{
    cudaStream_t stream = capturing_stream(cudaStreamCaptureModeGlobal);
    void *pointer = NULL;
    assert_cuda(cudaMalloc(&pointer, 4096), cudaErrorStreamCaptureUnsupported);
    assert_cuda(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    assert_cuda_success(cudaStreamIsCapturing(stream, &status));
    cr_assert_eq(status, cudaStreamCaptureStatusInvalidated);
    cudaGraph_t graph = (cudaGraph_t)0x1;
    assert_cuda(cudaStreamEndCapture(stream, &graph), cudaErrorStreamCaptureInvalidated);
    cr_assert_null(graph);
    assert_cuda_success(cudaMalloc(&pointer, 4096));
    assert_cuda_success(cudaFree(pointer));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_capture, relaxed_mode_allows_unsafe_calls_during_capture)
{
    cudaStream_t stream = capturing_stream(cudaStreamCaptureModeGlobal);
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    assert_cuda_success(cudaThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, cudaStreamCaptureModeGlobal);
    void *pointer = NULL;
    assert_cuda_success(cudaMalloc(&pointer, 4096));
    assert_cuda_success(cudaThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, cudaStreamCaptureModeRelaxed);
    cudaGraph_t graph = NULL;
    assert_cuda_success(cudaStreamEndCapture(stream, &graph));
    assert_cuda_success(cudaGraphDestroy(graph));
    assert_cuda_success(cudaFree(pointer));
    assert_cuda_success(cudaStreamDestroy(stream));
}

Test(runtime_capture, ending_a_capture_that_never_began_is_an_error)
{
    cudaStream_t stream;
    assert_cuda_success(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph = NULL;
    cr_assert_neq(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cr_assert_neq(cudaGetLastError(), cudaSuccess);
    assert_cuda(cudaStreamEndCapture(stream, NULL), cudaErrorInvalidValue);
    assert_cuda_success(cudaStreamDestroy(stream));
}

static void CUDART_CB count_launch(void *counter)
{
    ++*(int *)counter;
}

Test(runtime_capture, a_captured_graph_instantiates_and_replays_on_every_launch)
{
    unsigned char *device = NULL;
    assert_cuda_success(cudaMalloc((void **)&device, 128));
    static unsigned char source[64], result[128];
    static int launches;
    cudaStream_t stream = capturing_stream(cudaStreamCaptureModeGlobal);
    assert_cuda_success(cudaMemsetAsync(device, 0x42, 128, stream));
    assert_cuda_success(cudaMemcpyAsync(device + 64, source, 64, cudaMemcpyHostToDevice, stream));
    assert_cuda_success(cudaMemcpyAsync(result, device, 128, cudaMemcpyDeviceToHost, stream));
    assert_cuda_success(cudaLaunchHostFunc(stream, count_launch, &launches));
    cudaGraph_t graph = NULL;
    assert_cuda_success(cudaStreamEndCapture(stream, &graph));
    size_t count = 0;
    assert_cuda(cudaGraphGetNodes(graph, NULL, NULL), cudaErrorInvalidValue);
    assert_cuda_success(cudaGraphGetNodes(graph, NULL, &count));
    cr_assert_eq(count, 4);

    cudaGraphExec_t exec = NULL;
    cudaGraphInstantiateParams params = {.flags = cudaGraphInstantiateFlagUpload,
                                         .uploadStream = stream,
                                         .result_out = cudaGraphInstantiateError};
    assert_cuda_success(cudaGraphInstantiateWithParams(&exec, graph, &params));
    cr_assert_eq(params.result_out, cudaGraphInstantiateSuccess);
    assert_cuda_success(cudaGraphDestroy(graph));
    for (int launch = 0; launch < 3; launch++) {
        memset(source, launch + 1, sizeof source);
        /* The legacy default stream as well as a created one. */
        assert_cuda_success(cudaGraphLaunch(exec, launch == 1 ? 0 : stream));
        assert_cuda_success(cudaDeviceSynchronize());
        for (size_t i = 0; i < sizeof result; i++)
            cr_assert_eq(result[i], i < 64 ? 0x42 : launch + 1);
        cr_assert_eq(launches, launch + 1);
    }
    assert_cuda_success(cudaGraphExecDestroy(exec));
    assert_cuda(cudaGraphExecDestroy(exec), cudaErrorInvalidResourceHandle);
    assert_cuda_success(cudaStreamDestroy(stream));
    assert_cuda_success(cudaFree(device));
}

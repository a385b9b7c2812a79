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

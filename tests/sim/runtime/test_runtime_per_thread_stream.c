/* Code compiled with --default-stream per-thread (here:
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda_runtime_api.h turns
 * cudaStreamSynchronize into cudaStreamSynchronize_ptsz and so on): stream 0
 * is each thread's own default stream, not the legacy one. */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "compile with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include <stdatomic.h>

#include "runtime_test_support.h"
#include "stream_gate.h"

static void *default_stream_id_of_new_thread(void *id_pointer)
{
    if (cudaStreamGetId(0, id_pointer) != cudaSuccess)
        *(unsigned long long *)id_pointer = 0;
    return NULL;
}

Test(runtime_per_thread_stream, stream_zero_is_a_distinct_stream_in_every_thread)
{
    unsigned long long main_id = 0, other_id = 0, legacy_id = 0, per_thread_id = 0;
    assert_cuda_success(cudaStreamGetId(0, &main_id));
    assert_cuda_success(cudaStreamGetId(cudaStreamLegacy, &legacy_id));
    assert_cuda_success(cudaStreamGetId(cudaStreamPerThread, &per_thread_id));
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, default_stream_id_of_new_thread, &other_id), 0);
    cr_assert_eq(pthread_join(thread, NULL), 0);
    cr_assert_neq(other_id, 0, "cudaStreamGetId failed in the second thread");
    cr_assert_neq(main_id, legacy_id, "stream 0 is the legacy stream under per-thread compilation");
    cr_assert_eq(main_id, per_thread_id);
    cr_assert_neq(main_id, other_id, "two threads share a per-thread default stream");
}

struct blocked_thread {
    struct stream_gate gate;
    atomic_int enqueued;
};

static void *block_own_default_stream(void *blocked_pointer)
{
    struct blocked_thread *blocked = blocked_pointer;
    cudaError_t status = cudaLaunchHostFunc(0, stream_gate_wait, &blocked->gate);
    atomic_store(&blocked->enqueued, status == cudaSuccess ? 1 : -1);
    if (status == cudaSuccess)
        status = cudaStreamSynchronize(0);
    return (void *)(intptr_t)status;
}

/* Starts a thread whose own default stream is held by `blocked`'s gate and
 * waits until its work is queued. */
static void start_blocked_thread(struct blocked_thread *blocked, pthread_t *thread)
{
    cr_assert_eq(pthread_create(thread, NULL, block_own_default_stream, blocked), 0);
    while (atomic_load(&blocked->enqueued) == 0)
        sleep_milliseconds(1);
    cr_assert_eq(atomic_load(&blocked->enqueued), 1);
}

Test(runtime_per_thread_stream, a_busy_default_stream_of_one_thread_does_not_hold_up_another, .timeout = 10)
{
    struct blocked_thread blocked = { STREAM_GATE_INITIALIZER, 0 };
    pthread_t thread;
    start_blocked_thread(&blocked, &thread);
    atomic_int ran = 0;
    assert_cuda_success(cudaLaunchHostFunc(0, raise_flag, &ran));
    assert_cuda_success(cudaStreamSynchronize(0));
    cr_assert_eq(atomic_load(&ran), 1);
    stream_gate_open(&blocked.gate);
    void *status;
    cr_assert_eq(pthread_join(thread, &status), 0);
    cr_assert_eq((intptr_t)status, cudaSuccess);
}

Test(runtime_per_thread_stream, copies_and_fills_on_the_per_thread_stream_round_trip)
{
    enum { size = 1024 };
    unsigned char host[size], back[size];
    for (int index = 0; index < size; index++)
        host[index] = (unsigned char)index;
    void *device_memory = NULL;
    assert_cuda_success(cudaMallocAsync(&device_memory, size, 0));
    assert_cuda_success(cudaMemcpyAsync(device_memory, host, size, cudaMemcpyHostToDevice, 0));
    assert_cuda_success(cudaMemsetAsync(device_memory, 0xee, 8, 0));
    assert_cuda_success(cudaMemcpy(back, device_memory, size, cudaMemcpyDeviceToHost));
    for (int index = 0; index < size; index++)
        cr_assert_eq(back[index], index < 8 ? 0xee : (unsigned char)index, "byte %d", index);
    assert_cuda_success(cudaFreeAsync(device_memory, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
}

Test(runtime_per_thread_stream, driver_entry_points_default_to_the_per_thread_variants)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    assert_cuda_success(cudaGetDriverEntryPointByVersion("cuStreamSynchronize", &function, 13000,
                                                         cudaEnableDefault, &found));
    cr_assert_eq(found, cudaDriverEntryPointSuccess);
    cr_assert_eq(function, driver_symbol("cuStreamSynchronize_ptsz"));
}

/* A graph launched on stream 0 goes to the per-thread stream: launched
 * while that stream captures, its node joins the capture (on the legacy
 * stream it would be an implicit dependency on a capturing blocking stream
 * and fail). */
Test(runtime_per_thread_stream, a_graph_launch_on_stream_zero_uses_the_per_thread_stream)
{
    unsigned char *device = NULL;
    assert_cuda_success(cudaMalloc((void **)&device, 64));
    cudaStream_t side;
    assert_cuda_success(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    assert_cuda_success(cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal));
    assert_cuda_success(cudaMemsetAsync(device, 0x3C, 64, side));
    cudaGraph_t inner = NULL, outer = NULL;
    assert_cuda_success(cudaStreamEndCapture(side, &inner));
    cudaGraphExec_t inner_exec = NULL, outer_exec = NULL;
    assert_cuda_success(cudaGraphInstantiate(&inner_exec, inner, 0));

    assert_cuda_success(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
    assert_cuda_success(cudaGraphLaunch(inner_exec, 0));
    assert_cuda_success(cudaStreamEndCapture(0, &outer));
    size_t count = 0;
    assert_cuda_success(cudaGraphGetNodes(outer, NULL, &count));
    cr_assert_eq(count, 1);

    assert_cuda_success(cudaGraphInstantiate(&outer_exec, outer, 0));
    assert_cuda_success(cudaGraphUpload(outer_exec, 0));
    assert_cuda_success(cudaGraphLaunch(outer_exec, 0));
    unsigned char host[64] = {0};
    assert_cuda_success(cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sizeof host; i++)
        cr_assert_eq(host[i], 0x3C);
    assert_cuda_success(cudaGraphExecDestroy(outer_exec));
    assert_cuda_success(cudaGraphExecDestroy(inner_exec));
    assert_cuda_success(cudaGraphDestroy(outer));
    assert_cuda_success(cudaGraphDestroy(inner));
    assert_cuda_success(cudaFree(device));
}

static void CUDART_CB record_callback_stream(cudaStream_t stream, cudaError_t status, void *seen_pointer)
{
    cudaStream_t *seen = seen_pointer;
    *seen = status == cudaSuccess ? stream : (cudaStream_t)-1;
}

Test(runtime_per_thread_stream, a_stream_callback_runs_on_the_per_thread_stream, .timeout = 10)
{
    /* Another thread's default stream is held: on the legacy stream the
     * callback would wait for it; on this thread's own stream
     * (cudaStreamAddCallback_ptsz) it runs. */
    struct blocked_thread blocked = { STREAM_GATE_INITIALIZER, 0 };
    pthread_t thread;
    start_blocked_thread(&blocked, &thread);
    cudaStream_t seen = (cudaStream_t)-2;
    assert_cuda_success(cudaStreamAddCallback(0, record_callback_stream, &seen, 0));
    assert_cuda_success(cudaStreamSynchronize(0));
    cr_assert_neq(seen, (cudaStream_t)-2, "the callback did not run");
    cr_assert_neq(seen, (cudaStream_t)-1, "the callback saw an error");
    stream_gate_open(&blocked.gate);
    void *status;
    cr_assert_eq(pthread_join(thread, &status), 0);
    cr_assert_eq((intptr_t)status, cudaSuccess);
}

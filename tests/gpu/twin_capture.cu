// Twin of tests/sim/test_sim_capture.c: what a caching allocator observes
// while a stream is captured into a graph.
#include <pthread.h>

#include "twin_driver.h"

static CUcontext context;
static PFN_cuMemAlloc_v3020 allocate;
static PFN_cuMemFree_v3020 release;
static PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange_mode;

struct other_thread_call {
    CUstreamCaptureMode mode;
    CUresult result;
};

static void *allocate_from_other_thread(void *argument)
{
    other_thread_call *call = (other_thread_call *)argument;
    TWIN_ENTRY(cuCtxSetCurrent, 4000)(context);
    CUstreamCaptureMode mode = call->mode;
    exchange_mode(&mode);
    CUdeviceptr pointer;
    call->result = allocate(&pointer, 1024);
    if (call->result == CUDA_SUCCESS)
        release(pointer);
    return NULL;
}

static CUresult allocate_in_other_thread(CUstreamCaptureMode mode)
{
    other_thread_call call = {mode, CUDA_ERROR_UNKNOWN};
    pthread_t thread;
    pthread_create(&thread, NULL, allocate_from_other_thread, &call);
    pthread_join(thread, NULL);
    return call.result;
}

static void CUDA_CB must_not_run(void *argument)
{
    *(int *)argument = 1;
}

int main()
{
    twin_start();
    TWIN_ENTRY(cuCtxGetCurrent, 4000)(&context);
    allocate = TWIN_ENTRY(cuMemAlloc, 3020);
    release = TWIN_ENTRY(cuMemFree, 3020);
    exchange_mode = TWIN_ENTRY(cuThreadExchangeStreamCaptureMode, 10010);
    PFN_cuStreamCreate_v2000 stream_create = TWIN_ENTRY(cuStreamCreate, 2000);
    PFN_cuStreamBeginCapture_v10010 begin = TWIN_ENTRY(cuStreamBeginCapture, 10010);
    PFN_cuStreamEndCapture_v10000 end = TWIN_ENTRY(cuStreamEndCapture, 10000);
    PFN_cuStreamGetCaptureInfo_v12030 capture_info = TWIN_ENTRY(cuStreamGetCaptureInfo, 12030);
    PFN_cuGraphDestroy_v10000 graph_destroy = TWIN_ENTRY(cuGraphDestroy, 10000);
    PFN_cuLaunchHostFunc_v10000 launch_host = TWIN_ENTRY(cuLaunchHostFunc, 10000);
    PFN_cuMemAllocAsync_v11020 allocate_async = TWIN_ENTRY(cuMemAllocAsync, 11020);
    PFN_cuMemFreeAsync_v11020 free_async = TWIN_ENTRY(cuMemFreeAsync, 11020);
    PFN_cuEventCreate_v2000 event_create = TWIN_ENTRY(cuEventCreate, 2000);
    PFN_cuEventRecord_v2000 event_record = TWIN_ENTRY(cuEventRecord, 2000);
    PFN_cuStreamWaitEvent_v3020 wait_event = TWIN_ENTRY(cuStreamWaitEvent, 3020);
    PFN_cuCtxSynchronize_v2000 synchronize = TWIN_ENTRY(cuCtxSynchronize, 2000);

    CUstream origin, joined, blocking;
    TWIN_OK(stream_create(&origin, CU_STREAM_NON_BLOCKING));
    TWIN_OK(stream_create(&joined, CU_STREAM_NON_BLOCKING));
    TWIN_OK(stream_create(&blocking, CU_STREAM_DEFAULT));
    CUgraph graph;

    /* A thread-local capture does not stop other threads; a global one does,
     * unless they are relaxed. */
    TWIN_OK(begin(origin, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    TWIN_OK(allocate_in_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL));
    TWIN_OK(end(origin, &graph));
    TWIN_OK(graph_destroy(graph));
    TWIN_OK(begin(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TWIN_EXPECT(allocate_in_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL),
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    TWIN_OK(allocate_in_other_thread(CU_STREAM_CAPTURE_MODE_RELAXED));
    TWIN_EXPECT(end(origin, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* Captured work does not run; graph allocations are stream ordered in
     * the graph, and an event recorded inside joins the capture. */
    int ran = 0;
    TWIN_OK(begin(origin, CU_STREAM_CAPTURE_MODE_GLOBAL));
    TWIN_OK(launch_host(origin, must_not_run, &ran));
    CUdeviceptr graph_memory;
    TWIN_OK(allocate_async(&graph_memory, 1 << 20, origin));
    CUevent fork_point;
    TWIN_OK(event_create(&fork_point, CU_EVENT_DISABLE_TIMING));
    TWIN_OK(event_record(fork_point, origin));
    TWIN_OK(wait_event(joined, fork_point, 0));
    CUstreamCaptureStatus status;
    cuuint64_t origin_id = 0, joined_id = 1;
    TWIN_OK(capture_info(origin, &status, &origin_id, NULL, NULL, NULL, NULL));
    TWIN_OK(capture_info(joined, &status, &joined_id, NULL, NULL, NULL, NULL));
    TWIN_CHECK(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && origin_id == joined_id);
    TWIN_EXPECT(end(joined, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    /* Rejoin before ending: the origin waits for the joined stream. */
    CUevent join_point;
    TWIN_OK(event_create(&join_point, CU_EVENT_DISABLE_TIMING));
    TWIN_OK(event_record(join_point, joined));
    TWIN_OK(wait_event(origin, join_point, 0));
    TWIN_OK(free_async(graph_memory, origin));
    TWIN_OK(end(origin, &graph));
    TWIN_OK(synchronize());
    TWIN_CHECK(ran == 0);
    TWIN_OK(graph_destroy(graph));

    /* Legacy-stream work while a blocking stream captures would depend on
     * the capture. */
    TWIN_OK(begin(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    TWIN_EXPECT(launch_host(CU_STREAM_LEGACY, must_not_run, &ran),
                CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    TWIN_EXPECT(end(blocking, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    return twin_finish("twin_capture");
}

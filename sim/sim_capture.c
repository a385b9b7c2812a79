/* Stream capture: which streams are capturing (the origin and the streams
 * that joined it by waiting on an event recorded in it), which calls are
 * forbidden meanwhile, and allocations made into the graph. Work queued on
 * any stream of the capture becomes a node of its graph (sim_graph.c), in
 * capture order, and runs only when the graph is instantiated and
 * launched. Event records and waits inside a capture add no node: the edges
 * they make are already respected by capture order. Not simulated: the
 * dependency frontier (cuStreamGetCaptureInfo reports none),
 * cuStreamUpdateCaptureDependencies and capturing into an existing graph. */
#include "sim_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

static LIST_HEAD(, sim_capture) active_captures = LIST_HEAD_INITIALIZER(active_captures);
static _Thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

struct sim_capture *sim_capture_find(unsigned long long id)
{
    struct sim_capture *capture;
    LIST_FOREACH(capture, &active_captures, link)
        if (capture->id == id)
            return capture;
    return NULL;
}

void sim_capture_invalidate(struct sim_capture *capture)
{
    capture->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
}

/* A call is "potentially unsafe" during capture (CUDA's wording): the rules
 * of cuThreadExchangeStreamCaptureMode decide whether this thread may make
 * it now. */
CUresult sim_capture_check_unsafe_call(void)
{
    if (!atomic_load(&sim.initialized))
        return CUDA_SUCCESS;
    CUresult result = CUDA_SUCCESS;
    pthread_t self = pthread_self();
    sim_lock();
    struct sim_capture *capture;
    LIST_FOREACH(capture, &active_captures, link) {
        bool own = pthread_equal(capture->thread, self);
        bool forbids = false;
        if (thread_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
            forbids = (own && capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
                      (!own && capture->mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
        else if (thread_capture_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            forbids = own && capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        if (forbids) {
            sim_capture_invalidate(capture);
            result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    sim_unlock();
    return result;
}

/* Detaches every stream of the capture's context from it. */
static void capture_detach(struct sim_capture *capture)
{
    struct sim_stream *stream;
    LIST_FOREACH(stream, &capture->origin->context->streams, context_link)
        if (stream->capture == capture)
            stream->capture = NULL;
    LIST_REMOVE(capture, link);
}

void sim_capture_abandon(struct sim_capture *capture)
{
    capture_detach(capture);
    sim_graph_destroy(capture->graph);
    free(capture);
}

void sim_capture_teardown(struct sim_context *context)
{
    struct sim_capture *capture = LIST_FIRST(&active_captures);
    while (capture != NULL) {
        struct sim_capture *next = LIST_NEXT(capture, link);
        if (capture->origin->context == context)
            sim_capture_abandon(capture);
        capture = next;
    }
}

CUresult sim_capture_allocate(struct sim_stream *stream, size_t size, CUdeviceptr *address)
{
    /* The allocation node itself does nothing when the graph runs: the
     * memory is mapped while the graph is instantiated. */
    struct sim_work allocation_node = {.kind = SIM_WORK_MARKER};
    CUresult result = sim_capture_record(stream->capture, &allocation_node);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_range *range =
        sim_range_new(SIM_RANGE_CAPTURED, stream->context, stream->context->device);
    if (range == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Reserved but inaccessible: the memory exists only while the graph
     * runs, and touching it before then faults. */
    size_t span = (size + SIM_LARGE_PAGE - 1) / SIM_LARGE_PAGE * SIM_LARGE_PAGE;
    void *base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        free(range);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    range->base = (uintptr_t)base;
    range->size = size;
    range->mapping = base;
    range->mapping_size = span;
    range->graph = stream->capture->graph;
    sim_range_insert(range);
    *address = (CUdeviceptr)range->base;
    return CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode, bool per_thread_default)
{
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    if (stream->legacy)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct sim_capture *capture = calloc(1, sizeof *capture);
    struct sim_graph *graph = calloc(1, sizeof *graph);
    if (capture == NULL || graph == NULL) {
        free(capture);
        free(graph);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_lock();
    if (stream->capture != NULL) {
        sim_unlock();
        free(capture);
        free(graph);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    capture->id = sim_next_id();
    capture->mode = mode;
    capture->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    capture->origin = stream;
    capture->thread = pthread_self();
    capture->graph = graph;
    graph->capturing = true;
    LIST_INSERT_HEAD(&active_captures, capture, link);
    stream->capture = capture;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT_VARIANT(cuStreamBeginCapture, (CUstream hStream),
                   begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false))

SIM_EXPORT_VARIANT(cuStreamBeginCapture_ptsz, (CUstream hStream),
                   begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true))

SIM_EXPORT_VARIANT(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode),
                   begin_capture(hStream, mode, false))

SIM_EXPORT_VARIANT(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode),
                   begin_capture(hStream, mode, true))

static CUresult end_capture(CUstream hStream, CUgraph *phGraph, bool per_thread_default)
{
    if (phGraph == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_capture *capture = stream->capture;
    if (capture == NULL) {
        result = CUDA_ERROR_ILLEGAL_STATE;
    } else if (capture->origin != stream) {
        result = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    } else if (capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
               !pthread_equal(capture->thread, pthread_self())) {
        result = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else {
        capture_detach(capture);
        struct sim_graph *graph = capture->graph;
        graph->capturing = false;
        if (capture->status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
            sim_graph_destroy(graph);
            *phGraph = NULL;
            result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            sim_handle_register(&graph->handle, SIM_HANDLE_GRAPH);
            *phGraph = (CUgraph)graph;
        }
        free(capture);
    }
    sim_unlock();
    return result;
}

SIM_EXPORT_VARIANT(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph),
                   end_capture(hStream, phGraph, false))

SIM_EXPORT_VARIANT(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph),
                   end_capture(hStream, phGraph, true))

/* Capture status and id of a stream. The legacy stream cannot capture, and
 * asking about it while a blocking stream captures would be an implicit
 * dependency on the capture. */
static CUresult capture_state(CUstream hStream, bool per_thread_default,
                              CUstreamCaptureStatus *status, cuuint64_t *id)
{
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    *id = 0;
    if (stream->legacy) {
        struct sim_stream *other;
        LIST_FOREACH(other, &stream->context->streams, context_link)
            if (other->capture != NULL && (other->flags & CU_STREAM_NON_BLOCKING) == 0)
                result = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    } else if (stream->capture != NULL) {
        *status = stream->capture->status;
        *id = stream->capture->id;
    }
    sim_unlock();
    return result;
}

static CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *captureStatus,
                             bool per_thread_default)
{
    if (captureStatus == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t id;
    return capture_state(hStream, per_thread_default, captureStatus, &id);
}

SIM_EXPORT_VARIANT(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
                   is_capturing(hStream, captureStatus, false))

SIM_EXPORT_VARIANT(cuStreamIsCapturing_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus),
                   is_capturing(hStream, captureStatus, true))

static CUresult capture_info(CUstream hStream, bool per_thread_default,
                             CUstreamCaptureStatus *status_out, cuuint64_t *id_out,
                             CUgraph *graph_out, const CUgraphNode **dependencies_out,
                             const CUgraphEdgeData **edge_data_out, size_t *dependency_count_out)
{
    if (status_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t id;
    CUresult result = capture_state(hStream, per_thread_default, status_out, &id);
    if (result != CUDA_SUCCESS)
        return result;
    if (id_out != NULL)
        *id_out = id;
    /* The graph under construction and its dependency frontier are not
     * observable on the simulator. */
    if (graph_out != NULL)
        *graph_out = NULL;
    if (dependencies_out != NULL)
        *dependencies_out = NULL;
    if (edge_data_out != NULL)
        *edge_data_out = NULL;
    if (dependency_count_out != NULL)
        *dependency_count_out = 0;
    return CUDA_SUCCESS;
}

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
                   capture_info(hStream, false, captureStatus_out, id_out, NULL, NULL, NULL, NULL))

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
                   capture_info(hStream, true, captureStatus_out, id_out, NULL, NULL, NULL, NULL))

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo_v2,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                    CUgraph *graph_out, const CUgraphNode **dependencies_out,
                    size_t *numDependencies_out),
                   capture_info(hStream, false, captureStatus_out, id_out, graph_out,
                                dependencies_out, NULL, numDependencies_out))

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo_v2_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                    CUgraph *graph_out, const CUgraphNode **dependencies_out,
                    size_t *numDependencies_out),
                   capture_info(hStream, true, captureStatus_out, id_out, graph_out,
                                dependencies_out, NULL, numDependencies_out))

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo_v3,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                    CUgraph *graph_out, const CUgraphNode **dependencies_out,
                    const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
                   capture_info(hStream, false, captureStatus_out, id_out, graph_out,
                                dependencies_out, edgeData_out, numDependencies_out))

SIM_EXPORT_VARIANT(cuStreamGetCaptureInfo_v3_ptsz,
                   (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
                    CUgraph *graph_out, const CUgraphNode **dependencies_out,
                    const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
                   capture_info(hStream, true, captureStatus_out, id_out, graph_out,
                                dependencies_out, edgeData_out, numDependencies_out))

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    SIM_ENTER("cuThreadExchangeStreamCaptureMode");
    if (mode == NULL || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                         *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                         *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode previous = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
}

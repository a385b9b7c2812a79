/* Stream capture's begin and end, which the library follows so that its hot
 * paths ask the driver whether a stream captures only while some capture
 * may be in progress (capture_tracking.h). Every call goes to the driver
 * with the program's exact arguments. */
#include "capture_tracking.h"
#include "hook_support.h"
#include "hooks.h"

/* Unavailable in this driver: the program could not have resolved it. */
#define MISSING_ENTRY_POINT CUDA_ERROR_NOT_SUPPORTED

#define BEGIN_CAPTURE(real_call)                  \
    do {                                          \
        capture_tracking_beginning();             \
        CUresult begin_result = (real_call);      \
        capture_tracking_begun(begin_result == CUDA_SUCCESS); \
        return begin_result;                      \
    } while (0)

CUresult cuStreamBeginCapture(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture(hStream));
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture_ptsz)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture_ptsz(hStream));
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture_v2)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture_v2(hStream, mode));
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture_v2_ptsz)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture_v2_ptsz(hStream, mode));
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData,
                                     size_t numDependencies, CUstreamCaptureMode mode)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture_to_graph)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture_to_graph(hStream, hGraph, dependencies,
                                                        dependencyData, numDependencies, mode));
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!driver->stream_begin_capture_to_graph_ptsz)
        return MISSING_ENTRY_POINT;
    BEGIN_CAPTURE(driver->stream_begin_capture_to_graph_ptsz(
        hStream, hGraph, dependencies, dependencyData, numDependencies, mode));
}

/* The driver's capture status of `stream`; false when it cannot tell. */
static bool capture_status(const struct real_driver *driver, CUstream stream, bool per_thread,
                           CUstreamCaptureStatus *status)
{
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!driver->stream_is_capturing || !driver->stream_is_capturing_ptsz)
        return false;
    CUresult result = per_thread ? driver->stream_is_capturing_ptsz(stream, status)
                                 : driver->stream_is_capturing(stream, status);
    return result == CUDA_SUCCESS;
}

/* An end only counts when the driver confirms the stream captured before
 * and does not after: a failed end, or an end on a stream that merely
 * joined the capture, leaves the capture in progress. */
static CUresult end_capture(const struct real_driver *driver,
                            PFN_cuStreamEndCapture_v10000 real_end, bool per_thread,
                            CUstream stream, CUgraph *graph)
{
    if (!real_end)
        return MISSING_ENTRY_POINT;
    CUstreamCaptureStatus before, after;
    bool was_capturing = capture_status(driver, stream, per_thread, &before) &&
                         before != CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult result = real_end(stream, graph);
    if (was_capturing && capture_status(driver, stream, per_thread, &after) &&
        after == CU_STREAM_CAPTURE_STATUS_NONE)
        capture_tracking_ended();
    return result;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    return end_capture(driver, driver->stream_end_capture, false, hStream, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    const struct real_driver *driver = hook_driver();
    if (!driver)
        return CUDA_ERROR_NOT_INITIALIZED;
    return end_capture(driver, driver->stream_end_capture_ptsz, true, hStream, phGraph);
}

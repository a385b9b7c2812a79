/* Events: a record is an item in its stream; the event is complete once the
 * stream's worker has passed it. */
#include "sim_internal.h"

#include <stdlib.h>
#include <time.h>

/* Events of all contexts, so a context teardown can find its own. Under
 * sim.lock. */
struct event_list_entry {
    struct sim_event *event;
    LIST_ENTRY(event_list_entry) link;
};
static LIST_HEAD(, event_list_entry) live_events = LIST_HEAD_INITIALIZER(live_events);

void sim_event_release(struct sim_event *event)
{
    if (atomic_fetch_sub(&event->references, 1) != 1)
        return;
    if (event->stream != NULL)
        sim_stream_release(event->stream);
    sim_clock_free(&event->race_clock);
    pthread_mutex_destroy(&event->mutex);
    free(event);
}

void sim_event_complete(struct sim_event *event, unsigned long long generation)
{
    pthread_mutex_lock(&event->mutex);
    if (event->generation == generation) {
        clock_gettime(CLOCK_MONOTONIC, &event->timestamp);
        event->timestamp_valid = true;
    }
    pthread_mutex_unlock(&event->mutex);
}

/* Validates an event handle; the caller gets a reference. */
static CUresult event_acquire(CUevent hEvent, struct sim_event **event)
{
    sim_lock();
    bool live = sim_handle_is_live(hEvent, SIM_HANDLE_EVENT);
    if (live) {
        *event = (struct sim_event *)hEvent;
        atomic_fetch_add(&(*event)->references, 1);
    }
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    SIM_ENTER("cuEventCreate");
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (phEvent == NULL || (Flags & ~known) != 0 ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_event *event = calloc(1, sizeof *event);
    struct event_list_entry *entry = malloc(sizeof *entry);
    if (event == NULL || entry == NULL) {
        free(event);
        free(entry);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    event->context = context;
    event->flags = Flags;
    atomic_init(&event->references, 1);
    pthread_mutex_init(&event->mutex, NULL);
    entry->event = event;
    sim_lock();
    sim_handle_register(&event->handle, SIM_HANDLE_EVENT);
    LIST_INSERT_HEAD(&live_events, entry, link);
    sim_unlock();
    *phEvent = (CUevent)event;
    return CUDA_SUCCESS;
}

/* Under sim.lock. */
static void event_forget(struct sim_event *event)
{
    sim_handle_unregister(&event->handle);
    struct event_list_entry *entry;
    LIST_FOREACH(entry, &live_events, link) {
        if (entry->event == event) {
            LIST_REMOVE(entry, link);
            free(entry);
            break;
        }
    }
}

static CUresult event_destroy(CUevent hEvent)
{
    sim_lock();
    if (!sim_handle_is_live(hEvent, SIM_HANDLE_EVENT)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct sim_event *event = (struct sim_event *)hEvent;
    event_forget(event);
    sim_unlock();
    /* A pending record keeps its own reference, so destroying an event whose
     * work has not finished is allowed, as in CUDA. */
    sim_event_release(event);
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuEventDestroy, cuEventDestroy_v2, (CUevent hEvent), event_destroy(hEvent))

void sim_events_teardown(struct sim_context *context)
{
    struct event_list_entry *entry = LIST_FIRST(&live_events);
    while (entry != NULL) {
        struct event_list_entry *next = LIST_NEXT(entry, link);
        struct sim_event *event = entry->event;
        if (event->context == context) {
            event_forget(event);
            sim_event_release(event);
        }
        entry = next;
    }
}

/* The stream and the event an operation between the two names; checks that
 * `flags` uses only the bits in `known_flags`. The event comes back with a
 * reference the caller releases. */
static CUresult resolve_stream_and_event(CUstream hStream, CUevent hEvent, unsigned int flags,
                                         unsigned int known_flags, bool per_thread_default,
                                         struct sim_stream **stream, struct sim_event **event)
{
    if ((flags & ~known_flags) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, stream);
    if (result != CUDA_SUCCESS)
        return result;
    return event_acquire(hEvent, event);
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned int flags,
                             bool per_thread_default)
{
    struct sim_stream *stream;
    struct sim_event *event;
    CUresult result = resolve_stream_and_event(hStream, hEvent, flags, CU_EVENT_RECORD_EXTERNAL,
                                               per_thread_default, &stream, &event);
    if (result != CUDA_SUCCESS)
        return result;
    if (event->context != stream->context) {
        sim_event_release(event);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&event->mutex);
    sim_lock();
    unsigned long long capture_id = 0;
    if (stream->capture != NULL) {
        /* Recorded into the graph: the event now belongs to the capture and
         * cannot be queried or waited for from the host. */
        capture_id = stream->capture->id;
    }
    sim_unlock();
    if (capture_id != 0) {
        event->capture_id = capture_id;
        pthread_mutex_unlock(&event->mutex);
        sim_event_release(event);
        return CUDA_SUCCESS;
    }
    struct sim_work work = {.kind = SIM_WORK_EVENT_RECORD};
    work.u.record.event = event; /* the item owns the acquired reference */
    work.u.record.generation = event->generation + 1;
    unsigned long long sequence;
    result = sim_stream_submit(stream, &work, &sequence);
    if (result == CUDA_SUCCESS) {
        event->generation++;
        event->timestamp_valid = false;
        event->capture_id = 0;
        sim_stream_retain(stream);
        if (event->stream != NULL)
            sim_stream_release(event->stream);
        event->stream = stream;
        event->sequence = sequence;
    }
    pthread_mutex_unlock(&event->mutex);
    if (result != CUDA_SUCCESS)
        sim_event_release(event);
    return result;
}

SIM_EXPORT_VARIANT(cuEventRecord, (CUevent hEvent, CUstream hStream),
                   event_record(hEvent, hStream, 0, false))

SIM_EXPORT_VARIANT(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream),
                   event_record(hEvent, hStream, 0, true))

SIM_EXPORT_VARIANT(cuEventRecordWithFlags, (CUevent hEvent, CUstream hStream, unsigned int flags),
                   event_record(hEvent, hStream, flags, false))

SIM_EXPORT_VARIANT(cuEventRecordWithFlags_ptsz,
                   (CUevent hEvent, CUstream hStream, unsigned int flags),
                   event_record(hEvent, hStream, flags, true))

/* The state of the last record: NULL stream when never recorded. `clock`
 * receives that record's race-detector clock. */
static void event_target(struct sim_event *event, struct sim_stream **stream,
                         unsigned long long *sequence, unsigned long long *capture_id,
                         struct sim_clock *clock)
{
    pthread_mutex_lock(&event->mutex);
    sim_racecheck_copy_event_clock(event, clock);
    *stream = event->stream;
    if (*stream != NULL)
        sim_stream_retain(*stream);
    *sequence = event->sequence;
    *capture_id = event->capture_id;
    pthread_mutex_unlock(&event->mutex);
}

static CUresult event_wait_or_query(CUevent hEvent, bool wait)
{
    CUresult result = sim_capture_check_unsafe_call();
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_event *event;
    result = event_acquire(hEvent, &event);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_stream *stream;
    unsigned long long sequence;
    unsigned long long capture_id;
    struct sim_clock recorded = {0};
    event_target(event, &stream, &sequence, &capture_id, &recorded);
    if (capture_id != 0)
        result = CUDA_ERROR_CAPTURED_EVENT;
    else if (stream != NULL && wait) {
        sim_stream_wait_for(stream, sequence);
        result = sim_sticky_error_or(stream->context, result);
    }
    else if (stream != NULL && !sim_stream_reached(stream, sequence))
        result = CUDA_ERROR_NOT_READY;
    /* A synchronize, or a query that found the event complete, tells the
     * host that the recorded work is done. */
    if (result == CUDA_SUCCESS)
        sim_racecheck_host_observes(&recorded);
    sim_clock_free(&recorded);
    if (stream != NULL)
        sim_stream_release(stream);
    sim_event_release(event);
    return result;
}

SIM_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
    SIM_ENTER("cuEventQuery");
    return event_wait_or_query(hEvent, false);
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    SIM_ENTER("cuEventSynchronize");
    atomic_fetch_add(&sim.synchronizations, 1);
    return event_wait_or_query(hEvent, true);
}

static CUresult elapsed_time(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (pMilliseconds == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_event *start, *end;
    CUresult result = event_acquire(hStart, &start);
    if (result != CUDA_SUCCESS)
        return result;
    result = event_acquire(hEnd, &end);
    if (result != CUDA_SUCCESS) {
        sim_event_release(start);
        return result;
    }
    struct sim_event *pair[2] = {start, end};
    struct timespec stamps[2];
    for (int i = 0; i < 2 && result == CUDA_SUCCESS; i++) {
        pthread_mutex_lock(&pair[i]->mutex);
        if ((pair[i]->flags & CU_EVENT_DISABLE_TIMING) || pair[i]->stream == NULL ||
            pair[i]->capture_id != 0)
            result = CUDA_ERROR_INVALID_HANDLE;
        else if (!pair[i]->timestamp_valid)
            result = CUDA_ERROR_NOT_READY;
        stamps[i] = pair[i]->timestamp;
        pthread_mutex_unlock(&pair[i]->mutex);
    }
    if (result == CUDA_SUCCESS)
        *pMilliseconds = (float)((double)(stamps[1].tv_sec - stamps[0].tv_sec) * 1e3 +
                                 (double)(stamps[1].tv_nsec - stamps[0].tv_nsec) / 1e6);
    sim_event_release(start);
    sim_event_release(end);
    return result;
}

SIM_EXPORT_SAME_VARIANTS(cuEventElapsedTime, cuEventElapsedTime_v2,
                         (float *pMilliseconds, CUevent hStart, CUevent hEnd),
                         elapsed_time(pMilliseconds, hStart, hEnd))

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int Flags,
                                  bool per_thread_default)
{
    struct sim_stream *stream;
    struct sim_event *event;
    CUresult result = resolve_stream_and_event(hStream, hEvent, Flags, CU_EVENT_WAIT_EXTERNAL,
                                               per_thread_default, &stream, &event);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_stream *target;
    unsigned long long sequence;
    unsigned long long capture_id;
    struct sim_clock recorded = {0};
    event_target(event, &target, &sequence, &capture_id, &recorded);
    if (capture_id != 0) {
        /* Waiting on an event recorded in a capture joins that capture. */
        sim_lock();
        struct sim_capture *capture = sim_capture_find(capture_id);
        if (capture == NULL)
            result = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        else if (stream->capture == NULL && !stream->legacy)
            stream->capture = capture;
        else if (stream->capture != capture)
            result = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        sim_unlock();
    } else if (target != NULL) {
        struct sim_work work = {.kind = SIM_WORK_WAIT};
        sim_stream_retain(target);
        work.u.wait.stream = target;
        work.u.wait.sequence = sequence;
        work.u.wait.happens_after = &recorded;
        result = sim_stream_submit(stream, &work, NULL);
        if (result != CUDA_SUCCESS)
            sim_stream_release(target);
    }
    if (target != NULL)
        sim_stream_release(target);
    sim_clock_free(&recorded);
    sim_event_release(event);
    return result;
}

SIM_EXPORT_VARIANT(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
                   stream_wait_event(hStream, hEvent, Flags, false))

SIM_EXPORT_VARIANT(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags),
                   stream_wait_event(hStream, hEvent, Flags, true))

/* Streams: one worker thread per stream runs its work in order, and the
 * legacy default stream's implicit ordering with blocking streams is added
 * when work is queued.
 *
 * Lock order: event mutex, then context submit_lock, then sim.lock, then a
 * stream mutex. Workers hold no lock while they run an item.
 *
 * One file because queueing, the legacy stream's implicit ordering and the
 * workers share one lock order that reads only when it is all in view. */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void sim_stream_retain(struct sim_stream *stream)
{
    atomic_fetch_add(&stream->references, 1);
}

void sim_stream_release(struct sim_stream *stream)
{
    if (atomic_fetch_sub(&stream->references, 1) != 1)
        return;
    pthread_mutex_destroy(&stream->mutex);
    pthread_cond_destroy(&stream->changed);
    free(stream);
}

static void run_set(const struct sim_work *work)
{
    for (size_t row = 0; row < work->u.set.height; row++) {
        unsigned char *line = (unsigned char *)(work->u.set.destination + row * work->u.set.pitch);
        switch (work->u.set.element_size) {
        case 1:
            memset(line, (int)(work->u.set.value & 0xFF), work->u.set.width);
            break;
        case 2: {
            uint16_t value = (uint16_t)work->u.set.value;
            for (size_t i = 0; i < work->u.set.width; i++)
                memcpy(line + 2 * i, &value, 2);
            break;
        }
        default: {
            uint32_t value = work->u.set.value;
            for (size_t i = 0; i < work->u.set.width; i++)
                memcpy(line + 4 * i, &value, 4);
            break;
        }
        }
    }
}

static void run_work(struct sim_stream *stream, struct sim_work *work)
{
    switch (work->kind) {
    case SIM_WORK_COPY:
        for (size_t row = 0; row < work->u.copy.height; row++)
            memmove(work->u.copy.destination + row * work->u.copy.destination_pitch,
                    work->u.copy.source + row * work->u.copy.source_pitch, work->u.copy.bytes);
        break;
    case SIM_WORK_SET:
        run_set(work);
        break;
    case SIM_WORK_HOST_FUNCTION:
        work->u.host.function(work->u.host.user_data);
        break;
    case SIM_WORK_STREAM_CALLBACK:
        work->u.callback.function((CUstream)stream, CUDA_SUCCESS, work->u.callback.user_data);
        break;
    case SIM_WORK_EVENT_RECORD:
        sim_event_complete(work->u.record.event, work->u.record.generation);
        sim_event_release(work->u.record.event);
        break;
    case SIM_WORK_WAIT:
        sim_stream_wait_for(work->u.wait.stream, work->u.wait.sequence);
        sim_stream_release(work->u.wait.stream);
        break;
    case SIM_WORK_FREE:
        sim_lock();
        sim_pool_free_now(work->u.free.range);
        sim_unlock();
        break;
    case SIM_WORK_MARKER:
        break;
    case SIM_WORK_WAIT_VALUE:
        sim_wait_value(work);
        break;
    case SIM_WORK_WRITE_VALUE:
        sim_write_value(work);
        break;
    case SIM_WORK_KERNEL:
        sim_kernel_run(work->u.kernel.launch);
        break;
    }
}

static void *stream_worker(void *argument)
{
    struct sim_stream *stream = argument;
    pthread_mutex_lock(&stream->mutex);
    for (;;) {
        while (TAILQ_EMPTY(&stream->queue) && !stream->closing)
            pthread_cond_wait(&stream->changed, &stream->mutex);
        if (TAILQ_EMPTY(&stream->queue))
            break;
        struct sim_work *work = TAILQ_FIRST(&stream->queue);
        TAILQ_REMOVE(&stream->queue, work, link);
        pthread_mutex_unlock(&stream->mutex);
        run_work(stream, work);
        pthread_mutex_lock(&stream->mutex);
        stream->completed = work->sequence;
        pthread_cond_broadcast(&stream->changed);
        free(work);
    }
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
    sim_lock();
    LIST_REMOVE(stream, context_link);
    sim_racecheck_stream_finished(stream);
    sim_unlock();
    sim_stream_release(stream);
    return NULL;
}

CUresult sim_stream_create(struct sim_context *context, unsigned flags, int priority, bool legacy,
                           bool per_thread, struct sim_stream **out)
{
    struct sim_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stream->context = context;
    stream->flags = flags;
    stream->priority = priority;
    stream->legacy = legacy;
    stream->per_thread = per_thread;
    stream->id = sim_next_id();
    /* The worker's reference; it ends when the stream is closed and drained. */
    atomic_init(&stream->references, 1);
    pthread_mutex_init(&stream->mutex, NULL);
    pthread_cond_init(&stream->changed, NULL);
    TAILQ_INIT(&stream->queue);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    pthread_t thread;
    int failed = pthread_create(&thread, &attributes, stream_worker, stream);
    pthread_attr_destroy(&attributes);
    if (failed) {
        pthread_mutex_destroy(&stream->mutex);
        pthread_cond_destroy(&stream->changed);
        free(stream);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    LIST_INSERT_HEAD(&context->streams, stream, context_link);
    sim_racecheck_stream_created(stream);
    if (!legacy && !per_thread)
        sim_handle_register(&stream->handle, SIM_HANDLE_STREAM);
    *out = stream;
    return CUDA_SUCCESS;
}

void sim_stream_close(struct sim_stream *stream)
{
    if (stream->closed)
        return;
    stream->closed = true;
    sim_racecheck_stream_closed(stream);
    if (stream->handle.kind == SIM_HANDLE_STREAM)
        sim_handle_unregister(&stream->handle);
    if (stream->capture != NULL && stream->capture->origin == stream)
        sim_capture_abandon(stream->capture);
    stream->capture = NULL;
    pthread_mutex_lock(&stream->mutex);
    stream->closing = true;
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
}

/* ---- per-thread default streams ----------------------------------------- */

struct per_thread_stream {
    struct sim_context *context;
    unsigned long long context_id;
    struct sim_stream *stream;
};

#define PER_THREAD_STREAM_SLOTS 8
static _Thread_local struct per_thread_stream per_thread_streams[PER_THREAD_STREAM_SLOTS];

static pthread_key_t thread_exit_key;
static pthread_once_t thread_exit_key_once = PTHREAD_ONCE_INIT;

/* A thread's per-thread default streams end with the thread; work it queued
 * there still runs. */
static void close_per_thread_streams(void *unused)
{
    (void)unused;
    sim_lock();
    for (int i = 0; i < PER_THREAD_STREAM_SLOTS; i++) {
        struct per_thread_stream *slot = &per_thread_streams[i];
        if (slot->context != NULL && sim_handle_is_live(slot->context, SIM_HANDLE_CONTEXT) &&
            slot->context->active && slot->context_id == slot->context->id)
            sim_stream_close(slot->stream);
        slot->context = NULL;
    }
    sim_unlock();
}

static void create_thread_exit_key(void)
{
    if (pthread_key_create(&thread_exit_key, close_per_thread_streams) != 0)
        abort();
}

/* Under sim.lock. */
static CUresult per_thread_stream(struct sim_context *context, struct sim_stream **out)
{
    struct per_thread_stream *free_slot = NULL;
    for (int i = 0; i < PER_THREAD_STREAM_SLOTS; i++) {
        struct per_thread_stream *slot = &per_thread_streams[i];
        if (slot->context == context && slot->context_id == context->id) {
            *out = slot->stream;
            return CUDA_SUCCESS;
        }
        if (free_slot == NULL &&
            (slot->context == NULL || slot->context_id != slot->context->id ||
             !sim_handle_is_live(slot->context, SIM_HANDLE_CONTEXT)))
            free_slot = slot;
    }
    if (free_slot == NULL)
        free_slot = &per_thread_streams[0];
    struct sim_stream *stream;
    /* The per-thread stream is a blocking stream: it orders with the legacy
     * default stream like any stream created without CU_STREAM_NON_BLOCKING. */
    CUresult result = sim_stream_create(context, 0, 0, false, true, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    free_slot->context = context;
    free_slot->context_id = context->id;
    free_slot->stream = stream;
    pthread_once(&thread_exit_key_once, create_thread_exit_key);
    pthread_setspecific(thread_exit_key, per_thread_streams);
    *out = stream;
    return CUDA_SUCCESS;
}

CUresult sim_stream_resolve(CUstream handle, bool per_thread_default, struct sim_stream **stream)
{
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (handle == CU_STREAM_LEGACY || (handle == NULL && !per_thread_default)) {
        *stream = context->legacy_stream;
    } else if (handle == CU_STREAM_PER_THREAD || handle == NULL) {
        result = per_thread_stream(context, stream);
    } else if (sim_handle_is_live(handle, SIM_HANDLE_STREAM)) {
        *stream = (struct sim_stream *)handle;
    } else {
        result = CUDA_ERROR_INVALID_HANDLE;
    }
    sim_unlock();
    return result;
}

/* ---- queueing ----------------------------------------------------------- */

static bool is_blocking(const struct sim_stream *stream)
{
    return !stream->legacy && (stream->flags & CU_STREAM_NON_BLOCKING) == 0;
}

static bool has_pending_work(struct sim_stream *stream, unsigned long long *last)
{
    pthread_mutex_lock(&stream->mutex);
    *last = stream->submitted;
    bool pending = stream->completed < stream->submitted;
    pthread_mutex_unlock(&stream->mutex);
    return pending;
}

/* Queues `work`, which the worker frees once done; returns its sequence. */
static unsigned long long append(struct sim_stream *stream, struct sim_work *work)
{
    pthread_mutex_lock(&stream->mutex);
    unsigned long long sequence = ++stream->submitted;
    work->sequence = sequence;
    TAILQ_INSERT_TAIL(&stream->queue, work, link);
    pthread_cond_broadcast(&stream->changed);
    pthread_mutex_unlock(&stream->mutex);
    return sequence;
}

static void append_wait(struct sim_stream *stream, struct sim_stream *target,
                        unsigned long long sequence)
{
    struct sim_work *wait = calloc(1, sizeof *wait);
    if (wait == NULL)
        abort();
    wait->kind = SIM_WORK_WAIT;
    sim_stream_retain(target);
    wait->u.wait.stream = target;
    wait->u.wait.sequence = sequence;
    append(stream, wait);
}

/* Under sim.lock: the legacy stream's implicit dependencies. Returns
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT when one of them is being captured. */
static CUresult add_implicit_waits(struct sim_stream *stream)
{
    struct sim_context *context = stream->context;
    unsigned long long last;
    if (stream->legacy) {
        struct sim_stream *other;
        LIST_FOREACH(other, &context->streams, context_link) {
            if (other == stream || !is_blocking(other))
                continue;
            if (other->capture != NULL) {
                sim_capture_invalidate(other->capture);
                return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
            }
        }
        LIST_FOREACH(other, &context->streams, context_link)
            if (other != stream && is_blocking(other) && has_pending_work(other, &last))
                append_wait(stream, other, last);
    } else if (is_blocking(stream) && stream->capture == NULL) {
        struct sim_stream *legacy = context->legacy_stream;
        if (legacy != NULL && has_pending_work(legacy, &last))
            append_wait(stream, legacy, last);
    }
    return CUDA_SUCCESS;
}

CUresult sim_stream_submit(struct sim_stream *stream, const struct sim_work *work,
                           unsigned long long *sequence)
{
    return sim_stream_submit_observed(stream, work, sequence, NULL);
}

CUresult sim_stream_submit_observed(struct sim_stream *stream, const struct sim_work *work,
                                    unsigned long long *sequence, struct sim_clock *observed)
{
    struct sim_work *copy = malloc(sizeof *copy);
    if (copy == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *copy = *work;
    struct sim_context *context = stream->context;
    pthread_mutex_lock(&context->submit_lock);
    sim_lock();
    if (stream->capture != NULL) {
        /* Captured work belongs to the graph and runs when the graph is
         * launched. Waits name a point in another stream's past and records
         * signal host-side events: neither means anything in a replay (the
         * capture's own event edges never reach here, see sim_event.c), so
         * they are dropped, as are markers. */
        bool recorded = copy->kind != SIM_WORK_WAIT && copy->kind != SIM_WORK_EVENT_RECORD &&
                        copy->kind != SIM_WORK_MARKER;
        CUresult result = recorded ? sim_capture_record(stream->capture, copy) : CUDA_SUCCESS;
        sim_unlock();
        pthread_mutex_unlock(&context->submit_lock);
        if (copy->kind == SIM_WORK_WAIT)
            sim_stream_release(copy->u.wait.stream);
        else if (copy->kind == SIM_WORK_EVENT_RECORD)
            sim_event_release(copy->u.record.event);
        free(copy);
        if (sequence != NULL)
            *sequence = 0;
        return result;
    }
    CUresult result = add_implicit_waits(stream);
    unsigned long long queued = 0;
    if (result == CUDA_SUCCESS) {
        /* The clock is computed before the worker can see the item, and the
         * race lock spans the append so that a host observing `submitted`
         * sees the matching clock. */
        bool detecting = sim_racecheck_enabled();
        if (detecting) {
            sim_racecheck_lock();
            sim_racecheck_order_submission(stream, copy);
            if (observed != NULL)
                sim_racecheck_copy_stream_clock(stream, observed);
        }
        queued = append(stream, copy);
        if (detecting)
            sim_racecheck_unlock();
    }
    sim_unlock();
    pthread_mutex_unlock(&context->submit_lock);
    if (result != CUDA_SUCCESS) {
        free(copy);
        return result;
    }
    if (sequence != NULL)
        *sequence = queued;
    return CUDA_SUCCESS;
}

void sim_stream_wait_for(struct sim_stream *stream, unsigned long long sequence)
{
    pthread_mutex_lock(&stream->mutex);
    while (stream->completed < sequence)
        pthread_cond_wait(&stream->changed, &stream->mutex);
    pthread_mutex_unlock(&stream->mutex);
}

bool sim_stream_reached(struct sim_stream *stream, unsigned long long sequence)
{
    pthread_mutex_lock(&stream->mutex);
    bool reached = stream->completed >= sequence;
    pthread_mutex_unlock(&stream->mutex);
    return reached;
}

void sim_stream_drain(struct sim_stream *stream, bool host_observes)
{
    bool detecting = host_observes && sim_racecheck_enabled();
    struct sim_clock observed = {0};
    if (detecting)
        sim_racecheck_lock();
    pthread_mutex_lock(&stream->mutex);
    unsigned long long last = stream->submitted;
    if (detecting) {
        pthread_mutex_unlock(&stream->mutex);
        sim_racecheck_copy_stream_clock(stream, &observed);
        sim_racecheck_unlock();
        pthread_mutex_lock(&stream->mutex);
    }
    while (stream->completed < last)
        pthread_cond_wait(&stream->changed, &stream->mutex);
    pthread_mutex_unlock(&stream->mutex);
    if (detecting) {
        sim_racecheck_host_observes(&observed);
        sim_clock_free(&observed);
    }
}

CUresult sim_stream_run(CUstream handle, bool per_thread_default, const struct sim_work *work,
                        bool synchronous)
{
    if (synchronous) {
        CUresult result = sim_capture_check_unsafe_call();
        if (result != CUDA_SUCCESS)
            return result;
    }
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(handle, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool capturing = stream->capture != NULL;
    if (capturing && synchronous)
        sim_capture_invalidate(stream->capture);
    sim_unlock();
    if (capturing && synchronous)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    unsigned long long sequence;
    struct sim_clock observed = {0};
    result = sim_stream_submit_observed(stream, work, &sequence, synchronous ? &observed : NULL);
    if (result == CUDA_SUCCESS && synchronous) {
        sim_stream_wait_for(stream, sequence);
        sim_racecheck_host_observes(&observed);
        result = sim_sticky_error_or(stream->context, result);
    }
    sim_clock_free(&observed);
    return result;
}

/* ---- entry points ------------------------------------------------------- */

static CUresult stream_create(CUstream *phStream, unsigned int Flags, int priority)
{
    if (phStream == NULL || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    /* Priorities are clamped to [greatest, least] = [-5, 0] as the driver does. */
    if (priority > 0)
        priority = 0;
    if (priority < -5)
        priority = -5;
    struct sim_stream *stream;
    sim_lock();
    result = sim_stream_create(context, Flags, priority, false, false, &stream);
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *phStream = (CUstream)stream;
    return result;
}

SIM_EXPORT_VARIANT(cuStreamCreate, (CUstream *phStream, unsigned int Flags),
                   stream_create(phStream, Flags, 0))

SIM_EXPORT_VARIANT(cuStreamCreateWithPriority,
                   (CUstream *phStream, unsigned int flags, int priority),
                   stream_create(phStream, flags, priority))

static CUresult stream_destroy(CUstream hStream)
{
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (!sim_handle_is_live(hStream, SIM_HANDLE_STREAM)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    /* Work already queued still runs; the worker frees the stream after. */
    sim_stream_close((struct sim_stream *)hStream);
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuStreamDestroy, cuStreamDestroy_v2, (CUstream hStream),
                         stream_destroy(hStream))

/* A stream the host is about to wait for or query. Neither is allowed on a
 * capturing stream (it has no real work to observe), and trying invalidates
 * its capture. */
static CUresult stream_for_host_observation(CUstream hStream, bool per_thread_default,
                                            struct sim_stream **stream)
{
    CUresult result = sim_stream_resolve(hStream, per_thread_default, stream);
    if (result == CUDA_SUCCESS)
        result = sim_capture_check_unsafe_call();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_capture *capture = (*stream)->capture;
    if (capture != NULL)
        sim_capture_invalidate(capture);
    sim_unlock();
    return capture != NULL ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult stream_synchronize(CUstream hStream, bool per_thread_default)
{
    struct sim_stream *stream;
    CUresult result = stream_for_host_observation(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    atomic_fetch_add(&sim.synchronizations, 1);
    if (stream->legacy) {
        /* Synchronizing the legacy stream also waits for the blocking streams
         * it implicitly depends on: queue an empty item and wait for it. */
        struct sim_work marker = {.kind = SIM_WORK_MARKER};
        unsigned long long sequence;
        struct sim_clock observed = {0};
        result = sim_stream_submit_observed(stream, &marker, &sequence, &observed);
        if (result == CUDA_SUCCESS) {
            sim_stream_wait_for(stream, sequence);
            sim_racecheck_host_observes(&observed);
            result = sim_sticky_error_or(stream->context, CUDA_SUCCESS);
        }
        sim_clock_free(&observed);
        return result;
    }
    sim_stream_drain(stream, true);
    return sim_sticky_error_or(stream->context, CUDA_SUCCESS);
}

SIM_EXPORT_VARIANT(cuStreamSynchronize, (CUstream hStream), stream_synchronize(hStream, false))

SIM_EXPORT_VARIANT(cuStreamSynchronize_ptsz, (CUstream hStream), stream_synchronize(hStream, true))

static CUresult stream_query(CUstream hStream, bool per_thread_default)
{
    struct sim_stream *stream;
    CUresult result = stream_for_host_observation(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    unsigned long long last;
    bool detecting = sim_racecheck_enabled();
    if (detecting)
        sim_racecheck_lock();
    bool pending = has_pending_work(stream, &last);
    /* The allocator relies on a successful query as on a synchronize. */
    if (detecting && !pending)
        sim_racecheck_host_observes_stream(stream);
    if (detecting)
        sim_racecheck_unlock();
    return pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

SIM_EXPORT_VARIANT(cuStreamQuery, (CUstream hStream), stream_query(hStream, false))

SIM_EXPORT_VARIANT(cuStreamQuery_ptsz, (CUstream hStream), stream_query(hStream, true))

enum stream_property {
    STREAM_FLAGS,
    STREAM_PRIORITY,
    STREAM_ID,
    STREAM_CONTEXT,
    STREAM_DEVICE,
};

/* The cuStreamGet* queries: one property of a stream into `out`. */
static CUresult stream_property(CUstream hStream, bool per_thread_default,
                                enum stream_property property, void *out)
{
    if (out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_stream *stream;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    switch (property) {
    case STREAM_FLAGS:
        *(unsigned int *)out = stream->flags;
        break;
    case STREAM_PRIORITY:
        *(int *)out = stream->priority;
        break;
    case STREAM_ID:
        *(unsigned long long *)out = stream->id;
        break;
    case STREAM_CONTEXT:
        *(CUcontext *)out = (CUcontext)stream->context;
        break;
    case STREAM_DEVICE:
        *(CUdevice *)out = stream->context->device->ordinal;
        break;
    }
    return CUDA_SUCCESS;
}

#define STREAM_QUERY(name, type, property, per_thread)                                        \
    SIM_EXPORT CUresult name(CUstream hStream, type *out)                                     \
    {                                                                                         \
        SIM_ENTER(#name);                                                                     \
        return stream_property(hStream, per_thread, property, out);                           \
    }

STREAM_QUERY(cuStreamGetFlags, unsigned int, STREAM_FLAGS, false)
STREAM_QUERY(cuStreamGetFlags_ptsz, unsigned int, STREAM_FLAGS, true)
STREAM_QUERY(cuStreamGetPriority, int, STREAM_PRIORITY, false)
STREAM_QUERY(cuStreamGetPriority_ptsz, int, STREAM_PRIORITY, true)
STREAM_QUERY(cuStreamGetId, unsigned long long, STREAM_ID, false)
STREAM_QUERY(cuStreamGetId_ptsz, unsigned long long, STREAM_ID, true)
STREAM_QUERY(cuStreamGetCtx, CUcontext, STREAM_CONTEXT, false)
STREAM_QUERY(cuStreamGetCtx_ptsz, CUcontext, STREAM_CONTEXT, true)
STREAM_QUERY(cuStreamGetDevice, CUdevice, STREAM_DEVICE, false)
STREAM_QUERY(cuStreamGetDevice_ptsz, CUdevice, STREAM_DEVICE, true)

SIM_EXPORT CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    SIM_ENTER("cuStreamGetCtx_v2");
    if (pGreenCtx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pGreenCtx = NULL; /* green contexts are not simulated */
    return stream_property(hStream, false, STREAM_CONTEXT, pCtx);
}

SIM_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx,
                                           CUgreenCtx *pGreenCtx)
{
    SIM_ENTER("cuStreamGetCtx_v2_ptsz");
    if (pGreenCtx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pGreenCtx = NULL;
    return stream_property(hStream, true, STREAM_CONTEXT, pCtx);
}

static CUresult launch_host_function(CUstream hStream, CUhostFn fn, void *userData,
                                     bool per_thread_default)
{
    if (fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_HOST_FUNCTION};
    work.u.host.function = fn;
    work.u.host.user_data = userData;
    return sim_stream_run(hStream, per_thread_default, &work, false);
}

SIM_EXPORT_VARIANT(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData),
                   launch_host_function(hStream, fn, userData, false))

SIM_EXPORT_VARIANT(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData),
                   launch_host_function(hStream, fn, userData, true))

static CUresult add_callback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags, bool per_thread_default)
{
    if (callback == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_work work = {.kind = SIM_WORK_STREAM_CALLBACK};
    work.u.callback.function = callback;
    work.u.callback.user_data = userData;
    return sim_stream_run(hStream, per_thread_default, &work, false);
}

SIM_EXPORT_VARIANT(cuStreamAddCallback,
                   (CUstream hStream, CUstreamCallback callback, void *userData,
                    unsigned int flags),
                   add_callback(hStream, callback, userData, flags, false))

SIM_EXPORT_VARIANT(cuStreamAddCallback_ptsz,
                   (CUstream hStream, CUstreamCallback callback, void *userData,
                    unsigned int flags),
                   add_callback(hStream, callback, userData, flags, true))

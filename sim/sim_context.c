/* Contexts: the primary context of each device, created contexts, the
 * per-thread context stack, and context-wide synchronization. */
#include "sim_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT_STACK_DEPTH 32

static _Thread_local struct sim_context *context_stack[CONTEXT_STACK_DEPTH];
static _Thread_local int context_depth;

struct sim_context *sim_current_context(void)
{
    return context_depth > 0 ? context_stack[context_depth - 1] : NULL;
}

/* Hopper's defaults for the per-context limits. */
static const size_t default_limits[CU_LIMIT_MAX] = {
    [CU_LIMIT_STACK_SIZE] = 1024,
    [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
    [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
    [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
    [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
    [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
    [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
};

/* Makes a context usable: a new id, default limits and its legacy stream. */
static void context_activate(struct sim_context *context)
{
    context->active = true;
    context->id = sim_next_id();
    memcpy(context->limits, default_limits, sizeof context->limits);
    context->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    context->peer_devices = 0;
    struct sim_stream *legacy;
    if (sim_stream_create(context, 0, 0, true, false, &legacy) != CUDA_SUCCESS)
        abort();
    context->legacy_stream = legacy;
}

CUresult sim_require_context(struct sim_context **context)
{
    struct sim_context *current = sim_current_context();
    if (current == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_lock();
    CUresult result = CUDA_SUCCESS;
    if (!sim_handle_is_live(current, SIM_HANDLE_CONTEXT))
        result = CUDA_ERROR_INVALID_CONTEXT;
    else if (!current->active) {
        /* A reset primary context that is still retained comes back on its
         * next use, as the driver re-initialises it. */
        if (current->primary && current->retain_count > 0)
            context_activate(current);
        else
            result = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *context = current;
    return result;
}

static void collect_streams(struct sim_context *context, struct sim_stream ***streams,
                            size_t *count)
{
    size_t capacity = 0;
    struct sim_stream *stream;
    sim_lock();
    LIST_FOREACH(stream, &context->streams, context_link)
        capacity++;
    *streams = calloc(capacity + 1, sizeof **streams);
    if (*streams == NULL)
        abort();
    *count = 0;
    LIST_FOREACH(stream, &context->streams, context_link) {
        sim_stream_retain(stream);
        (*streams)[(*count)++] = stream;
    }
    sim_unlock();
}

void sim_context_drain(struct sim_context *context, bool host_observes)
{
    struct sim_stream **streams;
    size_t count;
    collect_streams(context, &streams, &count);
    for (size_t i = 0; i < count; i++) {
        sim_stream_drain(streams[i], host_observes);
        sim_stream_release(streams[i]);
    }
    free(streams);
    /* A stream whose worker left before it could be drained is done; its
     * clock went to the context's retired clock. */
    if (host_observes)
        sim_racecheck_host_observes_retired(context);
}

/* Under sim.lock: streams whose workers have not left yet. */
static bool has_closed_streams(struct sim_context *context)
{
    struct sim_stream *stream;
    LIST_FOREACH(stream, &context->streams, context_link)
        if (stream->closed)
            return true;
    return false;
}

/* Frees the streams, events and memory of a context (reset, release to zero,
 * destroy). */
static void context_teardown(struct sim_context *context)
{
    sim_context_drain(context, true);
    sim_modules_teardown(context);
    sim_lock();
    sim_capture_teardown(context);
    struct sim_stream *stream;
    LIST_FOREACH(stream, &context->streams, context_link)
        sim_stream_close(stream);
    context->legacy_stream = NULL;
    sim_events_teardown(context);
    sim_free_context_memory(context);
    context->active = false;
    /* A reset or destroyed context starts again without its kernel fault. */
    atomic_store(&context->sticky_error, 0);
    /* The workers are idle and closing: wait until they have left, so the
     * context can be reused or freed. */
    while (has_closed_streams(context)) {
        sim_unlock();
        sched_yield();
        sim_lock();
    }
    sim_racecheck_context_reset(context);
    sim_unlock();
}

/* ---- primary context ---------------------------------------------------- */

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SIM_ENTER("cuDevicePrimaryCtxRetain");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_context *context = device->primary;
    if (!context->active)
        context_activate(context);
    context->retain_count++;
    sim_unlock();
    *pctx = (CUcontext)context;
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_context *context = device->primary;
    sim_lock();
    if (context->retain_count == 0) {
        sim_unlock();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    bool last = --context->retain_count == 0;
    bool active = context->active;
    sim_unlock();
    if (last && active)
        context_teardown(context);
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice dev),
                         primary_release(dev))

static CUresult primary_reset(CUdevice dev)
{
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool active = device->primary->active;
    sim_unlock();
    if (active)
        context_teardown(device->primary);
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, (CUdevice dev),
                         primary_reset(dev))

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    SIM_ENTER("cuDevicePrimaryCtxGetState");
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (flags == NULL || active == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    *flags = device->primary->flags;
    *active = device->primary->active;
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if ((flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX |
                             CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                             CU_CTX_SYNC_MEMOPS)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    device->primary->flags = flags;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2,
                         (CUdevice dev, unsigned int flags),
                         primary_set_flags(dev, flags))

/* ---- created contexts --------------------------------------------------- */

static CUresult context_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    struct sim_device *device;
    CUresult result = sim_device_lookup(dev, &device);
    if (result != CUDA_SUCCESS)
        return result;
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context = calloc(1, sizeof *context);
    if (context == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    context->device = device;
    context->flags = flags;
    pthread_mutex_init(&context->submit_lock, NULL);
    LIST_INIT(&context->streams);
    sim_lock();
    sim_handle_register(&context->handle, SIM_HANDLE_CONTEXT);
    context_activate(context);
    sim_unlock();
    if (context_depth < CONTEXT_STACK_DEPTH)
        context_stack[context_depth++] = context;
    *pctx = (CUcontext)context;
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuCtxCreate, cuCtxCreate_v2,
                         (CUcontext *pctx, unsigned int flags, CUdevice dev),
                         context_create(pctx, flags, dev))

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                   int numParams, unsigned int flags, CUdevice dev)
{
    SIM_ENTER("cuCtxCreate_v3");
    /* Execution affinity (SM partitioning) needs hardware support. */
    if (paramsArray != NULL && numParams > 0)
        return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return context_create(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                   unsigned int flags, CUdevice dev)
{
    SIM_ENTER("cuCtxCreate_v4");
    /* CUDA 13's cuCtxCreate passes zeroed parameters; only real execution
     * affinity or CIG settings need hardware partitioning. */
    if (ctxCreateParams != NULL &&
        ((ctxCreateParams->execAffinityParams != NULL && ctxCreateParams->numExecAffinityParams > 0) ||
         ctxCreateParams->cigParams != NULL))
        return CUDA_ERROR_NOT_SUPPORTED;
    return context_create(pctx, flags, dev);
}

static void remove_from_stack(struct sim_context *context)
{
    int kept = 0;
    for (int i = 0; i < context_depth; i++)
        if (context_stack[i] != context)
            context_stack[kept++] = context_stack[i];
    context_depth = kept;
}

static CUresult context_destroy(CUcontext ctx)
{
    struct sim_context *context = (struct sim_context *)ctx;
    sim_lock();
    bool valid = sim_handle_is_live(context, SIM_HANDLE_CONTEXT) && !context->primary;
    sim_unlock();
    if (!valid)
        return CUDA_ERROR_INVALID_CONTEXT;
    context_teardown(context);
    sim_lock();
    sim_handle_unregister(&context->handle);
    sim_unlock();
    remove_from_stack(context);
    pthread_mutex_destroy(&context->submit_lock);
    free(context);
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuCtxDestroy, cuCtxDestroy_v2, (CUcontext ctx), context_destroy(ctx))

/* ---- the current context ------------------------------------------------ */

static CUresult validate_context(CUcontext ctx)
{
    sim_lock();
    bool live = sim_handle_is_live(ctx, SIM_HANDLE_CONTEXT);
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    SIM_ENTER("cuCtxSetCurrent");
    if (ctx == NULL) {
        if (context_depth > 0)
            context_depth--;
        return CUDA_SUCCESS;
    }
    CUresult result = validate_context(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (context_depth == 0)
        context_depth = 1;
    context_stack[context_depth - 1] = (struct sim_context *)ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    SIM_ENTER("cuCtxGetCurrent");
    if (pctx == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)sim_current_context();
    return CUDA_SUCCESS;
}

static CUresult context_push(CUcontext ctx)
{
    CUresult result = validate_context(ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (context_depth == CONTEXT_STACK_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    context_stack[context_depth++] = (struct sim_context *)ctx;
    return CUDA_SUCCESS;
}

static CUresult context_pop(CUcontext *pctx)
{
    if (context_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_context *top = context_stack[--context_depth];
    if (pctx != NULL)
        *pctx = (CUcontext)top;
    return CUDA_SUCCESS;
}

SIM_EXPORT_SAME_VARIANTS(cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext ctx), context_push(ctx))

SIM_EXPORT_SAME_VARIANTS(cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext *pctx), context_pop(pctx))

/* The context named by `ctx`, or the current one when it is NULL. */
static CUresult explicit_or_current(CUcontext ctx, struct sim_context **context)
{
    if (ctx == NULL)
        return sim_require_context(context);
    CUresult result = validate_context(ctx);
    if (result == CUDA_SUCCESS)
        *context = (struct sim_context *)ctx;
    return result;
}

/* For the context queries: the context named by `ctx` (NULL: the current
 * one), once `output` is known to be somewhere to write the answer. */
static CUresult context_to_query(CUcontext ctx, const void *output, struct sim_context **context)
{
    if (output == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return explicit_or_current(ctx, context);
}

/* cuCtxGetDevice is cuCtxGetDevice_v2 on the current context. */
static CUresult context_get_device(CUdevice *device, CUcontext ctx)
{
    struct sim_context *context;
    CUresult result = context_to_query(ctx, device, &context);
    if (result == CUDA_SUCCESS)
        *device = context->device->ordinal;
    return result;
}

SIM_EXPORT_VARIANT(cuCtxGetDevice, (CUdevice *device), context_get_device(device, NULL))
SIM_EXPORT_VARIANT(cuCtxGetDevice_v2, (CUdevice *device, CUcontext ctx),
                   context_get_device(device, ctx))

/* cuCtxSynchronize is cuCtxSynchronize_v2 on the current context. */
static CUresult context_synchronize(CUcontext ctx)
{
    struct sim_context *context;
    CUresult result = explicit_or_current(ctx, &context);
    if (result != CUDA_SUCCESS)
        return result;
    result = sim_capture_check_unsafe_call();
    if (result != CUDA_SUCCESS)
        return result;
    atomic_fetch_add(&sim.synchronizations, 1);
    sim_context_drain(context, true);
    return sim_sticky_error_or(context, CUDA_SUCCESS);
}

SIM_EXPORT_VARIANT(cuCtxSynchronize, (void), context_synchronize(NULL))
SIM_EXPORT_VARIANT(cuCtxSynchronize_v2, (CUcontext ctx), context_synchronize(ctx))

SIM_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    SIM_ENTER("cuCtxGetId");
    struct sim_context *context;
    CUresult result = context_to_query(ctx, ctxId, &context);
    if (result == CUDA_SUCCESS)
        *ctxId = context->id;
    return result;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    SIM_ENTER("cuCtxGetFlags");
    struct sim_context *context;
    CUresult result = context_to_query(NULL, flags, &context);
    if (result == CUDA_SUCCESS)
        *flags = context->flags;
    return result;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    SIM_ENTER("cuCtxGetApiVersion");
    struct sim_context *context;
    CUresult result = context_to_query(ctx, version, &context);
    if (result == CUDA_SUCCESS)
        *version = 3020;
    return result;
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    SIM_ENTER("cuCtxGetStreamPriorityRange");
    if (leastPriority != NULL)
        *leastPriority = 0;
    if (greatestPriority != NULL)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

/* ---- per-context settings ----------------------------------------------- */

SIM_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    SIM_ENTER("cuCtxGetLimit");
    if (pvalue == NULL || limit < 0 || limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result == CUDA_SUCCESS)
        *pvalue = context->limits[limit];
    return result;
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    SIM_ENTER("cuCtxSetLimit");
    if (limit < 0 || limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    /* These describe a CIG context and can only be queried. */
    if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result == CUDA_SUCCESS)
        context->limits[limit] = value;
    return result;
}

SIM_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    SIM_ENTER("cuCtxGetCacheConfig");
    struct sim_context *context;
    CUresult result = context_to_query(NULL, pconfig, &context);
    if (result == CUDA_SUCCESS)
        *pconfig = context->cache_config;
    return result;
}

SIM_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    SIM_ENTER("cuCtxSetCacheConfig");
    if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result == CUDA_SUCCESS)
        context->cache_config = config;
    return result;
}

static CUresult peer_bit(CUcontext peerContext, struct sim_context **context,
                         unsigned long long *bit)
{
    CUresult result = sim_require_context(context);
    if (result != CUDA_SUCCESS)
        return result;
    result = validate_context(peerContext);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_context *peer = (struct sim_context *)peerContext;
    if (peer->device == (*context)->device)
        return CUDA_ERROR_INVALID_DEVICE;
    *bit = 1ULL << peer->device->ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    SIM_ENTER("cuCtxEnablePeerAccess");
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    unsigned long long bit;
    CUresult result = peer_bit(peerContext, &context, &bit);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (context->peer_devices & bit)
        result = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else
        context->peer_devices |= bit;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SIM_ENTER("cuCtxDisablePeerAccess");
    struct sim_context *context;
    unsigned long long bit;
    CUresult result = peer_bit(peerContext, &context, &bit);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    if (!(context->peer_devices & bit))
        result = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    else
        context->peer_devices &= ~bit;
    sim_unlock();
    return result;
}

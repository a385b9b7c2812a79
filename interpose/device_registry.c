/* The device registry behind the hooks and the driver interface. Hot paths
 * (finding the device of a context) read atomics; everything that changes
 * takes the device's lock, which is never held across a call into a live
 * allocator (which calls back here for events) or a driver call that may
 * block. */
#include "device_registry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct live_stream {
    CUstream stream;
    bool non_blocking;
};

struct device_entry {
    pthread_mutex_t lock;
    CUcontext context;    /* atomic; NULL when not served */
    unsigned generation;  /* atomic; bumped on forget */

    struct live_stream *streams;
    size_t stream_count;
    size_t stream_capacity;

    CUevent *idle_events;
    size_t idle_event_count;
    size_t idle_event_capacity;

    bool peer_granted[GPUCACHE_MAX_DEVICES];

    unsigned pool_generation_checked; /* atomic */
    bool default_pool_current;        /* atomic */
};

static struct device_entry devices[GPUCACHE_MAX_DEVICES];
/* Held shared by whoever records events on a copy of the stream registry,
 * and exclusively while a stream leaves it: a stream the program destroys
 * is then never used after the destroy (its handle may be reused). */
static pthread_rwlock_t stream_use_lock = PTHREAD_RWLOCK_INITIALIZER;
static unsigned pool_generation = 1; /* atomic; 0 means never checked */
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

__thread CUcontext device_allocating_thread_context __attribute__((tls_model("initial-exec")));

/* The driver's answers the hot paths would otherwise ask for on every call,
 * each valid while its generation is current. Context generations change
 * whenever a context the answers could name dies or a device is bound or
 * forgotten; the calling thread also drops its own answer when it changes
 * its current context (context_hooks.c). Stream generations change whenever
 * a stream is created or destroyed (a handle value may then name another
 * stream) and with the context generation's events. 0 is never current. */
static unsigned context_generation = 1; /* atomic */
static unsigned stream_generation = 1;  /* atomic */
unsigned device_route_generation = 1;
__thread unsigned device_thread_route_generation __attribute__((tls_model("initial-exec")));

struct current_context_answer {
    unsigned generation;
    CUcontext context;
    int device;
};
static __thread struct current_context_answer current_context_answer
    __attribute__((tls_model("initial-exec")));

/* A few streams per thread, by handle bits: a thread rarely alternates
 * between more streams than that in its allocations. */
#define STREAM_ANSWERS 8
struct stream_device_answer {
    unsigned generation;
    CUstream stream;
    int device;
};
static __thread struct stream_device_answer stream_device_answers[STREAM_ANSWERS]
    __attribute__((tls_model("initial-exec")));

static void devices_initialise(void)
{
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++)
        pthread_mutex_init(&devices[i].lock, NULL);
}

static struct device_entry *device_get(int device)
{
    if (device < 0 || device >= GPUCACHE_MAX_DEVICES)
        return NULL;
    pthread_once(&devices_once, devices_initialise);
    return &devices[device];
}

int device_count_limit(void)
{
    return GPUCACHE_MAX_DEVICES;
}


/* Never 0, which marks a route never found. */
static void routes_changed(void)
{
    if (__atomic_add_fetch(&device_route_generation, 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_add_fetch(&device_route_generation, 1, __ATOMIC_ACQ_REL);
}

void device_current_context_changed(void)
{
    current_context_answer.generation = 0;
    device_thread_route_generation++;
}

void device_contexts_changed(void)
{
    __atomic_add_fetch(&context_generation, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&stream_generation, 1, __ATOMIC_ACQ_REL);
    routes_changed();
}

void device_streams_changed(void)
{
    __atomic_add_fetch(&stream_generation, 1, __ATOMIC_ACQ_REL);
    routes_changed();
}

/* The device of `current` as the driver tells it, or the registry when the
 * library serves it. */
static bool ask_device_of_current_context(const struct real_driver *driver, CUcontext *context,
                                          int *device)
{
    CUcontext current = NULL;
    if (driver->ctx_get_current(&current) != CUDA_SUCCESS || !current)
        return false;
    *context = current;
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++) {
        if (__atomic_load_n(&devices[i].context, __ATOMIC_ACQUIRE) == current) {
            *device = i;
            return true;
        }
    }
    CUdevice found = 0;
    if (driver->ctx_get_device(&found) != CUDA_SUCCESS)
        return false;
    *device = (int)found;
    return true;
}

bool device_of_current_context(const struct real_driver *driver, CUcontext *context, int *device)
{
    unsigned generation = __atomic_load_n(&context_generation, __ATOMIC_ACQUIRE);
    if (current_context_answer.generation == generation) {
        *context = current_context_answer.context;
        *device = current_context_answer.device;
        return true;
    }
    if (!ask_device_of_current_context(driver, context, device))
        return false;
    /* Read before the question: a change meanwhile leaves the answer stale. */
    current_context_answer = (struct current_context_answer){generation, *context, *device};
    return true;
}

CUcontext device_current_context(const struct real_driver *driver)
{
    CUcontext context = NULL;
    int device;
    return device_of_current_context(driver, &context, &device) ? context : NULL;
}

/* The registry's answer or, for a stream the library did not see created,
 * the driver's. */
static int ask_device_of_stream(const struct real_driver *driver, CUstream stream)
{
    pthread_once(&devices_once, devices_initialise);
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++) {
        struct device_entry *state = &devices[i];
        /* Streams of a device the library does not serve are not its to
         * place. */
        if (!__atomic_load_n(&state->context, __ATOMIC_ACQUIRE))
            continue;
        pthread_mutex_lock(&state->lock);
        bool found = false;
        for (size_t s = 0; s < state->stream_count && !found; s++)
            found = state->streams[s].stream == stream;
        pthread_mutex_unlock(&state->lock);
        if (found)
            return i;
    }
    CUcontext context = NULL;
    if (driver->stream_get_ctx(stream, &context) != CUDA_SUCCESS || !context)
        return -1;
    for (int i = 0; i < GPUCACHE_MAX_DEVICES; i++)
        if (__atomic_load_n(&devices[i].context, __ATOMIC_ACQUIRE) == context)
            return i;
    return -1;
}

int device_of_stream(const struct real_driver *driver, CUstream stream)
{
    unsigned generation = __atomic_load_n(&stream_generation, __ATOMIC_ACQUIRE);
    /* Handles are aligned pointers: the bits above the alignment spread. */
    struct stream_device_answer *answer =
        &stream_device_answers[((uintptr_t)stream >> 4) % STREAM_ANSWERS];
    if (answer->generation == generation && answer->stream == stream)
        return answer->device;
    int device = ask_device_of_stream(driver, stream);
    *answer = (struct stream_device_answer){generation, stream, device};
    return device;
}

CUcontext device_context(int device)
{
    struct device_entry *state = device_get(device);
    return state ? __atomic_load_n(&state->context, __ATOMIC_ACQUIRE) : NULL;
}

void device_set_context(int device, CUcontext context)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return;
    pthread_mutex_lock(&state->lock);
    __atomic_store_n(&state->context, context, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&state->lock);
    device_contexts_changed();
}

CUcontext device_registry_forget(int device)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return NULL;
    pthread_mutex_lock(&state->lock);
    /* The driver frees the events and the streams together with the
     * context: forget them without a call, served or not (the
     * cudaMallocAsync backend records events on them too). */
    __atomic_add_fetch(&state->generation, 1, __ATOMIC_ACQ_REL);
    state->idle_event_count = 0;
    state->stream_count = 0;
    memset(state->peer_granted, 0, sizeof state->peer_granted);
    __atomic_store_n(&state->pool_generation_checked, 0, __ATOMIC_RELEASE);
    CUcontext served = state->context;
    __atomic_store_n(&state->context, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&state->lock);
    device_contexts_changed();
    return served;
}

void device_stream_created(int device, CUstream stream, bool non_blocking)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return;
    pthread_mutex_lock(&state->lock);
    if (state->stream_count == state->stream_capacity) {
        size_t capacity = state->stream_capacity ? 2 * state->stream_capacity : 16;
        struct live_stream *grown = realloc(state->streams, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&state->lock);
            gpucache_log("out of host memory for the stream registry; frees may wait longer");
            return;
        }
        state->streams = grown;
        state->stream_capacity = capacity;
    }
    state->streams[state->stream_count++] = (struct live_stream){stream, non_blocking};
    pthread_mutex_unlock(&state->lock);
}

/* Finds the registered stream, reports whether it is non-blocking and, with
 * `remove`, takes it out; returns its device or -1. */
static int look_up_stream(CUstream stream, bool *non_blocking, bool remove)
{
    pthread_once(&devices_once, devices_initialise);
    int found = -1;
    for (int i = 0; i < GPUCACHE_MAX_DEVICES && found < 0; i++) {
        struct device_entry *state = &devices[i];
        pthread_mutex_lock(&state->lock);
        for (size_t s = 0; s < state->stream_count; s++) {
            if (state->streams[s].stream == stream) {
                if (non_blocking)
                    *non_blocking = state->streams[s].non_blocking;
                if (remove)
                    state->streams[s] = state->streams[--state->stream_count];
                found = i;
                break;
            }
        }
        pthread_mutex_unlock(&state->lock);
    }
    return found;
}

int device_stream_find(CUstream stream, bool *non_blocking)
{
    return look_up_stream(stream, non_blocking, false);
}

int device_stream_destroyed(CUstream stream, bool *non_blocking)
{
    pthread_once(&devices_once, devices_initialise);
    pthread_rwlock_wrlock(&stream_use_lock);
    int found = look_up_stream(stream, non_blocking, true);
    pthread_rwlock_unlock(&stream_use_lock);
    return found;
}

void device_streams_hold(void)
{
    pthread_rwlock_rdlock(&stream_use_lock);
}

void device_streams_release(void)
{
    pthread_rwlock_unlock(&stream_use_lock);
}

CUstream *device_non_blocking_streams(int device, size_t *count)
{
    *count = 0;
    struct device_entry *state = device_get(device);
    if (!state)
        return NULL;
    pthread_mutex_lock(&state->lock);
    CUstream *copy = NULL;
    if (state->stream_count) {
        copy = malloc(state->stream_count * sizeof *copy);
        for (size_t s = 0; copy && s < state->stream_count; s++)
            if (state->streams[s].non_blocking)
                copy[(*count)++] = state->streams[s].stream;
    }
    pthread_mutex_unlock(&state->lock);
    return copy;
}

bool device_has_non_blocking_streams(int device)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return false;
    pthread_mutex_lock(&state->lock);
    bool found = false;
    for (size_t s = 0; s < state->stream_count && !found; s++)
        found = state->streams[s].non_blocking;
    pthread_mutex_unlock(&state->lock);
    return found;
}

CUevent device_take_event(const struct real_driver *driver, int device, unsigned *generation)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return NULL;
    CUevent event = NULL;
    pthread_mutex_lock(&state->lock);
    *generation = state->generation;
    if (state->idle_event_count)
        event = state->idle_events[--state->idle_event_count];
    pthread_mutex_unlock(&state->lock);
    if (!event && driver->event_create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return event;
}

void device_return_event(const struct real_driver *driver, int device, CUevent event,
                         unsigned generation)
{
    struct device_entry *state = device_get(device);
    if (!state || !event)
        return;
    pthread_mutex_lock(&state->lock);
    if (generation != state->generation) {
        pthread_mutex_unlock(&state->lock);
        return; /* died with its context */
    }
    if (state->idle_event_count == state->idle_event_capacity) {
        size_t capacity = state->idle_event_capacity ? 2 * state->idle_event_capacity : 64;
        CUevent *grown = realloc(state->idle_events, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&state->lock);
            driver->event_destroy(event);
            return;
        }
        state->idle_events = grown;
        state->idle_event_capacity = capacity;
    }
    state->idle_events[state->idle_event_count++] = event;
    pthread_mutex_unlock(&state->lock);
}

void device_grant_peer(int owner, int accessor)
{
    struct device_entry *state = device_get(owner);
    if (!state || accessor < 0 || accessor >= GPUCACHE_MAX_DEVICES || accessor == owner)
        return;
    pthread_mutex_lock(&state->lock);
    state->peer_granted[accessor] = true;
    pthread_mutex_unlock(&state->lock);
}

size_t device_peers(int owner, int *peers, size_t capacity)
{
    struct device_entry *state = device_get(owner);
    size_t count = 0;
    if (!state)
        return 0;
    pthread_mutex_lock(&state->lock);
    for (int i = 0; i < GPUCACHE_MAX_DEVICES && count < capacity; i++)
        if (state->peer_granted[i])
            peers[count++] = i;
    pthread_mutex_unlock(&state->lock);
    return count;
}

void device_pools_changed(void)
{
    __atomic_add_fetch(&pool_generation, 1, __ATOMIC_ACQ_REL);
    routes_changed();
}

bool device_uses_default_pool(const struct real_driver *driver, int device)
{
    struct device_entry *state = device_get(device);
    if (!state)
        return false;
    unsigned generation = __atomic_load_n(&pool_generation, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&state->pool_generation_checked, __ATOMIC_ACQUIRE) == generation)
        return __atomic_load_n(&state->default_pool_current, __ATOMIC_ACQUIRE);
    CUmemoryPool current = NULL, default_pool = NULL;
    bool is_default = driver->device_get_mem_pool &&
                      driver->device_get_default_mem_pool &&
                      driver->device_get_mem_pool(&current, device) == CUDA_SUCCESS &&
                      driver->device_get_default_mem_pool(&default_pool, device) == CUDA_SUCCESS &&
                      current == default_pool;
    __atomic_store_n(&state->default_pool_current, is_default, __ATOMIC_RELEASE);
    __atomic_store_n(&state->pool_generation_checked, generation, __ATOMIC_RELEASE);
    return is_default;
}

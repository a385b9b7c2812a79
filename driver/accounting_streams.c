/* The accounting driver's streams: a logical clock per stream, fences that
 * complete when the tests say the work before them is done (or at once
 * unless fences are held), device synchronization, stream capture and the
 * cross-stream waits a test program makes. */
#include <stdlib.h>
#include <string.h>

#include "accounting_internal.h"

static struct stream_progress *progress_of(struct accounting_driver *driver,
                                           gpucache_stream stream)
{
    for (size_t i = 0; i < driver->stream_count; i++)
        if (driver->streams[i].stream == stream)
            return &driver->streams[i];
    if (driver->stream_count == driver->stream_capacity) {
        size_t capacity = driver->stream_capacity ? driver->stream_capacity * 2 : 8;
        struct stream_progress *streams =
            realloc(driver->streams, capacity * sizeof *streams);
        if (streams == NULL)
            return NULL;
        driver->streams = streams;
        driver->stream_capacity = capacity;
    }
    struct stream_progress *progress = &driver->streams[driver->stream_count++];
    progress->stream = stream;
    progress->completed_time = 0;
    return progress;
}

/* All work issued up to `time` is done: waits issued before it are moot. */
static void complete_all_until(struct accounting_driver *driver, uint64_t time)
{
    if (driver->all_completed_time < time)
        driver->all_completed_time = time;
    for (size_t i = 0; i < driver->dependency_count;) {
        if (driver->dependencies[i].wait_time <= driver->all_completed_time)
            driver->dependencies[i] = driver->dependencies[--driver->dependency_count];
        else
            i++;
    }
}

/* Work of `stream` issued up to `time` is done, and so is the work its
 * waits depended on. */
static void complete_stream_until(struct accounting_driver *driver, gpucache_stream stream,
                                  uint64_t time)
{
    struct stream_progress *progress = progress_of(driver, stream);
    if (progress == NULL || progress->completed_time >= time)
        return;
    progress->completed_time = time;
    for (size_t i = 0; i < driver->dependency_count;) {
        struct stream_dependency dependency = driver->dependencies[i];
        if (dependency.waiter != stream || dependency.wait_time > time) {
            i++;
            continue;
        }
        driver->dependencies[i] = driver->dependencies[--driver->dependency_count];
        if (dependency.target_is_all) {
            complete_all_until(driver, dependency.target_time);
        } else {
            complete_stream_until(driver, dependency.target, dependency.target_time);
        }
        i = 0; /* the recursion may have removed entries */
    }
}

static gpucache_result new_fence(struct accounting_driver *driver, gpucache_stream stream,
                                 bool all_streams, gpucache_fence **fence)
{
    struct gpucache_fence *created = calloc(1, sizeof *created);
    if (created == NULL || (!all_streams && progress_of(driver, stream) == NULL)) {
        free(created);
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    }
    created->stream = stream;
    created->all_streams = all_streams;
    created->time = ++driver->clock;
    created->next_live = driver->live;
    if (driver->live != NULL)
        driver->live->previous_live = created;
    driver->live = created;
    driver->live_fences++;
    *fence = created;
    return GPUCACHE_SUCCESS;
}

static gpucache_result fence_stream(void *context, int device, gpucache_stream stream,
                                    gpucache_fence **fence)
{
    ENTER(context, ACCOUNTING_FENCE_STREAM);
    (void)device;
    result = new_fence(driver, stream, false, fence);
    LEAVE();
}

static gpucache_result fence_all_streams(void *context, int device, gpucache_fence **fence)
{
    ENTER(context, ACCOUNTING_FENCE_ALL_STREAMS);
    (void)device;
    result = new_fence(driver, 0, true, fence);
    LEAVE();
}

static bool fence_complete(struct accounting_driver *driver, const gpucache_fence *fence)
{
    if (!driver->fences_held || driver->all_completed_time >= fence->time)
        return true;
    if (fence->all_streams)
        return false;
    const struct stream_progress *progress = progress_of(driver, fence->stream);
    return progress != NULL && progress->completed_time >= fence->time;
}

static gpucache_result fence_query(void *context, gpucache_fence *fence)
{
    ENTER(context, ACCOUNTING_FENCE_QUERY);
    result = fence_complete(driver, fence) ? GPUCACHE_SUCCESS : GPUCACHE_ERROR_NOT_READY;
    LEAVE();
}

static gpucache_result fence_wait(void *context, gpucache_fence *fence)
{
    ENTER(context, ACCOUNTING_FENCE_WAIT);
    /* Waiting lets the device run up to the fence. */
    if (fence->all_streams) {
        complete_all_until(driver, fence->time);
    } else {
        complete_stream_until(driver, fence->stream, fence->time);
    }
    LEAVE();
}

static void fence_release(void *context, gpucache_fence *fence)
{
    struct accounting_driver *driver = context;
    pthread_mutex_lock(&driver->mutex);
    if (fence != NULL) {
        if (fence->previous_live != NULL)
            fence->previous_live->next_live = fence->next_live;
        else
            driver->live = fence->next_live;
        if (fence->next_live != NULL)
            fence->next_live->previous_live = fence->previous_live;
        driver->live_fences--;
    }
    pthread_mutex_unlock(&driver->mutex);
    free(fence);
}

static gpucache_result synchronize_device(void *context, int device)
{
    ENTER(context, ACCOUNTING_SYNCHRONIZE_DEVICE);
    (void)device;
    complete_all_until(driver, driver->clock);
    LEAVE();
}

static bool capture_active(void *context, int device)
{
    struct accounting_driver *driver = context;
    (void)device;
    pthread_mutex_lock(&driver->mutex);
    bool active = driver->capture;
    pthread_mutex_unlock(&driver->mutex);
    return active;
}

void accounting_streams_install(struct gpucache_driver *interface)
{
    interface->fence_stream = fence_stream;
    interface->fence_all_streams = fence_all_streams;
    interface->fence_query = fence_query;
    interface->fence_wait = fence_wait;
    interface->fence_release = fence_release;
    interface->synchronize_device = synchronize_device;
    interface->capture_active = capture_active;
}

void accounting_streams_destroy(struct accounting_driver *driver)
{
    while (driver->live != NULL) {
        struct gpucache_fence *fence = driver->live;
        driver->live = fence->next_live;
        free(fence);
    }
    free(driver->streams);
    free(driver->dependencies);
}

void accounting_driver_hold_fences(struct accounting_driver *driver, bool held)
{
    pthread_mutex_lock(&driver->mutex);
    driver->fences_held = held;
    pthread_mutex_unlock(&driver->mutex);
}

void accounting_driver_complete_stream(struct accounting_driver *driver, gpucache_stream stream)
{
    pthread_mutex_lock(&driver->mutex);
    complete_stream_until(driver, stream, driver->clock);
    pthread_mutex_unlock(&driver->mutex);
}

void accounting_driver_complete_all(struct accounting_driver *driver)
{
    pthread_mutex_lock(&driver->mutex);
    complete_all_until(driver, driver->clock);
    pthread_mutex_unlock(&driver->mutex);
}

bool accounting_driver_stream_wait(struct accounting_driver *driver, gpucache_stream stream,
                                   const gpucache_fence *fence)
{
    bool recorded = true;
    pthread_mutex_lock(&driver->mutex);
    if (fence_complete(driver, fence))
        goto done; /* nothing left to wait for */
    if (driver->dependency_count == driver->dependency_capacity) {
        size_t capacity = driver->dependency_capacity ? driver->dependency_capacity * 2 : 16;
        struct stream_dependency *dependencies =
            realloc(driver->dependencies, capacity * sizeof *dependencies);
        if (dependencies == NULL) {
            recorded = false;
            goto done;
        }
        driver->dependencies = dependencies;
        driver->dependency_capacity = capacity;
    }
    driver->dependencies[driver->dependency_count++] = (struct stream_dependency){
        .waiter = stream,
        .wait_time = ++driver->clock,
        .target = fence->stream,
        .target_time = fence->time,
        .target_is_all = fence->all_streams,
    };
done:
    pthread_mutex_unlock(&driver->mutex);
    return recorded;
}

void accounting_driver_set_capture(struct accounting_driver *driver, bool active)
{
    pthread_mutex_lock(&driver->mutex);
    driver->capture = active;
    pthread_mutex_unlock(&driver->mutex);
}

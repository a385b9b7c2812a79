/* Timing of driver calls: the clock behind the driver-call timer
 * (allocator_internal.h), and the driver calls that take more than one
 * line. */
#include <time.h>

#include "allocator_internal.h"

int64_t monotonic_nanoseconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void driver_fence_release(struct gpucache_allocator *allocator, struct gpucache_fence *fence)
{
    DRIVER_TIMED(allocator, allocator->driver->fence_release(allocator->driver->context, fence));
}

bool driver_capture_active(struct gpucache_allocator *allocator)
{
    bool active;
    DRIVER_CALL(allocator, active, capture_active, allocator->device);
    return active;
}

gpucache_result driver_fence_stream(struct gpucache_allocator *allocator, gpucache_stream stream,
                                    struct gpucache_fence **fence)
{
    const struct gpucache_driver *driver = allocator->driver;
    /* Synchronous allocations belong to no stream: what may still touch
     * them is the work of every stream. */
    if (stream == GPUCACHE_STREAM_SYNCHRONOUS)
        return driver->fence_all_streams(driver->context, allocator->device, fence);
    return driver->fence_stream(driver->context, allocator->device, stream, fence);
}

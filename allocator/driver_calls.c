/* Timing of driver calls: the clock, and the calls that return no result
 * (so DRIVER_CALL cannot wrap them). */
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
    int64_t start = monotonic_nanoseconds();
    allocator->driver->fence_release(allocator->driver->context, fence);
    allocator->stats.driver_nanoseconds += monotonic_nanoseconds() - start;
}

bool driver_capture_active(struct gpucache_allocator *allocator)
{
    int64_t start = monotonic_nanoseconds();
    bool active = allocator->driver->capture_active(allocator->driver->context, allocator->device);
    allocator->stats.driver_nanoseconds += monotonic_nanoseconds() - start;
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

/* What every hook does first: find the real driver, and decide whether the
 * call is the library's to serve or bypasses the cache. */
#ifndef GPUCACHE_INTERPOSE_HOOK_SUPPORT_H
#define GPUCACHE_INTERPOSE_HOOK_SUPPORT_H

#include <stdbool.h>

#include "capture_tracking.h"
#include "gpucache_config.h"
#include "library_lifecycle.h"
#include "library_reports.h"
#include "real_driver.h"

/* The real driver for a hook; NULL when no driver can be loaded (the hook
 * then answers CUDA_ERROR_NOT_INITIALIZED). */
static inline const struct real_driver *hook_driver(void)
{
    const struct real_driver *resolved = __atomic_load_n(&real_driver_resolved, __ATOMIC_ACQUIRE);
    return resolved ? resolved : real_driver_get(false);
}

/* True when the library must not touch the call at all: in a child forked
 * after CUDA was used. */
static inline bool hook_bypassed_after_fork(void)
{
    return library_bypassed_after_fork();
}

/* The operating mode for allocation calls. */
enum hook_mode {
    HOOK_MODE_CACHE,          /* the caching allocator serves the call */
    HOOK_MODE_COUNT_ONLY,     /* passthrough:True: forward and record */
    HOOK_MODE_DRIVER_POOL,    /* backend:cudaMallocAsync */
};

static inline enum hook_mode hook_mode(void)
{
    if (!library_bypasses_cache())
        return HOOK_MODE_CACHE;
    const struct gpucache_config *config = library_config();
    if (config->passthrough)
        return HOOK_MODE_COUNT_ONLY;
    if (config->backend == GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC)
        return HOOK_MODE_DRIVER_POOL;
    return HOOK_MODE_CACHE;
}

/* True when nothing keeps a synchronous allocation hook off its hot path (a
 * kept route, no driver call): not in a child after fork, no snapshot signal
 * waiting for its safe point, the cache serving. One load each; any of them
 * sends the hook down its full path, which handles it as it always did. */
static inline bool hook_hot_path_open(void)
{
    return !hook_bypassed_after_fork() &&
           !__atomic_load_n(&library_reports_snapshot_pending, __ATOMIC_RELAXED) &&
           !library_bypasses_cache();
}

/* The same for a stream-ordered hook, which also needs no capture in
 * progress: a capturing stream's calls must reach the driver. */
static inline bool hook_stream_hot_path_open(void)
{
    return hook_hot_path_open() && !capture_tracking_any_in_progress();
}

#endif

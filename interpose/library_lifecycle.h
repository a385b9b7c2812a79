/* Load, activation, fork and exit of the library. Loading only parses the
 * configuration; the driver is touched first when the program uses CUDA. */
#ifndef GPUCACHE_INTERPOSE_LIBRARY_LIFECYCLE_H
#define GPUCACHE_INTERPOSE_LIBRARY_LIFECYCLE_H

#include <stdbool.h>

struct gpucache_config;

/* Called once when the real driver has been resolved: registers the fork
 * handlers (lazily, so a process that never uses CUDA registers nothing). */
void library_lifecycle_activated(void);

/* True in a child forked after the parent used CUDA: every hook then goes
 * straight to the driver, because CUDA state does not survive fork. Inline:
 * every hook asks. */
extern bool library_forked_after_activation; /* atomic */
static inline bool library_bypassed_after_fork(void)
{
    return __atomic_load_n(&library_forked_after_activation, __ATOMIC_ACQUIRE);
}

/* The configuration the library was loaded with. */
const struct gpucache_config *library_config(void);

/* True once the loaded configuration sends allocations past the cache
 * (passthrough:True, backend:cudaMallocAsync); false before it is loaded,
 * as under the defaults. Set once at load, so that the hooks' hot paths
 * need not read the configuration (atomic). */
extern bool library_cache_bypassed;
static inline bool library_bypasses_cache(void)
{
    return __atomic_load_n(&library_cache_bypassed, __ATOMIC_RELAXED);
}

#endif

/* The constructor parses the configuration and, only when snapshot_signal
 * asks for it, installs that signal's handler; nothing else: the library is
 * preloaded into every process of a session (shells, compilers), and those
 * must behave exactly as without it. */
#include "library_lifecycle.h"

#include <pthread.h>

#include "gpucache_config.h"
#include "signal_hooks.h"

bool library_forked_after_activation;
bool library_cache_bypassed;

static void child_after_fork(void)
{
    /* Only a store: the child may run with locks that other parent threads
     * held, and it must not touch any of the inherited state. */
    __atomic_store_n(&library_forked_after_activation, true, __ATOMIC_RELEASE);
}

void library_lifecycle_activated(void)
{
    static bool registered;
    if (!__atomic_exchange_n(&registered, true, __ATOMIC_ACQ_REL))
        pthread_atfork(NULL, NULL, child_after_fork);
}

const struct gpucache_config *library_config(void)
{
    return gpucache_config_current();
}

__attribute__((constructor)) static void library_loaded(void)
{
    gpucache_config_load_or_exit();
    const struct gpucache_config *config = gpucache_config_current();
    __atomic_store_n(&library_cache_bypassed,
                     config->passthrough || config->backend != GPUCACHE_BACKEND_NATIVE,
                     __ATOMIC_RELEASE);
    /* At load, not at the first allocation: a signal that arrives earlier
     * must not take the default action (usually termination) instead. */
    snapshot_signal_install(config);
}

/* snapshot_signal: the library's handler owns the signal from load, and the
 * program's own disposition for it is kept here instead of in the kernel, so
 * that both see every delivery. The program's calls of sigaction, signal,
 * bsd_signal and sysv_signal for that one number are answered from and
 * stored in that record; every other signal goes to the C library
 * untouched. A program that ignores the signal (SIG_IGN) really ignores it:
 * the kernel's disposition is then SIG_IGN and no snapshot is written,
 * because only the kernel can ignore a signal exactly (no EINTR, SIGCHLD's
 * automatic reaping). */
#include "signal_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "gpucache_config.h"
#include "library_reports.h"
#include "log.h"
#include "real_driver.h"

/* The C library's implementation, behind its weak public names. */
extern int __sigaction(int signal_number, const struct sigaction *action,
                       struct sigaction *previous);

typedef int (*sigaction_function)(int, const struct sigaction *, struct sigaction *);

/* The next sigaction after this library: a sanitizer's interceptor when one
 * is loaded (it must see every disposition), else the C library's. */
static int next_sigaction(int signal_number, const struct sigaction *action,
                          struct sigaction *previous)
{
    static sigaction_function next; /* atomic */
    sigaction_function found = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    if (!found) {
        dlsym_function real_dlsym = real_dlsym_get();
        found = real_dlsym ? (sigaction_function)real_dlsym(RTLD_NEXT, "sigaction") : NULL;
        if (!found)
            found = __sigaction;
        __atomic_store_n(&next, found, __ATOMIC_RELEASE);
    }
    return found(signal_number, action, previous);
}

/* The hooks replace the C library's names for the whole process. */
#define SIGNAL_HOOK __attribute__((visibility("default")))

static int snapshot_signal; /* 0 until installed at load */

/* The program's disposition, published by index so that the handler (which
 * may run on any thread, at any time) always reads a complete record: a
 * writer fills a slot not in use, then switches. Slot 2 stays SIG_DFL, for
 * the reset SA_RESETHAND asks of a delivery. Only two changes made while one
 * delivery is still reading its slot could reuse that slot under it. */
#define DEFAULT_SLOT 2
static struct sigaction program_actions[3];
static int program_action_index; /* atomic */
static pthread_mutex_t program_action_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct sigaction *program_action(void)
{
    return &program_actions[__atomic_load_n(&program_action_index, __ATOMIC_ACQUIRE)];
}

static bool ignores(const struct sigaction *action)
{
    return !(action->sa_flags & SA_SIGINFO) && action->sa_handler == SIG_IGN;
}

static void snapshot_signal_arrived(int signal_number, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    library_reports_snapshot_requested();
    const struct sigaction *program = program_action();
    if (program->sa_flags & SA_RESETHAND)
        __atomic_store_n(&program_action_index, DEFAULT_SLOT, __ATOMIC_RELEASE);
    /* SIG_DFL: the key asked for a snapshot in place of the default action
     * (for most signals, termination), so nothing more happens. */
    if (program->sa_flags & SA_SIGINFO) {
        if (program->sa_sigaction)
            program->sa_sigaction(signal_number, info, context);
    } else if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN) {
        program->sa_handler(signal_number);
    }
    errno = saved_errno;
}

/* What the kernel holds for the program's disposition: SIG_IGN as it is;
 * otherwise our handler, with the program's mask and flags so that its
 * handler runs as it asked (SA_RESTART when it has none: a handler where
 * the default was must not make system calls fail with EINTR). */
static struct sigaction kernel_action_for(const struct sigaction *program)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    if (ignores(program)) {
        action.sa_handler = SIG_IGN;
        action.sa_mask = program->sa_mask;
        action.sa_flags = program->sa_flags;
        return action;
    }
    bool has_handler = (program->sa_flags & SA_SIGINFO) || program->sa_handler != SIG_DFL;
    action.sa_sigaction = snapshot_signal_arrived;
    sigemptyset(&action.sa_mask);
    if (has_handler)
        action.sa_mask = program->sa_mask;
    int kept = SA_RESTART | SA_NODEFER | SA_ONSTACK | SA_NOCLDSTOP | SA_NOCLDWAIT;
    action.sa_flags = SA_SIGINFO | (has_handler ? (program->sa_flags & kept) : SA_RESTART);
    return action;
}

void snapshot_signal_install(const struct gpucache_config *config)
{
    if (!config->snapshot_signal || !config->snapshot_path[0])
        return;
    pthread_mutex_lock(&program_action_lock);
    struct sigaction inherited;
    if (next_sigaction(config->snapshot_signal, NULL, &inherited) == 0) {
        program_actions[0] = inherited;
        program_actions[DEFAULT_SLOT].sa_handler = SIG_DFL;
        __atomic_store_n(&program_action_index, 0, __ATOMIC_RELEASE);
        struct sigaction action = kernel_action_for(&inherited);
        if (next_sigaction(config->snapshot_signal, &action, NULL) == 0)
            __atomic_store_n(&snapshot_signal, config->snapshot_signal, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&program_action_lock);
    if (!__atomic_load_n(&snapshot_signal, __ATOMIC_ACQUIRE))
        gpucache_log("snapshot_signal: cannot install the handler for signal %d; no snapshot "
                     "will be written when it arrives", config->snapshot_signal);
}

/* The program's sigaction for our signal: swaps the record, and the kernel's
 * disposition when ignoring starts or stops. */
static int program_sigaction(const struct sigaction *action, struct sigaction *previous)
{
    pthread_mutex_lock(&program_action_lock);
    int current = __atomic_load_n(&program_action_index, __ATOMIC_ACQUIRE);
    struct sigaction before = program_actions[current];
    int result = 0;
    if (action) {
        int slot = current == 0 ? 1 : 0;
        struct sigaction kernel = kernel_action_for(action);
        result = next_sigaction(snapshot_signal, &kernel, NULL);
        if (result == 0) {
            program_actions[slot] = *action;
            __atomic_store_n(&program_action_index, slot, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&program_action_lock);
    if (result == 0 && previous)
        *previous = before;
    return result;
}

static bool ours(int signal_number)
{
    int installed = __atomic_load_n(&snapshot_signal, __ATOMIC_ACQUIRE);
    return installed != 0 && signal_number == installed;
}

SIGNAL_HOOK int sigaction(int signal_number, const struct sigaction *action,
                          struct sigaction *previous)
{
    if (!ours(signal_number))
        return next_sigaction(signal_number, action, previous);
    return program_sigaction(action, previous);
}

/* The C library's own function of that name, for every other signal: it
 * keeps details such as siginterrupt(). */
static sighandler_t next_signal_function(const char *name, int signal_number,
                                         sighandler_t handler)
{
    dlsym_function real_dlsym = real_dlsym_get();
    sighandler_t (*next)(int, sighandler_t) =
        real_dlsym ? (sighandler_t (*)(int, sighandler_t))real_dlsym(RTLD_NEXT, name) : NULL;
    if (!next) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return next(signal_number, handler);
}

/* signal() for our signal, with the semantics glibc gives each name: BSD
 * (restarting, not reset) or System V (reset, not deferred). */
static sighandler_t set_program_handler(int signal_number, sighandler_t handler, int flags)
{
    if (handler == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction action, previous;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&action.sa_mask, signal_number);
    action.sa_flags = flags;
    if (program_sigaction(&action, &previous) != 0)
        return SIG_ERR;
    return previous.sa_handler;
}

SIGNAL_HOOK sighandler_t signal(int signal_number, sighandler_t handler)
{
    if (!ours(signal_number))
        return next_signal_function("signal", signal_number, handler);
    return set_program_handler(signal_number, handler, SA_RESTART);
}

SIGNAL_HOOK sighandler_t bsd_signal(int signal_number, sighandler_t handler)
{
    if (!ours(signal_number))
        return next_signal_function("bsd_signal", signal_number, handler);
    return set_program_handler(signal_number, handler, SA_RESTART);
}

SIGNAL_HOOK sighandler_t sysv_signal(int signal_number, sighandler_t handler)
{
    if (!ours(signal_number))
        return next_signal_function("sysv_signal", signal_number, handler);
    return set_program_handler(signal_number, handler, SA_RESETHAND | SA_NODEFER);
}

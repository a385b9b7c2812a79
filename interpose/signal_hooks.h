/* The snapshot_signal handler and the program's view of that signal: the
 * library's handler is installed when the library loads, and the program's
 * own sigaction/signal calls for that signal are kept and chained to, so
 * the program sees the signal exactly as without the library, plus a
 * snapshot (signal_hooks.c says what cannot be kept). */
#ifndef GPUCACHE_INTERPOSE_SIGNAL_HOOKS_H
#define GPUCACHE_INTERPOSE_SIGNAL_HOOKS_H

struct gpucache_config;

/* Installs the handler of config->snapshot_signal (when a snapshot path is
 * set too), keeping the disposition the process had as the program's own.
 * Called once, from the library's constructor. */
void snapshot_signal_install(const struct gpucache_config *config);

#endif

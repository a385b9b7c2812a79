/* The runtime's own entry-point lookups (cudaGetDriverEntryPoint and its
 * variants), whose real definitions live in libcudart. */
#ifndef GPUCACHE_INTERPOSE_RUNTIME_ENTRY_POINTS_H
#define GPUCACHE_INTERPOSE_RUNTIME_ENTRY_POINTS_H

/* When `name` is one of the runtime lookups the library wraps, remembers
 * `real_function` as the real one and returns the wrapper; otherwise
 * returns `real_function` unchanged. */
void *runtime_entry_point_substitute(const char *name, void *real_function);

/* True when `name` is one of the wrapped runtime lookups. */
int runtime_entry_point_is_wrapped(const char *name);

#endif

/* The dlsym hook: how the library reaches programs that never link libcuda.
 * Both the static and the shared CUDA runtime dlopen libcuda.so.1 and fetch
 * cuGetProcAddress_v2 with dlsym on that handle, which never searches
 * preloaded objects; only a dlsym hook sees that lookup.
 *
 * glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to dlsym's caller, taken
 * from the return address. The pass-through path therefore ends in a jump to
 * the real dlsym (a tail call), so the return address is still the
 * program's; a test disassembles this function to check the jump is there.
 * This file is compiled without sanitizers, whose function-exit hooks would
 * turn the jump back into a call. */
#include <dlfcn.h>

#include "cuda_headers.h"
#include "real_driver.h"
#include "runtime_entry_points.h"

/* Out of line so dlsym itself stays a short test-and-jump. */
__attribute__((noinline)) static void *dlsym_substituting(void *handle, const char *name)
{
    dlsym_function real_dlsym = real_dlsym_get();
    if (!real_dlsym)
        return NULL;
    void *found = real_dlsym(handle, name);
    if (!found)
        return NULL;
    if (runtime_entry_point_is_wrapped(name))
        return runtime_entry_point_substitute(name, found);
    if (!real_driver_is_hooked_name(name))
        return found;
    /* Substitute only a pointer that is the real driver's own variant: a
     * library that merely exports the same name keeps its function. */
    if (!real_driver_get(true))
        return found;
    return real_driver_substitute(found);
}

GPUCACHE_EXPORT void *dlsym(void *restrict handle, const char *restrict name)
{
    /* Pseudo-handles pass through untouched: the hooks are exported, so a
     * lookup in the global scope already finds them. */
    if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && name && name[0] == 'c' &&
        name[1] == 'u')
        return dlsym_substituting(handle, name);
    return real_dlsym_get()(handle, name);
}

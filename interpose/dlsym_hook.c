/* The dlsym hook: how the library reaches programs that never link libcuda.
 * Both the static and the shared CUDA runtime dlopen libcuda.so.1 and fetch
 * cuGetProcAddress_v2 with dlsym on that handle, which never searches
 * preloaded objects; only a dlsym hook sees that lookup.
 *
 * glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to dlsym's caller, taken
 * from the return address. The forwarding path therefore ends in a jump to
 * the real dlsym (a tail call), so the return address is still the
 * program's; a test disassembles this function to check the jump is there.
 * This file is compiled without sanitizers, whose function-exit hooks would
 * turn the jump back into a call. */
#include <dlfcn.h>

#include "cuda_headers.h"
#include "log.h"
#include "real_driver.h"
#include "runtime_entry_points.h"

/* Here, in the uninstrumented file, because sanitizer runtimes look up their
 * own interceptors with dlsym(RTLD_NEXT, ...) while they initialise, before
 * instrumented code may run. */
static dlsym_function real_dlsym_pointer;

dlsym_function real_dlsym_get(void)
{
    dlsym_function found = __atomic_load_n(&real_dlsym_pointer, __ATOMIC_ACQUIRE);
    if (found)
        return found;
    /* dlvsym is not hooked, so it cannot come back to us. GLIBC_2.34 is the
     * current version on x86-64; 2.2.5 and 2.17 are the original ones of
     * x86-64 and aarch64. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !found; i++)
        found = (dlsym_function)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (!found) {
        gpucache_log("cannot find the C library's dlsym (dlvsym failed for GLIBC_2.34, "
                     "GLIBC_2.2.5 and GLIBC_2.17); CUDA cannot be intercepted");
        return NULL;
    }
    __atomic_store_n(&real_dlsym_pointer, found, __ATOMIC_RELEASE);
    return found;
}

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
    if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && name[0] == 'c' && name[1] == 'u')
        return dlsym_substituting(handle, name);
    return real_dlsym_get()(handle, name);
}

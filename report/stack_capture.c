/* Capturing the program's stack on the allocation paths: libunwind's
 * unw_backtrace with its per-thread cache of unwind information, which in a
 * real program (many modules, the same call sites again and again) costs
 * about a fifteenth of glibc's backtrace() (BENCHMARKS.md), with the frames
 * of the library itself left out, so that the innermost frame kept is the
 * program's call into CUDA. */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "gpucache_stacks.h"

struct module_range {
    uintptr_t start;
    uintptr_t end;
};

static int find_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct module_range *range = data;
    if (info->dlpi_addr != range->start)
        return 0;
    uintptr_t end = 0;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type == PT_LOAD && info->dlpi_addr + header->p_vaddr + header->p_memsz > end)
            end = info->dlpi_addr + header->p_vaddr + header->p_memsz;
    }
    range->end = end;
    return 1;
}

/* The address range of the module holding `self`, found once: the library
 * is never unloaded while it records. */
static const void *range_self;
static struct module_range cached_range;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Under ThreadSanitizer, glibc's backtrace() instead: unw_backtrace keeps
 * each thread's trace cache behind a thread-specific key whose destructor
 * locks a mutex, and TSan's mutex interceptor crashes when a destructor
 * runs after it has retired the exiting thread. */
static bool use_glibc_backtrace;

/* Once per process: the unwinder, and the library's own address range. */
static void set_up_capture(void)
{
    use_glibc_backtrace = dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
    Dl_info info;
    if (!dladdr(range_self, &info) || !info.dli_fbase)
        return;
    cached_range.start = (uintptr_t)info.dli_fbase;
    dl_iterate_phdr(find_range, &cached_range);
}

void gpucache_stack_capture_prepare(const void *self)
{
    range_self = self;
    pthread_once(&setup_once, set_up_capture);
    /* The cache is set up, and the first unwind done, here: outside every
     * lock of the allocation path. */
    void *warm[4];
    if (use_glibc_backtrace) {
        (void)backtrace(warm, 4); /* loads libgcc_s now, not under a lock */
        return;
    }
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    (void)unw_backtrace(warm, 4);
}

static bool in_library(const void *address)
{
    return (uintptr_t)address >= cached_range.start && (uintptr_t)address < cached_range.end;
}

size_t gpucache_stack_capture(uintptr_t *frames, size_t depth)
{
    /* The library's own frames on an allocation path (hook, allocator,
     * observer) number about eight; unwinding costs per frame, so the slack
     * is not larger than that needs. */
    enum { LIBRARY_FRAMES = 12 };
    void *raw[GPUCACHE_STACK_MAX_FRAMES + LIBRARY_FRAMES];
    if (depth > GPUCACHE_STACK_MAX_FRAMES)
        depth = GPUCACHE_STACK_MAX_FRAMES;
    int limit = (int)(depth + LIBRARY_FRAMES);
    int captured = use_glibc_backtrace ? backtrace(raw, limit) : unw_backtrace(raw, limit);
    int index = 0;
    /* TSan's interceptor of backtrace() comes before the library's frames. */
    if (use_glibc_backtrace)
        while (index < captured && !in_library(raw[index]))
            index++;
    /* The innermost frames that are the library's own, and only those. */
    while (index < captured && in_library(raw[index]))
        index++;
    size_t kept = 0;
    for (; index < captured && kept < depth; index++)
        frames[kept++] = (uintptr_t)raw[index];
    return kept;
}

/* What happens at the start of every driver call: counting it for the stats
 * file, refusing it before cuInit, and injecting GPUSIM_DELAY delays and
 * GPUSIM_FAIL failures. */
#include "sim_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static _Atomic(struct sim_entry_point *) registered_head;
static atomic_ullong rate_draws;

static void register_entry_point(struct sim_entry_point *entry)
{
    bool expected = false;
    if (!atomic_compare_exchange_strong(&entry->registered, &expected, true))
        return;
    struct sim_entry_point *head = atomic_load(&registered_head);
    do
        entry->next_registered = head;
    while (!atomic_compare_exchange_weak(&registered_head, &head, entry));
}

struct sim_entry_point *sim_registered_entry_points(void)
{
    return atomic_load(&registered_head);
}

/* "cuMemcpyHtoD_v2_ptds" -> length of "cuMemcpyHtoD". */
static size_t base_name_length(const char *name)
{
    size_t length = strlen(name);
    if (length > 5 && (strcmp(name + length - 5, "_ptsz") == 0 ||
                       strcmp(name + length - 5, "_ptds") == 0))
        length -= 5;
    size_t digits = length;
    while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9')
        digits--;
    if (digits < length && digits >= 2 && name[digits - 1] == 'v' && name[digits - 2] == '_')
        length = digits - 2;
    return length;
}

static bool rule_matches(const struct sim_fail_rule *rule, const char *name)
{
    if (strcmp(rule->name, name) == 0)
        return true;
    size_t length = base_name_length(name);
    return strlen(rule->name) == length && strncmp(rule->name, name, length) == 0;
}

/* splitmix64: a small, well-mixed generator so a seed gives the same failure
 * sequence on every run of a single-threaded program. */
static double next_rate_draw(unsigned long long seed)
{
    unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * (atomic_fetch_add(&rate_draws, 1) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ULL << 53);
}

/* GPUSIM_DELAY: the matching calls sleep before they do anything, which
 * widens the window between a caller's two steps for tests of races. */
static void injected_delay(struct sim_entry_point *entry)
{
    struct sim_settings *settings = &sim.settings;
    unsigned long long microseconds = 0;
    for (int i = 0; i < settings->delay_rule_count; i++) {
        struct sim_fail_rule *rule = &settings->delay_rules[i];
        if (!rule_matches(rule, entry->name))
            continue;
        unsigned long long seen = atomic_fetch_add(&rule->seen, 1) + 1;
        if (seen == rule->nth || (rule->and_later && seen > rule->nth))
            microseconds += rule->delay_microseconds;
    }
    if (microseconds != 0) {
        struct timespec pause = {.tv_sec = (time_t)(microseconds / 1000000),
                                 .tv_nsec = (long)(microseconds % 1000000) * 1000};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
        }
    }
}

static CUresult injected_failure(struct sim_entry_point *entry)
{
    struct sim_settings *settings = &sim.settings;
    CUresult default_error = entry->entry_class == SIM_ENTRY_ALLOCATION
                                 ? CUDA_ERROR_OUT_OF_MEMORY
                                 : CUDA_ERROR_UNKNOWN;
    CUresult failure = CUDA_SUCCESS;
    for (int i = 0; i < settings->fail_rule_count; i++) {
        struct sim_fail_rule *rule = &settings->fail_rules[i];
        if (!rule_matches(rule, entry->name))
            continue;
        unsigned long long seen = atomic_fetch_add(&rule->seen, 1) + 1;
        if (failure == CUDA_SUCCESS &&
            (seen == rule->nth || (rule->and_later && seen > rule->nth)))
            failure = rule->error != CUDA_SUCCESS ? rule->error : default_error;
    }
    if (failure == CUDA_SUCCESS && settings->fail_rate > 0.0 &&
        entry->entry_class == SIM_ENTRY_ALLOCATION &&
        next_rate_draw(settings->fail_seed) < settings->fail_rate)
        failure = CUDA_ERROR_OUT_OF_MEMORY;
    return failure;
}

_Thread_local struct sim_call_site sim_call_site;

/* Calls that still work in a context whose kernel faulted: making contexts
 * current, querying them, and the resets and destroys that clear the fault. */
static bool works_after_kernel_fault(const char *name)
{
    static const char *const prefixes[] = {
        "cuCtxDestroy", "cuDevicePrimaryCtx", "cuCtxGet", "cuCtxSetCurrent", "cuCtxPopCurrent",
        "cuCtxPushCurrent", "cuDevice", "cuDriverGetVersion", "cuGetProcAddress", "cuGetError",
        "cuInit", "cuPointerGetAttribute",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

CUresult sim_enter(struct sim_entry_point *entry, bool needs_init, const void *return_address)
{
    sim_call_site.entry_name = entry->name;
    sim_call_site.return_address = return_address;
    if (!atomic_load_explicit(&entry->registered, memory_order_acquire))
        register_entry_point(entry);
    atomic_fetch_add_explicit(&entry->calls, 1, memory_order_relaxed);
    if (atomic_load_explicit(&sim.forked_after_init, memory_order_relaxed))
        return needs_init ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    if (!atomic_load_explicit(&sim.initialized, memory_order_acquire))
        return needs_init ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    /* A kernel fault is sticky: later calls in its context return it. */
    if (needs_init && atomic_load_explicit(&sim_any_sticky_error, memory_order_acquire) &&
        !works_after_kernel_fault(entry->name)) {
        CUresult sticky = sim_sticky_error_or(sim_current_context(), CUDA_SUCCESS);
        if (sticky != CUDA_SUCCESS)
            return sticky;
    }
    if (sim.settings.delay_rule_count != 0)
        injected_delay(entry);
    return injected_failure(entry);
}

/* The out-of-memory line: PyTorch's message (what was asked, the device,
 * allocated against reserved, the largest hole) with the advice that fits
 * the figures, in one line so a log keeps it whole. */
#include <stdio.h>

#include "gpucache_config.h"
#include "gpucache_report.h"

/* The advice follows from where the memory is: free in the cache but in
 * pieces too small (fragmentation: a setting can help), held back by the
 * cap, or held by the program itself (no setting can help). */
static void write_advice(const struct gpucache_oom_facts *facts, uint64_t unallocated, char *out,
                         size_t size)
{
    const struct gpucache_memory_state *state = &facts->state;
    const struct gpucache_config *config = facts->config;
    if (unallocated >= facts->request && !config->expandable_segments) {
        snprintf(out, size,
                 "the cache holds enough free memory, in pieces too small: "
                 "try expandable_segments:True to avoid fragmentation");
        return;
    }
    if (unallocated >= facts->request) {
        uint64_t mebibytes = (facts->request + (UINT64_C(1) << 20) - 1) >> 20;
        uint64_t least = config->large_segment_size >> 20;
        snprintf(out, size,
                 "the cache holds enough free memory, in pieces too small: "
                 "try max_split_size_mb:%llu so that blocks this large are not split, or "
                 "garbage_collection_threshold to give idle blocks back sooner",
                 (unsigned long long)(mebibytes > least ? mebibytes : least));
        return;
    }
    /* The device could hold the request, so the cache's cap refused it
     * (growth comes in segments, so the cap binds before reserved reaches it). */
    if (config->per_process_memory_fraction < 1.0 && state->device_free >= facts->request) {
        snprintf(out, size, "per_process_memory_fraction:%g caps the cache below this request",
                 config->per_process_memory_fraction);
        return;
    }
    snprintf(out, size,
             "the program's own allocations fill the device: no setting frees them");
}

size_t gpucache_oom_message(const struct gpucache_oom_facts *facts, char *out, size_t size)
{
    const struct gpucache_memory_state *state = &facts->state;
    char request[32], total[32], device_free[32], allocated[32], reserved[32], unallocated[32],
        largest[32], advice[256];
    uint64_t held = state->reserved > state->allocated ? state->reserved - state->allocated : 0;
    write_advice(facts, held, advice, sizeof advice);
    char device[96];
    if (state->device_total > 0)
        snprintf(device, sizeof device, "the device has %s, %s free",
                 gpucache_format_bytes(state->device_total, total, sizeof total),
                 gpucache_format_bytes(state->device_free, device_free, sizeof device_free));
    else
        snprintf(device, sizeof device, "the driver did not say how much it has free");
    int length = snprintf(
        out, size,
        "out of memory on device %d: tried to allocate %s; %s; the program has %s allocated, "
        "the cache reserves %s, %s of it unallocated (largest free block %s); %s",
        state->device, gpucache_format_bytes(facts->request, request, sizeof request), device,
        gpucache_format_bytes(state->allocated, allocated, sizeof allocated),
        gpucache_format_bytes(state->reserved, reserved, sizeof reserved),
        gpucache_format_bytes(held, unallocated, sizeof unallocated),
        gpucache_format_bytes(state->largest_free_block, largest, sizeof largest), advice);
    return length < 0 ? 0 : (size_t)length;
}

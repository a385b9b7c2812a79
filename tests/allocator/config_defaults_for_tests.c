/* Temporary stand-in for the two configuration functions the allocator
 * tests need, used only while config/ does not build config_dep yet. */
#include <string.h>

#include "gpucache_config.h"

void gpucache_config_defaults(struct gpucache_config *config)
{
    memset(config, 0, sizeof *config);
    config->max_split_size = UINT64_MAX;
    config->large_segment_size = (uint64_t)20 << 20;
    config->max_non_split_rounding = config->large_segment_size;
    config->per_process_memory_fraction = 1.0;
    config->pinned_num_register_threads = 1;
}

uint32_t gpucache_config_roundup_divisions(const struct gpucache_config *config, uint64_t size)
{
    int bucket = 63 - __builtin_clzll(size) - 20;
    if (bucket < 0)
        bucket = 0;
    if (bucket >= GPUCACHE_ROUNDUP_BUCKETS)
        bucket = GPUCACHE_ROUNDUP_BUCKETS - 1;
    return config->roundup_power2_divisions[bucket];
}

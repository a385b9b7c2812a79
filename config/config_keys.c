/* The table of keys: names, what each accepts, defaults, which keys have no
 * effect in this build, and the roundup bucket lookup. */
#include "config_internal.h"

#include <stdio.h>
#include <string.h>

#define BOOLEAN_EXPECTED "True or False"
#define PATH_EXPECTED "a file path, with %p for the process id; paths cannot contain , : [ or ]"

static const struct config_key_descriptor descriptors[GPUCACHE_KEY_COUNT] = {
    {GPUCACHE_KEY_EXPANDABLE_SEGMENTS, "expandable_segments", NULL,
     BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_MAX_SPLIT_SIZE_MB, "max_split_size_mb", NULL,
     "a whole number of MiB, at least large_segment_size_mb (20 by default)",
     config_parse_mebibytes},
    {GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB, "max_non_split_rounding_mb", NULL,
     "a whole number of MiB, at least large_segment_size_mb (20 by default)",
     config_parse_mebibytes},
    {GPUCACHE_KEY_ROUNDUP_POWER2_DIVISIONS, "roundup_power2_divisions", NULL,
     "a power of two, or a list [<MiB>:<divisions>,...,>:<divisions>] of powers of two",
     config_parse_roundup},
    {GPUCACHE_KEY_GARBAGE_COLLECTION_THRESHOLD, "garbage_collection_threshold", NULL,
     "a number between 0.0 and 1.0, both excluded", config_parse_fraction},
    {GPUCACHE_KEY_LARGE_SEGMENT_SIZE_MB, "large_segment_size_mb", NULL,
     "a whole number of MiB above 10", config_parse_mebibytes},
    {GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE, "expandable_segments_reserve", NULL,
     "a fraction of device memory in (0,1] such as 0.5, or GiB such as 40G",
     config_parse_reserve},
    {GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE_BY_CLASS,
     "expandable_segments_reserve_by_class", NULL,
     "a list [<class>:<fraction in (0,1] or GiB such as 40G>,...]",
     config_parse_reserve_by_class},
    {GPUCACHE_KEY_PER_PROCESS_MEMORY_FRACTION, "per_process_memory_fraction", NULL,
     "a number from 0.0 to 1.0", config_parse_fraction},
    {GPUCACHE_KEY_THROW_ON_CUDAMALLOC_OOM, "throw_on_cudamalloc_oom", NULL,
     BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC, "release_lock_on_cudamalloc",
     "release_lock_on_hipmalloc", BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_BACKEND, "backend", NULL, "native or cudaMallocAsync",
     config_parse_choice},
    {GPUCACHE_KEY_GRAPH_CAPTURE_RECORD_STREAM_REUSE,
     "graph_capture_record_stream_reuse", NULL, BOOLEAN_EXPECTED,
     config_parse_boolean},
    {GPUCACHE_KEY_PINNED_USE_BACKGROUND_THREADS, "pinned_use_background_threads",
     NULL, BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_PINNED_USE_CUDA_HOST_REGISTER, "pinned_use_cuda_host_register",
     "pinned_use_hip_host_register", BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_PINNED_NUM_REGISTER_THREADS, "pinned_num_register_threads", NULL,
     "a power of two from 1 to 128", config_parse_register_threads},
    {GPUCACHE_KEY_PINNED_RESERVE_SEGMENT_SIZE_MB, "pinned_reserve_segment_size_mb",
     NULL, "a whole number of MiB above 0", config_parse_mebibytes},
    {GPUCACHE_KEY_PINNED_FREE_CATCH_ALL, "pinned_free_catch_all", NULL,
     BOOLEAN_EXPECTED, config_parse_boolean},
    {GPUCACHE_KEY_REUSE, "reuse", NULL, "async, conservative or relaxed",
     config_parse_choice},
    {GPUCACHE_KEY_PASSTHROUGH, "passthrough", NULL, BOOLEAN_EXPECTED,
     config_parse_boolean},
    {GPUCACHE_KEY_MEMINFO, "meminfo", NULL, "cache_as_free or raw",
     config_parse_choice},
    {GPUCACHE_KEY_EXPANDABLE_SEGMENTS_SIZE_CLASS_MB, "expandable_segments_size_class_mb", NULL,
     "a whole number of MiB, 0 for one class", config_parse_mebibytes},
    {GPUCACHE_KEY_REPORT, "report", NULL, PATH_EXPECTED ", or stderr",
     config_parse_path},
    {GPUCACHE_KEY_SUMMARY, "summary", NULL, PATH_EXPECTED ", or stderr",
     config_parse_path},
    {GPUCACHE_KEY_TRACE, "trace", NULL, PATH_EXPECTED, config_parse_path},
    {GPUCACHE_KEY_TRACE_CSV, "trace_csv", NULL, PATH_EXPECTED, config_parse_path},
    {GPUCACHE_KEY_SNAPSHOT, "snapshot", NULL, PATH_EXPECTED, config_parse_path},
    {GPUCACHE_KEY_SNAPSHOT_SIGNAL, "snapshot_signal", NULL,
     "a catchable signal's name such as SIGUSR1 or USR1, or its number",
     config_parse_signal},
};

static const struct gpucache_config default_config = {
    .expandable_segments = false,
    .max_split_size = UINT64_MAX,
    .max_non_split_rounding = 20 * MEBIBYTE,
    .garbage_collection_threshold = 0.0,
    .large_segment_size = 20 * MEBIBYTE,
    /* Tensors this large are few and long-lived; kept apart, the smaller
     * ones never settle in the slots they free (BENCHMARKS.md). */
    .expandable_segments_size_class = 256 * MEBIBYTE,
    .expandable_segments_reserve = {.kind = GPUCACHE_RESERVE_DEFAULT},
    .per_process_memory_fraction = 1.0,
    .backend = GPUCACHE_BACKEND_NATIVE,
    .pinned_num_register_threads = 1,
    .pinned_reserve_segment_size_mb = 0,
    .reuse = GPUCACHE_REUSE_ASYNC,
    .meminfo = GPUCACHE_MEMINFO_CACHE_AS_FREE,
    .source_variable = NULL,
};

const struct config_key_descriptor *config_key_descriptor(enum gpucache_config_key key)
{
    if ((int)key < 0 || key >= GPUCACHE_KEY_COUNT)
        return NULL;
    return &descriptors[key];
}

const struct config_key_descriptor *config_find_key(const char *name)
{
    for (size_t i = 0; i < GPUCACHE_KEY_COUNT; i++) {
        if (strcmp(descriptors[i].name, name) == 0 ||
            (descriptors[i].alias != NULL && strcmp(descriptors[i].alias, name) == 0))
            return &descriptors[i];
    }
    return NULL;
}

const struct gpucache_config *config_default_config(void)
{
    return &default_config;
}

void gpucache_config_defaults(struct gpucache_config *config)
{
    *config = default_config;
}

const char *gpucache_config_key_name(enum gpucache_config_key key)
{
    const struct config_key_descriptor *descriptor = config_key_descriptor(key);
    return descriptor != NULL ? descriptor->name : "unknown";
}

uint32_t gpucache_config_roundup_divisions(const struct gpucache_config *config,
                                           uint64_t size)
{
    /* Bucket i holds [2^i MiB, 2^(i+1) MiB); smaller sizes share bucket 0
     * and sizes from 32 GiB up share the last one, as in PyTorch. */
    size_t bucket = 0;
    if (size >= MEBIBYTE) {
        bucket = (size_t)(63 - __builtin_clzll(size)) - 20;
        if (bucket >= GPUCACHE_ROUNDUP_BUCKETS)
            bucket = GPUCACHE_ROUNDUP_BUCKETS - 1;
    }
    return config->roundup_power2_divisions[bucket];
}

/* Keys that shape the caching allocator's own pools; the driver's pool
 * (backend:cudaMallocAsync) and pass-through mode have no such pools, as
 * PyTorch's cudaMallocAsync backend ignores them too. */
static bool key_shapes_native_cache(enum gpucache_config_key key)
{
    switch (key) {
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS:
    case GPUCACHE_KEY_MAX_SPLIT_SIZE_MB:
    case GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB:
    case GPUCACHE_KEY_ROUNDUP_POWER2_DIVISIONS:
    case GPUCACHE_KEY_GARBAGE_COLLECTION_THRESHOLD:
    case GPUCACHE_KEY_LARGE_SEGMENT_SIZE_MB:
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE:
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_SIZE_CLASS_MB:
        return true;
    default:
        return false;
    }
}

/* Pass-through forwards every call unchanged, so nothing that chooses how
 * memory is obtained, capped, reused or reported can act. */
static bool key_needs_allocator(enum gpucache_config_key key)
{
    switch (key) {
    case GPUCACHE_KEY_REUSE:
    case GPUCACHE_KEY_MEMINFO:
    case GPUCACHE_KEY_BACKEND:
    case GPUCACHE_KEY_PER_PROCESS_MEMORY_FRACTION:
    case GPUCACHE_KEY_THROW_ON_CUDAMALLOC_OOM:
        return true;
    default:
        return key_shapes_native_cache(key);
    }
}

/* Keys without effect whatever else is set. */
static bool key_never_applies(enum gpucache_config_key key)
{
    switch (key) {
    /* PyTorch's pinned host-memory cache: gpucache has no host cache, host
     * allocations go to the driver unchanged. */
    case GPUCACHE_KEY_PINNED_USE_BACKGROUND_THREADS:
    case GPUCACHE_KEY_PINNED_USE_CUDA_HOST_REGISTER:
    case GPUCACHE_KEY_PINNED_NUM_REGISTER_THREADS:
    case GPUCACHE_KEY_PINNED_RESERVE_SEGMENT_SIZE_MB:
    case GPUCACHE_KEY_PINNED_FREE_CATCH_ALL:
    /* The allocator holds its lock across driver allocation calls; dropping
     * it would let two threads grow the same pool at once. */
    case GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC:
    /* Allocations on a capturing stream pass through to the driver as graph
     * memory nodes, so there is no capture-time reuse to decide. */
    case GPUCACHE_KEY_GRAPH_CAPTURE_RECORD_STREAM_REUSE:
    /* Classes are bound to streams by a PyTorch C++ call that an unmodified
     * binary never makes, so no stream ever has a class. */
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE_BY_CLASS:
        return true;
    default:
        return false;
    }
}

/* Why `key` has no effect because of another key, or NULL if it has one. */
static const char *ignored_because(const struct gpucache_config *config,
                                   enum gpucache_config_key key)
{
    if (config->passthrough && key_needs_allocator(key))
        return "passthrough:True";
    if (config->backend == GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC &&
        key_shapes_native_cache(key))
        return "backend:cudaMallocAsync";
    return NULL;
}

bool gpucache_config_key_ignored(const struct gpucache_config *config,
                                 enum gpucache_config_key key)
{
    return key_never_applies(key) || ignored_because(config, key) != NULL;
}

bool gpucache_config_conflict_warning(const struct gpucache_config *config,
                                      struct gpucache_config_error *warning)
{
    const char *reason = config->passthrough ? "passthrough:True"
                                             : "backend:cudaMallocAsync";
    char keys[512];
    size_t used = 0;
    keys[0] = '\0';
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        enum gpucache_config_key key = (enum gpucache_config_key)index;
        if (!config->key_from_string[key] || ignored_because(config, key) == NULL)
            continue;
        int written = snprintf(keys + used, sizeof keys - used, "%s%s",
                               used == 0 ? "" : ",", gpucache_config_key_name(key));
        if (written > 0 && (size_t)written < sizeof keys - used)
            used += (size_t)written;
    }
    warning->message[0] = '\0';
    if (used == 0)
        return false;
    snprintf(warning->message, sizeof warning->message,
             "gpucache: %s: warning: %s ignores %s",
             config->source_variable != NULL ? config->source_variable
                                              : "GPUCACHE_ALLOC_CONF",
             reason, keys);
    return true;
}

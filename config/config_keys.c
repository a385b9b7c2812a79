/* The table of keys (from config_keys.def): names, what each accepts, where
 * each is stored, the defaults, which keys have no effect in this build, and
 * the roundup bucket lookup. */
#include "config_internal.h"

#include <stdio.h>
#include <string.h>

static const struct config_key_descriptor descriptors[GPUCACHE_KEY_COUNT] = {
#define GPUCACHE_CONFIG_KEY(id, name, alias, expected, kind, reach, field, default, limits) \
    {GPUCACHE_KEY_##id, name, alias, expected, CONFIG_KIND_##kind, CONFIG_REACH_##reach, \
     offsetof(struct gpucache_config, field), limits},
#include "config_keys.def"
#undef GPUCACHE_CONFIG_KEY
};

/* Every kind's field type, so that a row naming a field of another size
 * fails to compile instead of storing into the wrong bytes. */
#define FIELD_TYPE_BOOLEAN bool
#define FIELD_TYPE_MEBIBYTES uint64_t
#define FIELD_TYPE_FRACTION double
#define FIELD_TYPE_POWER_OF_TWO uint32_t
#define FIELD_TYPE_WHOLE_NUMBER uint32_t
#define FIELD_TYPE_CHOICE int
#define FIELD_TYPE_PATH char[GPUCACHE_PATH_MAX]
#define FIELD_TYPE_SIGNAL int
#define FIELD_TYPE_ROUNDUP uint32_t[GPUCACHE_ROUNDUP_BUCKETS]
#define FIELD_TYPE_RESERVE struct gpucache_reserve
#define FIELD_TYPE_RESERVE_BY_CLASS struct gpucache_reserve_class[GPUCACHE_MAX_RESERVE_CLASSES]
#define GPUCACHE_CONFIG_KEY(id, name, alias, expected, kind, reach, field, default, limits) \
    _Static_assert(sizeof(((struct gpucache_config *)0)->field) == sizeof(FIELD_TYPE_##kind), \
                   #field " is not the type of a " #kind " value");
#include "config_keys.def"
#undef GPUCACHE_CONFIG_KEY

static const struct gpucache_config default_config = {
#define GPUCACHE_CONFIG_KEY(id, name, alias, expected, kind, reach, field, default, limits) \
    .field = default,
#include "config_keys.def"
#undef GPUCACHE_CONFIG_KEY
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

const char *gpucache_config_key_expected(enum gpucache_config_key key)
{
    const struct config_key_descriptor *descriptor = config_key_descriptor(key);
    return descriptor != NULL ? descriptor->expected : "";
}

bool gpucache_config_key_is_output(enum gpucache_config_key key)
{
    const struct config_key_descriptor *descriptor = config_key_descriptor(key);
    return descriptor != NULL &&
           (descriptor->kind == CONFIG_KIND_PATH || descriptor->kind == CONFIG_KIND_SIGNAL);
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

static enum config_key_reach reach_of(enum gpucache_config_key key)
{
    return descriptors[key].reach;
}

/* Keys that shape the caching allocator's own pools; the driver's pool
 * (backend:cudaMallocAsync) and pass-through mode have no such pools, as
 * PyTorch's cudaMallocAsync backend ignores them too. */
static bool key_shapes_native_cache(enum gpucache_config_key key)
{
    return reach_of(key) == CONFIG_REACH_NATIVE_CACHE;
}

/* Pass-through forwards every call unchanged, so nothing that chooses how
 * memory is obtained, capped, reused or reported can act. */
static bool key_needs_allocator(enum gpucache_config_key key)
{
    return reach_of(key) == CONFIG_REACH_ALLOCATOR || key_shapes_native_cache(key);
}

/* Keys without effect whatever else is set (config_keys.def says why). */
static bool key_never_applies(enum gpucache_config_key key)
{
    return reach_of(key) == CONFIG_REACH_NEVER;
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

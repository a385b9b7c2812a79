/* Rules between keys, checked once the whole string is read so that the
 * order of the keys never matters (as PyTorch reads large_segment_size_mb
 * before the keys whose minimum it sets). */
#include "config_internal.h"

#include <string.h>

static int check_minimum(struct config_parser *parser, enum gpucache_config_key key,
                         uint64_t value, const char *what)
{
    const struct gpucache_config *config = parser->config;
    if (!config->key_from_string[key] || value >= config->large_segment_size)
        return 0;
    return config_fail_entry(parser, parser->key_entry_start[key], what,
                             "at least large_segment_size_mb, %llu",
                             (unsigned long long)(config->large_segment_size / MEBIBYTE));
}

/* Two outputs written to one file would overwrite each other. */
static int check_outputs_distinct(struct config_parser *parser)
{
    for (int later = 0; later < GPUCACHE_KEY_COUNT; later++) {
        const struct config_key_descriptor *later_key =
            config_key_descriptor((enum gpucache_config_key)later);
        const char *path = config_const_field(parser->config, later_key);
        if (later_key->kind != CONFIG_KIND_PATH || path[0] == '\0' ||
            strcmp(path, "stderr") == 0)
            continue;
        for (int earlier = 0; earlier < later; earlier++) {
            const struct config_key_descriptor *earlier_key =
                config_key_descriptor((enum gpucache_config_key)earlier);
            if (earlier_key->kind != CONFIG_KIND_PATH ||
                strcmp(path, config_const_field(parser->config, earlier_key)) != 0)
                continue;
            return config_fail_entry(parser, parser->key_entry_start[later],
                                     "path already used by another output",
                                     "a different path from %s's", earlier_key->name);
        }
    }
    return 0;
}

int config_check_consistency(struct config_parser *parser)
{
    struct gpucache_config *config = parser->config;
    if (!config->key_from_string[GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB])
        config->max_non_split_rounding = config->large_segment_size;

    if (check_minimum(parser, GPUCACHE_KEY_MAX_SPLIT_SIZE_MB, config->max_split_size,
                      "max_split_size_mb too small") != 0 ||
        check_minimum(parser, GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB,
                      config->max_non_split_rounding,
                      "max_non_split_rounding_mb too small") != 0)
        return -1;

    if (config->snapshot_signal != 0 && config->snapshot_path[0] == '\0')
        return config_fail_entry(parser, parser->key_entry_start[GPUCACHE_KEY_SNAPSHOT_SIGNAL],
                                 "snapshot_signal without snapshot",
                                 "snapshot:<path> in the same string");
    return check_outputs_distinct(parser);
}

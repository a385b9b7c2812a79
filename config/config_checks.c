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

struct output_path {
    enum gpucache_config_key key;
    const char *path;
};

/* Two outputs written to one file would overwrite each other. */
static int check_outputs_distinct(struct config_parser *parser)
{
    const struct gpucache_config *config = parser->config;
    const struct output_path outputs[] = {
        {GPUCACHE_KEY_REPORT, config->report_path},
        {GPUCACHE_KEY_SUMMARY, config->summary_path},
        {GPUCACHE_KEY_TRACE, config->trace_path},
        {GPUCACHE_KEY_TRACE_CSV, config->trace_csv_path},
        {GPUCACHE_KEY_SNAPSHOT, config->snapshot_path},
    };
    size_t count = sizeof outputs / sizeof outputs[0];
    for (size_t later = 1; later < count; later++) {
        for (size_t earlier = 0; earlier < later; earlier++) {
            const char *path = outputs[later].path;
            if (path[0] == '\0' || strcmp(path, "stderr") == 0 ||
                strcmp(path, outputs[earlier].path) != 0)
                continue;
            return config_fail_entry(parser, parser->key_entry_start[outputs[later].key],
                                     "path already used by another output",
                                     "a different path from %s's",
                                     gpucache_config_key_name(outputs[earlier].key));
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

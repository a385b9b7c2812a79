/* The JSON view of the configuration: values in each key's own units,
 * sources, the ignored list, escaping, and snprintf-like truncation. The
 * command's suite parses the output with a real JSON parser. */
#include "config_test_support.h"

static char json[65536];

static const char *to_json(const struct gpucache_config *config)
{
    size_t length = gpucache_config_to_json(config, json, sizeof json);
    cr_assert_lt(length, sizeof json);
    cr_assert_eq(strlen(json), length);
    return json;
}

#define assert_contains(text, piece) \
    cr_assert(strstr((text), (piece)) != NULL, "missing %s in:\n%s", (piece), (text))

Test(config, json_of_the_defaults)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    const char *text = to_json(&config);
    cr_assert(strncmp(text, "{\n  \"variable\": null,\n  \"keys\": {\n", 34) == 0, "%s", text);
    assert_contains(text, "\"expandable_segments\": {\"value\": false, \"source\": \"default\"},\n");
    assert_contains(text, "\"max_split_size_mb\": {\"value\": null, \"source\": \"default\"},\n");
    assert_contains(text, "\"max_non_split_rounding_mb\": {\"value\": 20, ");
    assert_contains(text, "\"garbage_collection_threshold\": {\"value\": 0, ");
    assert_contains(text, "\"expandable_segments_reserve\": {\"value\": null, ");
    assert_contains(text, "\"expandable_segments_reserve_by_class\": {\"value\": {}, ");
    assert_contains(text, "\"per_process_memory_fraction\": {\"value\": 1, ");
    assert_contains(text, "\"backend\": {\"value\": \"native\", ");
    assert_contains(text, "\"reuse\": {\"value\": \"async\", ");
    assert_contains(text, "\"meminfo\": {\"value\": \"cache_as_free\", ");
    assert_contains(text, "\"expandable_segments_size_class_mb\": {\"value\": 0, ");
    assert_contains(text, "\"expandable_segments_stitch\": {\"value\": true, ");
    assert_contains(text, "\"expandable_segments_handles\": {\"value\": \"page\", ");
    assert_contains(text, "\"report\": {\"value\": null, ");
    assert_contains(text, "\"snapshot_signal\": {\"value\": null, \"source\": \"default\"}\n  },\n");
    cr_assert(strstr(text, "\"ignored\": [\"expandable_segments_reserve_by_class\", "
                           "\"release_lock_on_cudamalloc\", \"graph_capture_record_stream_reuse\", "
                           "\"pinned_use_background_threads\", \"pinned_use_cuda_host_register\", "
                           "\"pinned_num_register_threads\", \"pinned_reserve_segment_size_mb\", "
                           "\"pinned_free_catch_all\"]\n}\n") != NULL, "%s", text);
}

Test(config, json_values_in_key_units)
{
    struct gpucache_config config = parse_accepted(
        "expandable_segments:True,max_split_size_mb:128,garbage_collection_threshold:0.6,"
        "roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments_reserve:1.5G,"
        "expandable_segments_reserve_by_class:[big:0.5,small:2G],per_process_memory_fraction:0.1,"
        "backend:cudaMallocAsync,reuse:conservative,meminfo:raw,report:/tmp/r-%p.json,"
        "expandable_segments_size_class_mb:128,"
        "snapshot:s.pickle,snapshot_signal:USR1,pinned_num_register_threads:4");
    config.source_variable = "PYTORCH_CUDA_ALLOC_CONF";
    const char *text = to_json(&config);
    assert_contains(text, "\"variable\": \"PYTORCH_CUDA_ALLOC_CONF\"");
    assert_contains(text, "\"expandable_segments\": {\"value\": true, \"source\": \"string\"}");
    assert_contains(text, "\"max_split_size_mb\": {\"value\": 128, \"source\": \"string\"}");
    assert_contains(text, "\"garbage_collection_threshold\": {\"value\": 0.6, ");
    assert_contains(text, "\"roundup_power2_divisions\": {\"value\": {\"1\": 1, \"2\": 1, \"4\": 1, "
                          "\"8\": 1, \"16\": 1, \"32\": 1, \"64\": 1, \"128\": 1, \"256\": 1, "
                          "\"512\": 2, \"1024\": 8, \"2048\": 8, \"4096\": 8, \"8192\": 8, "
                          "\"16384\": 8, \"32768\": 8}, \"source\": \"string\"}");
    assert_contains(text, "\"expandable_segments_reserve\": {\"value\": \"1.5G\", ");
    assert_contains(text, "{\"value\": {\"big\": 0.5, \"small\": \"2G\"}, ");
    assert_contains(text, "\"per_process_memory_fraction\": {\"value\": 0.1, ");
    assert_contains(text, "\"backend\": {\"value\": \"cudaMallocAsync\", \"source\": \"string\"}");
    assert_contains(text, "\"reuse\": {\"value\": \"conservative\", ");
    assert_contains(text, "\"meminfo\": {\"value\": \"raw\", ");
    assert_contains(text, "\"expandable_segments_size_class_mb\": {\"value\": 128, ");
    assert_contains(text, "\"report\": {\"value\": \"/tmp/r-%p.json\", ");
    assert_contains(text, "\"snapshot_signal\": {\"value\": \"SIGUSR1\", ");
    assert_contains(text, "\"pinned_num_register_threads\": {\"value\": 4, ");
    /* backend:cudaMallocAsync adds the native cache's keys to the list. */
    assert_contains(text, "\"ignored\": [\"expandable_segments\", \"max_split_size_mb\", "
                          "\"max_non_split_rounding_mb\", \"roundup_power2_divisions\", "
                          "\"garbage_collection_threshold\", \"large_segment_size_mb\", "
                          "\"expandable_segments_reserve\", \"expandable_segments_reserve_by_class\", ");
}

Test(config, json_escapes_paths)
{
    struct gpucache_config config = parse_accepted("trace:/tmp/a\"b\\c");
    assert_contains(to_json(&config), "\"trace\": {\"value\": \"/tmp/a\\\"b\\\\c\", ");
}

Test(config, json_truncates_like_snprintf)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    size_t full = gpucache_config_to_json(&config, NULL, 0);
    cr_assert_gt(full, 1000);
    char small[40];
    memset(small, 'x', sizeof small);
    cr_assert_eq(gpucache_config_to_json(&config, small, sizeof small), full);
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert(strncmp(small, "{\n  \"variable\": null,", 21) == 0);
    char exact[4096];
    cr_assert_lt(full, sizeof exact);
    cr_assert_eq(gpucache_config_to_json(&config, exact, full + 1), full);
    cr_assert_eq(strlen(exact), full);
}

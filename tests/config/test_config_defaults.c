/* The defaults are PyTorch's, and an empty string changes nothing. */
#include "config_test_support.h"

static void assert_defaults(const struct gpucache_config *config)
{
    cr_assert_not(config->expandable_segments);
    cr_assert_eq(config->max_split_size, UINT64_MAX);
    cr_assert_eq(config->max_non_split_rounding, 20 * MiB);
    for (int i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        cr_assert_eq(config->roundup_power2_divisions[i], 0);
    cr_assert_eq(config->garbage_collection_threshold, 0.0);
    cr_assert_eq(config->large_segment_size, 20 * MiB);
    cr_assert_eq(config->expandable_segments_reserve.kind, GPUCACHE_RESERVE_DEFAULT);
    cr_assert_eq(config->reserve_class_count, 0);
    cr_assert_eq(config->per_process_memory_fraction, 1.0);
    cr_assert_not(config->throw_on_cudamalloc_oom);
    cr_assert_not(config->release_lock_on_cudamalloc);
    cr_assert_eq(config->backend, GPUCACHE_BACKEND_NATIVE);
    cr_assert_not(config->graph_capture_record_stream_reuse);
    cr_assert_not(config->pinned_use_background_threads);
    cr_assert_not(config->pinned_use_cuda_host_register);
    cr_assert_eq(config->pinned_num_register_threads, 1);
    cr_assert_eq(config->pinned_reserve_segment_size_mb, 0);
    cr_assert_not(config->pinned_free_catch_all);
    cr_assert_eq(config->reuse, GPUCACHE_REUSE_ASYNC);
    cr_assert_not(config->passthrough);
    cr_assert_eq(config->meminfo, GPUCACHE_MEMINFO_CACHE_AS_FREE);
    cr_assert_eq(config->expandable_segments_size_class, 0);
    cr_assert(config->expandable_segments_stitch);
    cr_assert_eq(config->expandable_segments_handles, GPUCACHE_HANDLES_PAGE);
    cr_assert_str_empty(config->report_path);
    cr_assert_str_empty(config->summary_path);
    cr_assert_str_empty(config->trace_path);
    cr_assert_str_empty(config->trace_csv_path);
    cr_assert_str_empty(config->snapshot_path);
    cr_assert_eq(config->snapshot_signal, 0);
    for (int key = 0; key < GPUCACHE_KEY_COUNT; key++)
        cr_assert_not(config->key_from_string[key], "key %d marked as given", key);
}

Test(config, defaults_are_pytorchs)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    assert_defaults(&config);
    cr_assert_null(config.source_variable);
}

Test(config, empty_and_blank_strings_give_the_defaults)
{
    const char *texts[] = {"", " ", " \t\n\r\v\f "};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct gpucache_config config = parse_accepted(texts[i]);
        assert_defaults(&config);
    }
}

Test(config, parse_starts_from_the_defaults)
{
    struct gpucache_config config = parse_accepted("expandable_segments:True");
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse("GPUCACHE_ALLOC_CONF", "", &config, &error), 0);
    assert_defaults(&config);
}

Test(config, a_rejected_string_leaves_the_configuration_untouched)
{
    struct gpucache_config config = parse_accepted("max_split_size_mb:64");
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse("GPUCACHE_ALLOC_CONF",
                                       "expandable_segments:True,bogus:1", &config, &error), -1);
    cr_assert_eq(config.max_split_size, 64 * MiB);
    cr_assert_not(config.expandable_segments);
}

Test(config, key_names_round_trip_and_are_unique)
{
    for (int a = 0; a < GPUCACHE_KEY_COUNT; a++) {
        const char *name = gpucache_config_key_name((enum gpucache_config_key)a);
        cr_assert_str_neq(name, "unknown");
        for (int b = 0; b < a; b++)
            cr_assert_str_neq(name, gpucache_config_key_name((enum gpucache_config_key)b));
    }
    cr_assert_str_eq(gpucache_config_key_name(GPUCACHE_KEY_EXPANDABLE_SEGMENTS), "expandable_segments");
    cr_assert_str_eq(gpucache_config_key_name(GPUCACHE_KEY_SNAPSHOT_SIGNAL), "snapshot_signal");
    cr_assert_str_eq(gpucache_config_key_name(GPUCACHE_KEY_COUNT), "unknown");
}

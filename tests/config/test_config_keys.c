/* Every key's accepted forms, and that each records where it came from. */
#include "config_test_support.h"

#include <signal.h>

Test(config, booleans_are_exactly_true_and_false)
{
    struct gpucache_config config = parse_accepted("expandable_segments:True");
    cr_assert(config.expandable_segments);
    cr_assert(config.key_from_string[GPUCACHE_KEY_EXPANDABLE_SEGMENTS]);
    cr_assert_not(config.key_from_string[GPUCACHE_KEY_MAX_SPLIT_SIZE_MB]);
    config = parse_accepted("expandable_segments:False");
    cr_assert_not(config.expandable_segments);
    cr_assert(config.key_from_string[GPUCACHE_KEY_EXPANDABLE_SEGMENTS]);
}

Test(config, every_boolean_key_sets_its_field)
{
    struct gpucache_config config = parse_accepted(
        "throw_on_cudamalloc_oom:True,release_lock_on_cudamalloc:True,"
        "graph_capture_record_stream_reuse:True,pinned_use_background_threads:True,"
        "pinned_use_cuda_host_register:True,pinned_free_catch_all:True,passthrough:True");
    cr_assert(config.throw_on_cudamalloc_oom);
    cr_assert(config.release_lock_on_cudamalloc);
    cr_assert(config.graph_capture_record_stream_reuse);
    cr_assert(config.pinned_use_background_threads);
    cr_assert(config.pinned_use_cuda_host_register);
    cr_assert(config.pinned_free_catch_all);
    cr_assert(config.passthrough);
    cr_assert_not(config.expandable_segments);
}

Test(config, pytorch_rocm_spellings_are_aliases)
{
    struct gpucache_config config = parse_accepted(
        "release_lock_on_hipmalloc:True,pinned_use_hip_host_register:True");
    cr_assert(config.release_lock_on_cudamalloc);
    cr_assert(config.pinned_use_cuda_host_register);
    cr_assert(config.key_from_string[GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC]);
}

Test(config, whitespace_is_dropped_anywhere_as_in_pytorch)
{
    struct gpucache_config config = parse_accepted(
        "  expandable_segments : True ,\n\tmax_split _size_mb: 1 28 , roundup_power2_divisions : [ 256 : 1 , > : 8 ]  ");
    cr_assert(config.expandable_segments);
    cr_assert_eq(config.max_split_size, 128 * MiB);
    cr_assert_eq(config.roundup_power2_divisions[8], 1);
    cr_assert_eq(config.roundup_power2_divisions[9], 8);
}

Test(config, sizes_in_mebibytes)
{
    struct gpucache_config config = parse_accepted(
        "max_split_size_mb:20,max_non_split_rounding_mb:1024,large_segment_size_mb:20");
    cr_assert_eq(config.max_split_size, 20 * MiB);
    cr_assert_eq(config.max_non_split_rounding, 1024 * MiB);
    cr_assert_eq(config.large_segment_size, 20 * MiB);
    config = parse_accepted("max_split_size_mb:17592186044415");
    cr_assert_eq(config.max_split_size, 17592186044415ULL * MiB);
    config = parse_accepted("pinned_reserve_segment_size_mb:1");
    cr_assert_eq(config.pinned_reserve_segment_size_mb, 1);
}

Test(config, large_segment_size_sets_the_minimums_in_any_order)
{
    struct gpucache_config config = parse_accepted("max_split_size_mb:40,large_segment_size_mb:40");
    cr_assert_eq(config.large_segment_size, 40 * MiB);
    cr_assert_eq(config.max_split_size, 40 * MiB);
    config = parse_accepted("large_segment_size_mb:11");
    cr_assert_eq(config.large_segment_size, 11 * MiB);
}

Test(config, max_non_split_rounding_defaults_to_the_large_segment_size)
{
    struct gpucache_config config = parse_accepted("large_segment_size_mb:64");
    cr_assert_eq(config.max_non_split_rounding, 64 * MiB);
    cr_assert_not(config.key_from_string[GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB]);
    config = parse_accepted("large_segment_size_mb:64,max_non_split_rounding_mb:128");
    cr_assert_eq(config.max_non_split_rounding, 128 * MiB);
}

Test(config, fractions_in_decimal_notation)
{
    struct gpucache_config config = parse_accepted("garbage_collection_threshold:0.6");
    cr_assert_eq(config.garbage_collection_threshold, 0.6);
    cr_assert_eq(parse_accepted("garbage_collection_threshold:.5").garbage_collection_threshold, 0.5);
    cr_assert_eq(parse_accepted("garbage_collection_threshold:5e-1").garbage_collection_threshold, 0.5);
    cr_assert_eq(parse_accepted("garbage_collection_threshold:0.999").garbage_collection_threshold, 0.999);
    cr_assert_eq(parse_accepted("per_process_memory_fraction:0").per_process_memory_fraction, 0.0);
    cr_assert_eq(parse_accepted("per_process_memory_fraction:1").per_process_memory_fraction, 1.0);
    cr_assert_eq(parse_accepted("per_process_memory_fraction:0.25").per_process_memory_fraction, 0.25);
}

Test(config, expandable_segments_reserve_as_fraction_or_gibibytes)
{
    struct gpucache_reserve reserve =
        parse_accepted("expandable_segments_reserve:0.5").expandable_segments_reserve;
    cr_assert_eq(reserve.kind, GPUCACHE_RESERVE_FRACTION);
    cr_assert_eq(reserve.fraction, 0.5);
    reserve = parse_accepted("expandable_segments_reserve:1").expandable_segments_reserve;
    cr_assert_eq(reserve.kind, GPUCACHE_RESERVE_FRACTION);
    cr_assert_eq(reserve.fraction, 1.0);
    reserve = parse_accepted("expandable_segments_reserve:40G").expandable_segments_reserve;
    cr_assert_eq(reserve.kind, GPUCACHE_RESERVE_BYTES);
    cr_assert_eq(reserve.bytes, 40 * GiB);
    reserve = parse_accepted("expandable_segments_reserve:1.5g").expandable_segments_reserve;
    cr_assert_eq(reserve.kind, GPUCACHE_RESERVE_BYTES);
    cr_assert_eq(reserve.bytes, 3 * GiB / 2);
}

Test(config, reserve_classes_as_a_list)
{
    struct gpucache_config config = parse_accepted(
        "expandable_segments_reserve_by_class:[big:0.5,small:2g,x-1.y_2:1]");
    cr_assert_eq(config.reserve_class_count, 3);
    cr_assert_str_eq(config.reserve_classes[0].name, "big");
    cr_assert_eq(config.reserve_classes[0].reserve.kind, GPUCACHE_RESERVE_FRACTION);
    cr_assert_eq(config.reserve_classes[0].reserve.fraction, 0.5);
    cr_assert_str_eq(config.reserve_classes[1].name, "small");
    cr_assert_eq(config.reserve_classes[1].reserve.kind, GPUCACHE_RESERVE_BYTES);
    cr_assert_eq(config.reserve_classes[1].reserve.bytes, 2 * GiB);
    cr_assert_str_eq(config.reserve_classes[2].name, "x-1.y_2");
    config = parse_accepted("expandable_segments_reserve_by_class:[]");
    cr_assert_eq(config.reserve_class_count, 0);
    cr_assert(config.key_from_string[GPUCACHE_KEY_EXPANDABLE_SEGMENTS_RESERVE_BY_CLASS]);
}

Test(config, sixteen_reserve_classes_fit)
{
    char text[512] = "expandable_segments_reserve_by_class:[";
    for (int i = 0; i < GPUCACHE_MAX_RESERVE_CLASSES; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%sc%d:0.5", i ? "," : "", i);
    strcat(text, "]");
    cr_assert_eq(parse_accepted(text).reserve_class_count, GPUCACHE_MAX_RESERVE_CLASSES);
}

Test(config, choices)
{
    cr_assert_eq(parse_accepted("backend:native").backend, GPUCACHE_BACKEND_NATIVE);
    cr_assert_eq(parse_accepted("backend:cudaMallocAsync").backend, GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC);
    cr_assert_eq(parse_accepted("reuse:async").reuse, GPUCACHE_REUSE_ASYNC);
    cr_assert_eq(parse_accepted("reuse:conservative").reuse, GPUCACHE_REUSE_CONSERVATIVE);
    cr_assert_eq(parse_accepted("reuse:relaxed").reuse, GPUCACHE_REUSE_RELAXED);
    cr_assert_eq(parse_accepted("meminfo:cache_as_free").meminfo, GPUCACHE_MEMINFO_CACHE_AS_FREE);
    cr_assert_eq(parse_accepted("meminfo:raw").meminfo, GPUCACHE_MEMINFO_RAW);
    cr_assert_eq(parse_accepted("expandable_segments_size_class_mb:128").expandable_segments_size_class,
                 (uint64_t)128 << 20);
    cr_assert_eq(parse_accepted("expandable_segments_size_class_mb:0").expandable_segments_size_class, 0);
    cr_assert_eq(parse_accepted("stacks:0").stack_frames, 0);
    cr_assert_eq(parse_accepted("stacks:64").stack_frames, 64);
    cr_assert_eq(parse_accepted("").stack_frames, 16, "16 frames unless told otherwise");
}

Test(config, pinned_register_threads_powers_of_two_up_to_128)
{
    cr_assert_eq(parse_accepted("pinned_num_register_threads:1").pinned_num_register_threads, 1);
    cr_assert_eq(parse_accepted("pinned_num_register_threads:8").pinned_num_register_threads, 8);
    cr_assert_eq(parse_accepted("pinned_num_register_threads:128").pinned_num_register_threads, 128);
}

Test(config, output_paths)
{
    struct gpucache_config config = parse_accepted(
        "report:/tmp/report-%p.json,summary:stderr,trace:trace.bin,"
        "trace_csv:/var/tmp/trace 1.csv,snapshot:/tmp/sn%%ap-é.pickle");
    cr_assert_str_eq(config.report_path, "/tmp/report-%p.json");
    cr_assert_str_eq(config.summary_path, "stderr");
    cr_assert_str_eq(config.trace_path, "trace.bin");
    /* Whitespace is dropped, as everywhere in the string. */
    cr_assert_str_eq(config.trace_csv_path, "/var/tmp/trace1.csv");
    cr_assert_str_eq(config.snapshot_path, "/tmp/sn%%ap-é.pickle");
    cr_assert_str_eq(parse_accepted("report:stderr").report_path, "stderr");
}

Test(config, a_path_of_511_bytes_fits)
{
    char text[600] = "trace:";
    memset(text + 6, 'a', 511);
    text[6 + 511] = '\0';
    cr_assert_eq(strlen(parse_accepted(text).trace_path), 511);
}

Test(config, snapshot_signal_by_name_or_number)
{
    cr_assert_eq(parse_accepted("snapshot:s,snapshot_signal:SIGUSR1").snapshot_signal, SIGUSR1);
    cr_assert_eq(parse_accepted("snapshot:s,snapshot_signal:USR2").snapshot_signal, SIGUSR2);
    cr_assert_eq(parse_accepted("snapshot_signal:SIGHUP,snapshot:s").snapshot_signal, SIGHUP);
    cr_assert_eq(parse_accepted("snapshot:s,snapshot_signal:10").snapshot_signal, 10);
    cr_assert_eq(parse_accepted("snapshot:s,snapshot_signal:34").snapshot_signal, 34);
    cr_assert_eq(parse_accepted("snapshot:s,snapshot_signal:64").snapshot_signal, SIGRTMAX);
}

Test(config, signal_names)
{
    char name[32];
    gpucache_config_signal_name(SIGUSR1, name, sizeof name);
    cr_assert_str_eq(name, "SIGUSR1");
    gpucache_config_signal_name(SIGHUP, name, sizeof name);
    cr_assert_str_eq(name, "SIGHUP");
    gpucache_config_signal_name(40, name, sizeof name);
    cr_assert_str_eq(name, "40");
    gpucache_config_signal_name(0, name, sizeof name);
    cr_assert_str_empty(name);
}

Test(config, path_expansion)
{
    char out[64];
    cr_assert_eq(gpucache_config_expand_path("/tmp/r-%p.json", 4242, out, sizeof out), 16);
    cr_assert_str_eq(out, "/tmp/r-4242.json");
    cr_assert_eq(gpucache_config_expand_path("a%%p%p%%", 7, out, sizeof out), 5);
    cr_assert_str_eq(out, "a%p7%");
    cr_assert_eq(gpucache_config_expand_path("plain", 1, out, sizeof out), 5);
    cr_assert_str_eq(out, "plain");
    /* Cut like snprintf, and the needed length still returned. */
    cr_assert_eq(gpucache_config_expand_path("/tmp/%p", 123456, out, 8), 11);
    cr_assert_str_eq(out, "/tmp/12");
}

/* The output-file keys, which replay refuses and snapshots leave out of
 * allocator_settings: exactly these six. */
Test(config, output_keys_are_the_file_keys)
{
    static const char *const outputs[] = {"report", "summary", "trace", "trace_csv", "snapshot",
                                          "snapshot_signal"};
    size_t found = 0;
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        enum gpucache_config_key key = (enum gpucache_config_key)index;
        bool listed = false;
        for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++)
            listed |= strcmp(gpucache_config_key_name(key), outputs[i]) == 0;
        cr_expect_eq(gpucache_config_key_is_output(key), listed, "%s", gpucache_config_key_name(key));
        found += listed;
    }
    cr_expect_eq(found, 6);
}

/* Every rejection, each with its exact one-line message. */
#include "config_test_support.h"

#define BOOLEAN "(expected True or False)"
#define MIB_AT_LEAST "(expected a whole number of MiB, at least large_segment_size_mb (20 by default))"
#define GC_RANGE "(expected a number between 0.0 and 1.0, both excluded)"
#define ROUNDUP "(expected a power of two, or a list [<MiB>:<divisions>,...,>:<divisions>] of powers of two)"
#define RESERVE "(expected a fraction of device memory in (0,1] such as 0.5, or GiB such as 40G)"
#define CLASSES "(expected a list [<class>:<fraction in (0,1] or GiB such as 40G>,...])"
#define PATH "(expected a file path, with %p for the process id; paths cannot contain , : [ or ])"
#define REPORT_PATH "(expected a file path, with %p for the process id; paths cannot contain , : [ or ], or stderr)"
#define SIGNAL "(expected a catchable signal's name such as SIGUSR1 or USR1, or its number)"
#define ITEMS "(expected <name>:<value> items separated by ',')"

/* A rejection of a one-item string: the message quotes the whole of `text`
 * between what was wrong and what is accepted. */
static void expect_item_rejected(const char *text, const char *problem, const char *accepted)
{
    char message[sizeof ((struct gpucache_config_error *)NULL)->message];
    snprintf(message, sizeof message, "%s in '%s' %s", problem, text, accepted);
    expect_rejected(text, message);
}

Test(config, an_unknown_key_points_to_the_key_list)
{
    expect_rejected("foo:1",
        "unknown key in 'foo:1' (expected a known key: 'gpucache config --keys' lists them all)");
}

/* A misspelling gets the nearest key, whatever the case it was typed in. */
Test(config, an_unknown_key_near_a_known_one_suggests_it)
{
    expect_rejected("expandable_segment:True",
        "unknown key in 'expandable_segment:True' (expected a known key: did you mean "
        "'expandable_segments'? 'gpucache config --keys' lists them all)");
    expect_rejected("max_split_size:64",
        "unknown key in 'max_split_size:64' (expected a known key: did you mean "
        "'max_split_size_mb'? 'gpucache config --keys' lists them all)");
    expect_rejected("expandable:True",
        "unknown key in 'expandable:True' (expected a known key: did you mean "
        "'expandable_segments'? 'gpucache config --keys' lists them all)");
    expect_rejected("garbage_colection_treshold:0.5",
        "unknown key in 'garbage_colection_treshold:0.5' (expected a known key: did you mean "
        "'garbage_collection_threshold'? 'gpucache config --keys' lists them all)");
}

Test(config, unknown_key_is_case_sensitive)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse("GPUCACHE_ALLOC_CONF", "Expandable_Segments:True",
                                       &config, &error), -1);
    cr_assert_str_eq(error.message,
                     "gpucache: GPUCACHE_ALLOC_CONF: unknown key in 'Expandable_Segments:True' "
                     "(expected a known key: did you mean 'expandable_segments'? 'gpucache config "
                     "--keys' lists them all)");
}

Test(config, the_message_names_the_variable_it_was_given)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    cr_assert_eq(gpucache_config_parse("PYTORCH_ALLOC_CONF", "expandable_segments:yes",
                                       &config, &error), -1);
    cr_assert_str_eq(error.message, "gpucache: PYTORCH_ALLOC_CONF: not a boolean in "
                                    "'expandable_segments:yes' " BOOLEAN);
}

Test(config, bad_booleans)
{
    expect_item_rejected("expandable_segments:true", "not a boolean", BOOLEAN);
    expect_item_rejected("expandable_segments:1", "not a boolean", BOOLEAN);
    expect_item_rejected("passthrough:FALSE", "not a boolean", BOOLEAN);
    expect_item_rejected("expandable_segments:[True]", "a list is not accepted here", BOOLEAN);
}

Test(config, missing_separators_and_values)
{
    expect_rejected("expandable_segments",
                    "missing ':' after the key in 'expandable_segments' "
                    "(expected expandable_segments:<value>)");
    expect_item_rejected("expandable_segments:", "missing value", BOOLEAN);
    expect_rejected("expandable_segments:,max_split_size_mb:20",
                    "missing value in 'expandable_segments:' " BOOLEAN);
    expect_rejected("max_split_size_mb:20:30",
                    "unexpected ':' after the value in 'max_split_size_mb:20:30' "
                    "(expected ',' between key:value entries)");
    expect_rejected("expandable_segments:True]",
                    "unexpected ']' after the value in 'expandable_segments:True]' "
                    "(expected ',' between key:value entries)");
    expect_item_rejected("expandable_segments::True", "unexpected character instead of a value", BOOLEAN);
}

Test(config, empty_keys)
{
    expect_rejected(",expandable_segments:True",
                    "empty key in ',expandable_segments:True' (expected key:value between ','s)");
    expect_rejected("expandable_segments:True,",
                    "empty key after the last ',' in 'expandable_segments:True,' "
                    "(expected key:value after every ',')");
    expect_rejected("expandable_segments:True,,max_split_size_mb:40",
                    "empty key in 'expandable_segments:True,,max_split_size_mb:40' "
                    "(expected key:value between ','s)");
    expect_rejected(":True", "empty key in ':True' (expected key:value)");
    expect_rejected(",", "empty key in ',' (expected key:value between ','s)");
}

Test(config, duplicate_keys)
{
    expect_rejected("expandable_segments:True,expandable_segments:False",
                    "duplicate key in 'expandable_segments:False' (expected each key at most once)");
    expect_rejected("release_lock_on_cudamalloc:True,release_lock_on_hipmalloc:False",
                    "duplicate key in 'release_lock_on_hipmalloc:False' (expected each key at most once)");
}

Test(config, bad_numbers)
{
    expect_item_rejected("max_split_size_mb:abc", "not a number", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:+20", "not a number", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:0x20", "not a number", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:20MB", "not a number", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:-20", "negative size", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:-99999999999999999999999", "negative size", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:18446744073709551616", "number out of range", MIB_AT_LEAST);
    expect_item_rejected("max_split_size_mb:17592186044416", "number out of range", MIB_AT_LEAST);
}

Test(config, sizes_below_their_minimum)
{
    expect_rejected("max_split_size_mb:19", "max_split_size_mb too small in 'max_split_size_mb:19' "
                                            "(expected at least large_segment_size_mb, 20)");
    expect_rejected("max_split_size_mb:30,large_segment_size_mb:40",
                    "max_split_size_mb too small in 'max_split_size_mb:30' "
                    "(expected at least large_segment_size_mb, 40)");
    expect_rejected("large_segment_size_mb:40,max_non_split_rounding_mb:39",
                    "max_non_split_rounding_mb too small in 'max_non_split_rounding_mb:39' "
                    "(expected at least large_segment_size_mb, 40)");
    expect_rejected("large_segment_size_mb:10", "large_segment_size_mb too small in "
                    "'large_segment_size_mb:10' (expected a whole number of MiB above 10)");
    expect_rejected("pinned_reserve_segment_size_mb:0", "pinned reserve segment size is 0 in "
                    "'pinned_reserve_segment_size_mb:0' (expected a whole number of MiB above 0)");
}

Test(config, fractions_out_of_range)
{
    expect_item_rejected("garbage_collection_threshold:1", "number out of range", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:0", "number out of range", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:-0.5", "number out of range", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:1e999", "number out of range", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:nan", "not a number", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:inf", "not a number", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:0x1p-1", "not a number", GC_RANGE);
    expect_item_rejected("garbage_collection_threshold:0.5.5", "not a number", GC_RANGE);
    expect_rejected("garbage_collection_threshold:0,5", "number out of range in 'garbage_collection_threshold:0' " GC_RANGE);
    expect_rejected("per_process_memory_fraction:-0", "number out of range in "
                    "'per_process_memory_fraction:-0' (expected a number from 0.0 to 1.0)");
    expect_rejected("per_process_memory_fraction:1.5", "number out of range in "
                    "'per_process_memory_fraction:1.5' (expected a number from 0.0 to 1.0)");
}

Test(config, roundup_scalar_must_be_a_power_of_two)
{
    expect_item_rejected("roundup_power2_divisions:3", "not a power of two", ROUNDUP);
    expect_item_rejected("roundup_power2_divisions:0", "not a power of two", ROUNDUP);
    expect_item_rejected("roundup_power2_divisions:4294967296", "number out of range", ROUNDUP);
    expect_item_rejected("roundup_power2_divisions:-4", "negative number", ROUNDUP);
}

Test(config, roundup_list_rejections)
{
    /* An item's error quotes the whole entry, closing bracket included. */
    expect_rejected("roundup_power2_divisions:[256:1,512:3]",
                    "divisions not 0 or a power of two in 'roundup_power2_divisions:[256:1,512:3]' "
                    "(expected divisions of 0 or a power of two up to 2147483648)");
    expect_rejected("roundup_power2_divisions:[300:1]",
                    "boundary not a power of two in 'roundup_power2_divisions:[300:1]' "
                    "(expected a boundary in MiB that is a power of two, or '>')");
    expect_rejected("roundup_power2_divisions:[0:1]",
                    "boundary not a power of two in 'roundup_power2_divisions:[0:1]' "
                    "(expected a boundary in MiB that is a power of two, or '>')");
    expect_rejected("roundup_power2_divisions:[512:1,256:2]",
                    "boundaries not increasing in 'roundup_power2_divisions:[512:1,256:2]' "
                    "(expected boundaries in increasing order)");
    expect_rejected("roundup_power2_divisions:[65536:1,32768:2]",
                    "boundaries not increasing in 'roundup_power2_divisions:[65536:1,32768:2]' "
                    "(expected boundaries in increasing order)");
    expect_rejected("roundup_power2_divisions:[>:8,512:2]",
                    "item after '>' in 'roundup_power2_divisions:[>:8,512:2]' "
                    "(expected '>:<divisions>' as the last item)");
    expect_rejected("roundup_power2_divisions:[256 1]",
                    "missing ':' in a list item in 'roundup_power2_divisions:[2561]' " ITEMS);
    expect_rejected("roundup_power2_divisions:[256:1,,512:2]",
                    "empty list item in 'roundup_power2_divisions:[256:1,,' " ITEMS);
    expect_rejected("roundup_power2_divisions:[256:1:2]",
                    "missing ',' between list items in 'roundup_power2_divisions:[256:1:' " ITEMS);
    expect_item_rejected("roundup_power2_divisions:[256:]", "missing value in a list item", ROUNDUP);
    expect_rejected("roundup_power2_divisions:[256:1]x",
                    "unexpected text after the value in 'roundup_power2_divisions:[256:1]x' "
                    "(expected ',' between key:value entries)");
}

Test(config, unterminated_lists)
{
    const char *texts[] = {
        "roundup_power2_divisions:[256:1,512:2",
        "roundup_power2_divisions:[256:1,512:",
        "roundup_power2_divisions:[256:1,512",
        "roundup_power2_divisions:[256:1,",
        "roundup_power2_divisions:[",
    };
    char message[256];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        snprintf(message, sizeof message,
                 "unterminated list in '%s' (expected ']' to close the list)", texts[i]);
        expect_rejected(texts[i], message);
    }
}

Test(config, reserve_rejections_are_errors_not_warnings)
{
    expect_item_rejected("expandable_segments_reserve:0", "reserve out of range", RESERVE);
    expect_item_rejected("expandable_segments_reserve:1.5", "reserve out of range", RESERVE);
    expect_item_rejected("expandable_segments_reserve:0G", "reserve out of range", RESERVE);
    expect_item_rejected("expandable_segments_reserve:-1G", "reserve out of range", RESERVE);
    expect_item_rejected("expandable_segments_reserve:2000000000G", "reserve out of range", RESERVE);
    expect_item_rejected("expandable_segments_reserve:abc", "not a fraction or a size", RESERVE);
    expect_item_rejected("expandable_segments_reserve:40GB", "not a fraction or a size", RESERVE);
    expect_item_rejected("expandable_segments_reserve:G", "not a fraction or a size", RESERVE);
}

Test(config, reserve_class_rejections)
{
    expect_item_rejected("expandable_segments_reserve_by_class:0.5", "not a list", CLASSES);
    expect_item_rejected("expandable_segments_reserve_by_class:", "missing value", CLASSES);
    expect_rejected("expandable_segments_reserve_by_class:[a:0.5,a:1]",
                    "duplicate class in 'expandable_segments_reserve_by_class:[a:0.5,a:1]' "
                    "(expected each class at most once)");
    expect_rejected("expandable_segments_reserve_by_class:[a/b:0.5]",
                    "bad class name in 'expandable_segments_reserve_by_class:[a/b:0.5]' "
                    "(expected class names of at most 31 letters, digits, '_', '-' or '.')");
    expect_rejected("expandable_segments_reserve_by_class:[abcdefghijabcdefghijabcdefghij12:0.5]",
                    "bad class name in 'expandable_segments_reserve_by_class:[abcdefghijabcdefghijabcdefghij12:0.5]' "
                    "(expected class names of at most 31 letters, digits, '_', '-' or '.')");
    expect_rejected("expandable_segments_reserve_by_class:[a:2]",
                    "reserve out of range in 'expandable_segments_reserve_by_class:[a:2]' " CLASSES);
    char text[512] = "expandable_segments_reserve_by_class:[";
    for (int i = 0; i <= GPUCACHE_MAX_RESERVE_CLASSES; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%sc%d:1", i ? "," : "", i);
    strcat(text, "]");
    struct gpucache_config config;
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse(NULL, text, &config, &error), -1);
    cr_assert(strstr(error.message, "too many classes in '") != NULL, "%s", error.message);
    cr_assert(strstr(error.message, ",c16:1]' (expected at most 16 classes)") != NULL, "%s", error.message);
}

Test(config, unknown_choices)
{
    expect_rejected("backend:hipMallocAsync", "unknown value in 'backend:hipMallocAsync' "
                    "(expected native or cudaMallocAsync)");
    expect_rejected("reuse:fast", "unknown value in 'reuse:fast' (expected async, conservative or relaxed)");
    expect_rejected("meminfo:free", "unknown value in 'meminfo:free' (expected cache_as_free or raw)");
    expect_rejected("expandable_segments_size_class_mb:64M",
                    "not a number in 'expandable_segments_size_class_mb:64M' "
                    "(expected a whole number of MiB, 0 for one class)");
    expect_rejected("stacks:65", "number out of range in 'stacks:65' "
                    "(expected a whole number of frames from 0 to 64, 0 for none)");
    expect_rejected("stacks:-1", "negative number in 'stacks:-1' "
                    "(expected a whole number of frames from 0 to 64, 0 for none)");
}

Test(config, register_threads)
{
    expect_rejected("pinned_num_register_threads:3", "not a power of two in "
                    "'pinned_num_register_threads:3' (expected a power of two from 1 to 128)");
    expect_rejected("pinned_num_register_threads:0", "not a power of two in "
                    "'pinned_num_register_threads:0' (expected a power of two from 1 to 128)");
    expect_rejected("pinned_num_register_threads:256", "number out of range in "
                    "'pinned_num_register_threads:256' (expected a power of two from 1 to 128)");
}

Test(config, paths_cannot_hold_separators)
{
    expect_item_rejected("trace:C:\\tmp\\trace", "separator character in the path", PATH);
    expect_item_rejected("report:http://host/x", "separator character in the path", REPORT_PATH);
    expect_item_rejected("trace:[x]", "separator character in the path", PATH);
    expect_rejected("report:/tmp/a,b.json,trace:t",
                    "',' in a path in 'report:/tmp/a,b.json' "
                    "(expected a path without , : [ or ], which separate the configuration)");
}

Test(config, path_rejections)
{
    expect_item_rejected("trace:stderr", "stderr is only accepted for report and summary", PATH);
    expect_rejected("report:/tmp/r%d.json", "unknown '%' escape in the path (use %p for the pid, %% for %) "
                    "in 'report:/tmp/r%d.json' " REPORT_PATH);
    expect_rejected("report:/tmp/r%", "unknown '%' escape in the path (use %p for the pid, %% for %) "
                    "in 'report:/tmp/r%' " REPORT_PATH);
    expect_rejected("trace:/tmp/\x01x", "control character in the path in 'trace:/tmp/\\x01x' " PATH);
    expect_rejected("trace:/tmp/\xff", "path is not UTF-8 in 'trace:/tmp/\\xff' " PATH);
    expect_rejected("report:/tmp/a.json,summary:/tmp/a.json",
                    "path already used by another output in 'summary:/tmp/a.json' "
                    "(expected a different path from report's)");
    expect_item_rejected("trace:", "missing value", PATH);
}

Test(config, paths_longer_than_511_bytes)
{
    char text[1200] = "trace:";
    memset(text + 6, 'a', 1100);
    text[6 + 1100] = '\0';
    struct gpucache_config config;
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse(NULL, text, &config, &error), -1);
    cr_assert(strncmp(error.message, "gpucache: GPUCACHE_ALLOC_CONF: path longer than 511 bytes "
                                     "in 'trace:aaaa", 70) == 0, "%s", error.message);
    /* The quoted text keeps its beginning and its end. */
    cr_assert(strstr(error.message, "aaa...aaa") != NULL, "%s", error.message);
    cr_assert(strstr(error.message, "' " PATH) != NULL, "%s", error.message);
    cr_assert_lt(strlen(error.message), 400);

    text[6 + 512] = '\0';
    cr_assert_eq(gpucache_config_parse(NULL, text, &config, &error), -1);
    cr_assert(strstr(error.message, "path longer than 511 bytes") != NULL);
}

Test(config, snapshot_signal_rejections)
{
    expect_rejected("snapshot_signal:SIGUSR1", "snapshot_signal without snapshot in "
                    "'snapshot_signal:SIGUSR1' (expected snapshot:<path> in the same string)");
    expect_rejected("snapshot_signal:SIGKILL,snapshot:s", "signal not usable for snapshots in 'snapshot_signal:SIGKILL' " SIGNAL);
    expect_rejected("snapshot_signal:SEGV,snapshot:s", "signal not usable for snapshots in 'snapshot_signal:SEGV' " SIGNAL);
    expect_rejected("snapshot_signal:32,snapshot:s", "signal not usable for snapshots in 'snapshot_signal:32' " SIGNAL);
    expect_rejected("snapshot_signal:0,snapshot:s", "signal not usable for snapshots in 'snapshot_signal:0' " SIGNAL);
    expect_rejected("snapshot_signal:65,snapshot:s", "signal not usable for snapshots in 'snapshot_signal:65' " SIGNAL);
    expect_rejected("snapshot_signal:FOO,snapshot:s", "unknown signal in 'snapshot_signal:FOO' " SIGNAL);
    expect_rejected("snapshot_signal:sigusr1,snapshot:s", "unknown signal in 'snapshot_signal:sigusr1' " SIGNAL);
}

Test(config, control_characters_are_escaped_in_messages)
{
    expect_rejected("foo\x01:1", "unknown key in 'foo\\x01:1' (expected a known key: "
                                "'gpucache config --keys' lists them all)");
    /* Whitespace, newlines included, never reaches the one-line message. */
    expect_rejected("expandable_segments:\n ye\ts\r\n", "not a boolean in 'expandable_segments:yes' " BOOLEAN);
}

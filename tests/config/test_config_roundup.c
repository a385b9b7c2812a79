/* roundup_power2_divisions: the bucket table both forms fill, and the lookup
 * the allocator's rounding uses. Bucket i holds [2^i MiB, 2^(i+1) MiB). */
#include "config_test_support.h"

static void assert_table(const struct gpucache_config *config, const uint32_t expected[16])
{
    for (int i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        cr_assert_eq(config->roundup_power2_divisions[i], expected[i],
                     "bucket %d: %u, expected %u", i, config->roundup_power2_divisions[i],
                     expected[i]);
}

static void assert_table_of(const char *text, const uint32_t expected[16])
{
    struct gpucache_config config = parse_accepted(text);
    assert_table(&config, expected);
}

Test(config, roundup_scalar_fills_every_bucket)
{
    static const uint32_t expected[16] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    struct gpucache_config config = parse_accepted("roundup_power2_divisions:4");
    assert_table(&config, expected);
    cr_assert(config.key_from_string[GPUCACHE_KEY_ROUNDUP_POWER2_DIVISIONS]);
    cr_assert_eq(parse_accepted("roundup_power2_divisions:1").roundup_power2_divisions[15], 1);
    cr_assert_eq(parse_accepted("roundup_power2_divisions:2147483648").roundup_power2_divisions[0],
                 2147483648u);
}

/* A list with a catch-all, newest PyTorch semantics: the first
 * boundary also fills the buckets below it, and ">" fills those after the
 * last boundary. */
Test(config, roundup_list_worked_example)
{
    static const uint32_t expected[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8};
    assert_table_of("roundup_power2_divisions:[256:1,512:2,>:8]", expected);
}

Test(config, roundup_list_without_remainder_leaves_the_rest_at_zero)
{
    static const uint32_t expected[16] = {4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 16, 0, 0, 0, 0, 0};
    assert_table_of("roundup_power2_divisions:[64:4,1024:16]", expected);
}

Test(config, roundup_list_remainder_alone_skips_bucket_zero_as_pytorch_does)
{
    static const uint32_t expected[16] = {0, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
    assert_table_of("roundup_power2_divisions:[>:8]", expected);
}

Test(config, roundup_list_boundaries_clamp_to_the_last_bucket)
{
    static const uint32_t expected[16] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
    assert_table_of("roundup_power2_divisions:[65536:2]", expected);
    static const uint32_t first_only[16] = {4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_table_of("roundup_power2_divisions:[1:4]", first_only);
}

Test(config, roundup_list_zero_disables_and_empty_list_is_all_zero)
{
    static const uint32_t expected[16] = {4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_table_of("roundup_power2_divisions:[64:4,>:0]", expected);
    assert_table_of("roundup_power2_divisions:[]", (uint32_t[16]){0});
}

Test(config, roundup_divisions_lookup_uses_floor_log2_of_mebibytes)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    for (uint32_t i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        config.roundup_power2_divisions[i] = 100 + i;
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 0), 100);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 512), 100);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, MiB - 1), 100);
    for (uint32_t i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++) {
        uint64_t lower = MiB << i;
        cr_assert_eq(gpucache_config_roundup_divisions(&config, lower), 100 + i, "at 2^%u MiB", i);
        cr_assert_eq(gpucache_config_roundup_divisions(&config, 2 * lower - 1), 100 + i,
                     "below 2^%u MiB", i + 1);
    }
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 64 * GiB), 115);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, UINT64_MAX), 115);
}

Test(config, roundup_divisions_lookup_on_the_worked_example)
{
    struct gpucache_config config = parse_accepted("roundup_power2_divisions:[256:1,512:2,>:8]");
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 1200), 1);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 256 * MiB), 1);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 512 * MiB - 1), 1);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 514 * MiB), 2);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, GiB - 1), 2);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, GiB), 8);
    cr_assert_eq(gpucache_config_roundup_divisions(&config, 40 * GiB), 8);
}

/* Boundaries past the last bucket (32768 MiB) land in it, the last one
 * given winning, as PyTorch does: increasing boundaries are never refused
 * for being large. */
Test(config, roundup_boundaries_past_the_last_bucket_land_in_it)
{
    static const uint32_t expected[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4};
    assert_table_of("roundup_power2_divisions:[16384:1,32768:2,65536:4]", expected);
    static const uint32_t beyond[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2};
    assert_table_of("roundup_power2_divisions:[32768:1,65536:2]", beyond);
}

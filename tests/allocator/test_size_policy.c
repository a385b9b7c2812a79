/* Request rounding (plain, scalar and list divisions), pool choice, segment
 * sizes and PyTorch's split thresholds. */
#include "allocator_fixture.h"
#include "size_policy.h"

static struct gpucache_config defaults(void)
{
    struct gpucache_config config;
    gpucache_config_defaults(&config);
    return config;
}

static struct gpucache_config parsed(const char *text)
{
    struct gpucache_config config = defaults();
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse(NULL, text, &config, &error), 0, "%s", error.message);
    return config;
}

Test(size_policy, rounds_to_512_minimum_and_multiple)
{
    struct gpucache_config config = defaults();
    cr_assert_eq(size_policy_round(&config, 1), 512);
    cr_assert_eq(size_policy_round(&config, 512), 512);
    cr_assert_eq(size_policy_round(&config, 513), 1024);
    cr_assert_eq(size_policy_round(&config, 300 * KiB + 1), 300 * KiB + 512);
    cr_assert_eq(size_policy_round(&config, 5 * MiB + 1), 5 * MiB + 512);
}

Test(size_policy, scalar_divisions_round_to_power_of_two_steps)
{
    struct gpucache_config config = parsed("roundup_power2_divisions:4");
    /* 4 divisions between 4 MiB and 8 MiB: steps of 1 MiB. */
    cr_assert_eq(size_policy_round(&config, 5 * MiB + 1), 6 * MiB);
    cr_assert_eq(size_policy_round(&config, 4 * MiB), 4 * MiB, "a power of two stays");
    /* Small requests use bucket 0: between 256 KiB and 512 KiB steps are 64 KiB. */
    cr_assert_eq(size_policy_round(&config, 300 * KiB + 1), 320 * KiB);
    /* Not above 512 x divisions: plain 512 rounding. */
    cr_assert_eq(size_policy_round(&config, 1200), 1536);
}

Test(size_policy, a_division_count_of_one_does_not_round)
{
    struct gpucache_config config = parsed("roundup_power2_divisions:[1:1,>:1]");
    cr_assert_eq(size_policy_round(&config, 5 * MiB + 1), 5 * MiB + 512);
}

Test(size_policy, list_divisions_apply_per_size_bucket)
{
    /* Buckets 0-8 (below 512 MiB) = 1, 9 = 2, 10-15 (from 1 GiB) = 8. */
    struct gpucache_config config = parsed("roundup_power2_divisions:[256:1,512:2,>:8]");
    cr_assert_eq(size_policy_round(&config, 300 * MiB + 1), 300 * MiB + 512);
    cr_assert_eq(size_policy_round(&config, 514 * MiB), 768 * MiB);
    cr_assert_eq(size_policy_round(&config, 1536 * MiB + 1), 1664 * MiB);
}

Test(size_policy, pools_split_at_1_mib)
{
    struct gpucache_config config = defaults();
    cr_assert(size_policy_is_small(size_policy_round(&config, 1 * MiB)));
    cr_assert_not(size_policy_is_small(size_policy_round(&config, 1 * MiB + 1)));
}

Test(size_policy, segment_sizes)
{
    struct gpucache_config config = defaults();
    cr_assert_eq(size_policy_segment_size(&config, 512), 2 * MiB);
    cr_assert_eq(size_policy_segment_size(&config, 1 * MiB), 2 * MiB);
    cr_assert_eq(size_policy_segment_size(&config, 1 * MiB + 512), 20 * MiB);
    cr_assert_eq(size_policy_segment_size(&config, 10 * MiB - 512), 20 * MiB);
    cr_assert_eq(size_policy_segment_size(&config, 10 * MiB), 10 * MiB);
    cr_assert_eq(size_policy_segment_size(&config, 11 * MiB), 12 * MiB);
    config.large_segment_size = 32 * MiB;
    cr_assert_eq(size_policy_segment_size(&config, 5 * MiB), 32 * MiB);
}

Test(size_policy, split_thresholds)
{
    struct gpucache_config config = defaults();
    /* Small pool: any remainder of at least 512 bytes. */
    cr_assert(size_policy_should_split(&config, true, false, 2 * MiB, 2 * MiB - 512));
    cr_assert_not(size_policy_should_split(&config, true, false, 1024, 1024));
    /* Large pool: only a remainder above 1 MiB. */
    cr_assert_not(size_policy_should_split(&config, false, false, 20 * MiB, 19 * MiB));
    cr_assert(size_policy_should_split(&config, false, false, 20 * MiB, 19 * MiB - 512));
    /* Expandable segments split like the small pool. */
    cr_assert(size_policy_should_split(&config, false, true, 20 * MiB, 20 * MiB - 512));
    /* Oversize requests are never split. */
    config.max_split_size = 40 * MiB;
    cr_assert_not(size_policy_should_split(&config, false, false, 100 * MiB, 40 * MiB));
    cr_assert(size_policy_should_split(&config, false, false, 100 * MiB, 38 * MiB));
}

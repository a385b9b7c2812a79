/* Page and reservation sizes, and the message for requests too large. */
#include <criterion/criterion.h>
#include <string.h>

#include "vmm_test_driver.h"
#include "gpucache_config.h"
#include "gpucache_expandable_segment.h"

#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

static struct gpucache_config config_with_large_segment(size_t large_segment_size)
{
    struct gpucache_config config;
    memset(&config, 0, sizeof config);
    config.large_segment_size = large_segment_size;
    config.expandable_segments = true;
    return config;
}

Test(vmm_geometry, page_size_is_2_mib_rounded_up_to_the_granularity)
{
    cr_expect_eq(gpucache_expandable_page_size(2 * MiB), 2 * MiB);
    cr_expect_eq(gpucache_expandable_page_size(MiB), 2 * MiB);
    cr_expect_eq(gpucache_expandable_page_size(64 * 1024), 2 * MiB);
    /* A granularity above 2 MiB: the page is one granule, the next multiple. */
    cr_expect_eq(gpucache_expandable_page_size(3 * MiB), 3 * MiB);
    cr_expect_eq(gpucache_expandable_page_size(8 * MiB), 8 * MiB);
    cr_expect_eq(gpucache_expandable_page_size(512 * MiB), 512 * MiB);
    cr_expect_eq(gpucache_expandable_page_size(0), 2 * MiB, "a driver that reports none");
}

Test(vmm_geometry, growth_size_is_one_page_in_the_small_pool)
{
    struct gpucache_config config = config_with_large_segment(20 * MiB);
    cr_expect_eq(gpucache_expandable_growth_size(&config, true, 2 * MiB), 2 * MiB);
    cr_expect_eq(gpucache_expandable_growth_size(&config, true, 8 * MiB), 8 * MiB);
}

Test(vmm_geometry, growth_size_is_a_large_segment_in_whole_pages)
{
    struct gpucache_config config = config_with_large_segment(20 * MiB);
    cr_expect_eq(gpucache_expandable_growth_size(&config, false, 2 * MiB), 20 * MiB);
    /* 20 MiB in 8 MiB pages: 2.5 pages, so 3. */
    cr_expect_eq(gpucache_expandable_growth_size(&config, false, 8 * MiB), 24 * MiB);
    config.large_segment_size = 3 * MiB;
    cr_expect_eq(gpucache_expandable_growth_size(&config, false, 2 * MiB), 4 * MiB);
    config.large_segment_size = 1 * MiB; /* less than a page: one page */
    cr_expect_eq(gpucache_expandable_growth_size(&config, false, 2 * MiB), 2 * MiB);
}

Test(vmm_geometry, default_reserve_is_nine_eighths_in_whole_pages)
{
    /* 80 GiB and 20 MiB pages: PyTorch reserves 4,608 pages = 90 GiB. */
    cr_expect_eq(gpucache_expandable_reserve_size(NULL, 80 * GiB, 20 * MiB), 90 * GiB);
    struct gpucache_reserve reserve = {.kind = GPUCACHE_RESERVE_DEFAULT};
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 2 * MiB), 90 * GiB);
    /* 100 MiB * 9/8 = 112.5 MiB, rounded up to 6 pages of 20 MiB. */
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 100 * MiB, 20 * MiB), 120 * MiB);
}

Test(vmm_geometry, fraction_reserve_shrinks_and_rounds_up)
{
    struct gpucache_reserve reserve = {.kind = GPUCACHE_RESERVE_FRACTION, .fraction = 0.25};
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 20 * GiB);
    reserve.fraction = 0.1; /* 8 GiB = 409.6 pages -> 410 */
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 410 * 20 * MiB);
    reserve.fraction = 1e-9; /* below one page: one page */
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 20 * MiB);
}

Test(vmm_geometry, reserve_larger_than_nine_eighths_is_capped)
{
    struct gpucache_reserve reserve = {.kind = GPUCACHE_RESERVE_FRACTION, .fraction = 4.0};
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 90 * GiB);
    reserve = (struct gpucache_reserve){.kind = GPUCACHE_RESERVE_BYTES, .bytes = UINT64_MAX};
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 90 * GiB);
    reserve.bytes = 90 * GiB + 1; /* just above the cap still gives the cap */
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 90 * GiB);
}

Test(vmm_geometry, absolute_reserve_in_whole_pages)
{
    struct gpucache_reserve reserve = {.kind = GPUCACHE_RESERVE_BYTES, .bytes = 1 * GiB};
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 2 * MiB), 1 * GiB);
    reserve.bytes = 1 * GiB + 1;
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 2 * MiB), 1 * GiB + 2 * MiB);
    reserve.bytes = 0; /* never zero pages */
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 2 * MiB), 2 * MiB);
    reserve.bytes = 1;
    cr_expect_eq(gpucache_expandable_reserve_size(&reserve, 80 * GiB, 20 * MiB), 20 * MiB);
}

Test(vmm_geometry, geometry_asks_the_driver)
{
    struct vmm_test_driver test_driver;
    vmm_test_driver_init(&test_driver, 8 * GiB, 4 * MiB);
    struct gpucache_config config = config_with_large_segment(20 * MiB);
    config.expandable_segments_reserve =
        (struct gpucache_reserve){.kind = GPUCACHE_RESERVE_FRACTION, .fraction = 0.5};
    size_t page = 0, growth = 0, reserve = 0;
    cr_assert_eq(gpucache_expandable_geometry(&test_driver.driver, &config, 0, false, &page,
                                              &growth, &reserve),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(page, 4 * MiB, "2 MiB rounded to the 4 MiB granularity, in both pools");
    cr_expect_eq(growth, 20 * MiB, "five pages of 4 MiB");
    cr_expect_eq(reserve, 4 * GiB);
    cr_assert_eq(gpucache_expandable_geometry(&test_driver.driver, &config, 0, true, &page,
                                              &growth, &reserve),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(page, 4 * MiB);
    cr_expect_eq(growth, 4 * MiB, "one page");
    cr_expect_eq(reserve, 4 * GiB);
    /* 6 MiB granularity: 20 MiB is 3.33 pages of 6 MiB, so 4; 4 GiB is
     * 682.67 pages, so 683. */
    test_driver.granularity = 6 * MiB;
    cr_assert_eq(gpucache_expandable_geometry(&test_driver.driver, &config, 0, false, &page,
                                              &growth, &reserve),
                 GPUCACHE_SUCCESS);
    cr_expect_eq(page, 6 * MiB);
    cr_expect_eq(growth, 24 * MiB);
    cr_expect_eq(reserve, 683 * 6 * MiB);
    vmm_test_driver_fail_call(&test_driver, VMM_TEST_GRANULARITY, 1,
                                GPUCACHE_ERROR_INVALID_VALUE);
    cr_expect_eq(gpucache_expandable_geometry(&test_driver.driver, &config, 0, true, &page,
                                              &growth, &reserve),
                 GPUCACHE_ERROR_INVALID_VALUE);
    vmm_test_driver_fini(&test_driver);
}

Test(vmm_geometry, too_large_message_names_the_key)
{
    cr_expect(gpucache_expandable_fits(90 * GiB, 90 * GiB));
    cr_expect_not(gpucache_expandable_fits(90 * GiB, 90 * GiB + 1));
    char message[512];
    size_t length = gpucache_expandable_too_large_message(message, sizeof message, 1,
                                                          100 * GiB, 90 * GiB);
    cr_expect_eq(length, strlen(message));
    cr_expect_null(strchr(message, '\n'), "one line");
    cr_expect(strstr(message, "expandable_segments_reserve") != NULL, "%s", message);
    cr_expect(strstr(message, "100.00 GiB") != NULL, "%s", message);
    cr_expect(strstr(message, "90.00 GiB") != NULL, "%s", message);
    cr_expect(strstr(message, "device 1") != NULL, "%s", message);
    char tiny[8];
    cr_expect_eq(gpucache_expandable_too_large_message(tiny, sizeof tiny, 1, 100 * GiB, 90 * GiB),
                 length, "reports the length needed, like snprintf");
}

/* The parser and the page manager agree on what a reserve string means. */
static size_t reserve_for(const char *text, size_t total, bool small_pool)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    cr_assert_eq(gpucache_config_parse("GPUCACHE_ALLOC_CONF", text, &config, &error), 0, "%s",
                 error.message);
    struct vmm_test_driver test_driver;
    vmm_test_driver_init(&test_driver, total, 2 * MiB);
    size_t page = 0, growth = 0, reserve = 0;
    cr_assert_eq(gpucache_expandable_geometry(&test_driver.driver, &config, 0, small_pool, &page,
                                              &growth, &reserve),
                 GPUCACHE_SUCCESS);
    vmm_test_driver_fini(&test_driver);
    return reserve;
}

Test(vmm_geometry, configuration_strings_size_the_reservation)
{
    cr_expect_eq(reserve_for("expandable_segments:True", 80 * GiB, false), 90 * GiB);
    cr_expect_eq(reserve_for("expandable_segments:True,expandable_segments_reserve:0.25",
                             80 * GiB, false),
                 20 * GiB);
    cr_expect_eq(reserve_for("expandable_segments:True,expandable_segments_reserve:40G",
                             80 * GiB, true),
                 40 * GiB);
    cr_expect_eq(reserve_for("expandable_segments:True,expandable_segments_reserve:200G",
                             80 * GiB, true),
                 90 * GiB, "capped at 9/8 of device memory");
    cr_expect_eq(reserve_for("expandable_segments:True,large_segment_size_mb:64,"
                             "expandable_segments_reserve:1G",
                             80 * GiB, false),
                 1 * GiB, "1 GiB in 2 MiB pages, whatever the large segment size");
}

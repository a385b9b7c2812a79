/* How much an expandable segment maps when it grows, through the allocator's
 * public API on the accounting driver: at least large_segment_size_mb in one
 * handle, only what the request lacks when that minimum cannot be had, one
 * handle per unmapped run, and handles released only whole. */
#include <criterion/criterion.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_config.h"

#define MiB ((size_t)1 << 20)

static struct accounting_driver *device;
static struct gpucache_config config;
static struct gpucache_allocator *allocator;

static void prepare_device(uint64_t capacity)
{
    device = accounting_driver_create(capacity, 2 * MiB);
    cr_assert_not_null(device);
    gpucache_config_defaults(&config);
    config.expandable_segments = true;
}

static void start(void)
{
    allocator = gpucache_allocator_create(&config, accounting_driver_interface(device), 0);
    cr_assert_not_null(allocator);
}

static void finish(void)
{
    if (allocator != NULL) {
        char why[256];
        cr_expect(gpucache_allocator_check(allocator, why, sizeof why), "%s", why);
        gpucache_allocator_destroy(allocator);
        allocator = NULL;
    }
    cr_expect_eq(accounting_driver_used_bytes(device), 0, "device memory or a handle leaked");
    accounting_driver_destroy(device);
}

static void prepare(void)
{
    prepare_device((uint64_t)1 << 30);
}

TestSuite(vmm_growth, .init = prepare, .fini = finish);

static uint64_t allocate(size_t size)
{
    uint64_t address = 0;
    cr_assert_eq(gpucache_allocator_malloc(allocator, size, 0, &address), GPUCACHE_SUCCESS,
                 "allocating %zu bytes", size);
    return address;
}

/* Stream-ordered on the block's own stream: reusable there at once. */
static void release(uint64_t address)
{
    cr_assert_eq(gpucache_allocator_free(allocator, address, GPUCACHE_FREE_STREAM_ORDERED, 0),
                 GPUCACHE_SUCCESS);
}

static struct gpucache_stats stats(void)
{
    struct gpucache_stats taken;
    gpucache_allocator_get_stats(allocator, &taken);
    return taken;
}

static int64_t reserved(void)
{
    return stats().reserved_bytes[GPUCACHE_STAT_ALL].current;
}

static unsigned long handles_created(void)
{
    return accounting_driver_calls(device, ACCOUNTING_PAGE_CREATE);
}

Test(vmm_growth, a_small_request_maps_the_least_growth_in_one_handle)
{
    start();
    uint64_t first = allocate(2 * MiB);
    cr_expect_eq(reserved(), 20 * MiB, "large_segment_size_mb is the least growth");
    cr_expect_eq(handles_created(), 1);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_MAP), 1);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_SET_ACCESS), 1);
    cr_expect_eq(stats().num_device_alloc, 1);
    /* The slack serves the next requests without the driver. */
    for (int i = 1; i < 10; i++)
        cr_expect_eq(allocate(2 * MiB), first + (uint64_t)i * 2 * MiB);
    cr_expect_eq(handles_created(), 1);
}

Test(vmm_growth, a_larger_request_maps_what_it_lacks_rounded_to_pages)
{
    start();
    allocate(22 * MiB);
    cr_expect_eq(reserved(), 22 * MiB, "2 MiB pages: not two 20 MiB pages");
    allocate(15 * MiB); /* 0 free: lacks 15, below the least growth of 20 */
    cr_expect_eq(reserved(), 42 * MiB);
    allocate(30 * MiB); /* 5 free: lacks 25, rounded to 26 */
    cr_expect_eq(reserved(), 68 * MiB);
    cr_expect_eq(handles_created(), 3);
    cr_expect_eq(stats().num_device_alloc, 3);
}

Test(vmm_growth, the_least_growth_follows_large_segment_size)
{
    config.large_segment_size = 32 * MiB;
    start();
    allocate(2 * MiB);
    cr_expect_eq(reserved(), 32 * MiB);
}

Test(vmm_growth, the_small_pool_grows_by_one_page)
{
    start();
    allocate(512 * 1024);
    cr_expect_eq(stats().reserved_bytes[GPUCACHE_STAT_SMALL_POOL].current, 2 * MiB);
}

Test(vmm_growth, a_short_device_gets_only_what_the_request_lacks)
{
    /* Replaces the suite's device: 12 MiB cannot hold the 20 MiB growth. */
    accounting_driver_destroy(device);
    prepare_device(12 * MiB);
    start();
    uint64_t first = allocate(4 * MiB);
    cr_expect_eq(reserved(), 4 * MiB, "the least growth is an economy, never an OOM");
    allocate(6 * MiB);
    cr_expect_eq(reserved(), 10 * MiB);
    release(first);
}

Test(vmm_growth, the_slack_stays_inside_the_memory_fraction)
{
    /* 1 GiB device: the fraction allows 36 MiB. */
    config.per_process_memory_fraction = 36.0 / 1024.0;
    start();
    allocate(16 * MiB); /* 20 mapped, 4 free */
    allocate(12 * MiB); /* lacks 8; the least growth would reach 40 */
    cr_expect_eq(reserved(), 36 * MiB, "slack cut to the 8 MiB the fraction leaves");
    cr_expect_eq(handles_created(), 2);
}

Test(vmm_growth, a_handle_goes_back_only_when_wholly_free)
{
    start();
    uint64_t first = allocate(2 * MiB);
    uint64_t second = allocate(2 * MiB); /* same 20 MiB handle */
    release(first);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 20 * MiB, "the handle still holds a live block");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_UNMAP), 0);
    release(second);
    gpucache_allocator_empty_cache(allocator);
    cr_expect_eq(reserved(), 0);
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_UNMAP), 1, "one unmap per handle");
    cr_expect_eq(accounting_driver_calls(device, ACCOUNTING_PAGE_RELEASE), 1);
    cr_expect_eq(stats().num_device_free, 1);
}

Test(vmm_growth, a_growth_over_a_hole_and_the_tail_makes_a_handle_per_run)
{
    start();
    uint64_t first = allocate(22 * MiB);  /* handle [0, 22) */
    uint64_t second = allocate(22 * MiB); /* handle [22, 44) */
    uint64_t third = allocate(2 * MiB);   /* handle [44, 64) */
    release(first);
    release(second);
    gpucache_allocator_empty_cache(allocator); /* [0, 44) unmapped again */
    cr_expect_eq(reserved(), 20 * MiB);
    release(third); /* [44, 64) free but mapped */
    unsigned long before = handles_created();
    int64_t allocations_before = stats().num_device_alloc;
    /* The lowest run: [0, 44) unmapped, [44, 64) free, the tail from 64. */
    cr_expect_eq(allocate(70 * MiB), first);
    cr_expect_eq(handles_created() - before, 2, "one handle for [0, 44), one for [64, 70)");
    cr_expect_eq(stats().num_device_alloc - allocations_before, 2);
    cr_expect_eq(reserved(), 70 * MiB);
}

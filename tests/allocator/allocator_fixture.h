/* Shared set-up for the allocator suites: a configuration, an accounting
 * driver as the device, and an allocator on it, with assertion helpers. */
#ifndef GPUCACHE_TEST_ALLOCATOR_FIXTURE_H
#define GPUCACHE_TEST_ALLOCATOR_FIXTURE_H

#include <criterion/criterion.h>

#include "accounting_driver.h"
#include "gpucache_allocator.h"
#include "gpucache_allocator_testing.h"
#include "gpucache_config.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define STREAM_A ((gpucache_stream)0xA000)
#define STREAM_B ((gpucache_stream)0xB000)
#define STREAM_C ((gpucache_stream)0xC000)

struct fixture {
    struct gpucache_config config;
    struct accounting_driver *driver;
    struct gpucache_allocator *allocator;
};

/* Call fixture_defaults, adjust f->config (fixture_configure), then
 * fixture_open. */
static inline void fixture_defaults(struct fixture *f)
{
    gpucache_config_defaults(&f->config);
#ifdef GPUCACHE_TEST_EXPANDABLE_SEGMENTS
    /* tests/vmm/ builds some of these suites again over expandable segments. */
    f->config.expandable_segments = true;
#endif
#ifdef GPUCACHE_TEST_EXPANDABLE_SIZE_CLASS
    /* ... and again with a size class that random large requests (1-64 MiB)
     * fall on both sides of. */
    f->config.expandable_segments_size_class = (uint64_t)32 << 20;
#endif
#ifdef GPUCACHE_TEST_EXPANDABLE_PAGE_HANDLES
    /* ... with a handle per page, so that nearly every growth moves some. */
    f->config.expandable_segments_handles = GPUCACHE_HANDLES_PAGE;
#endif
#ifdef GPUCACHE_TEST_EXPANDABLE_NO_STITCH
    /* ... and as PyTorch has them: one handle per growth, none moved. */
    f->config.expandable_segments_stitch = false;
    f->config.expandable_segments_handles = GPUCACHE_HANDLES_GROWTH;
#endif
}

/* The configuration a PYTORCH_ALLOC_CONF-style string gives. */
static inline void fixture_configure(struct fixture *f, const char *text)
{
    struct gpucache_config_error error;
    cr_assert_eq(gpucache_config_parse(NULL, text, &f->config, &error), 0, "%s", error.message);
}

static inline void fixture_open(struct fixture *f, uint64_t capacity)
{
    f->driver = accounting_driver_create(capacity, 0);
    cr_assert_not_null(f->driver);
    f->allocator = gpucache_allocator_create(&f->config, accounting_driver_interface(f->driver), 0);
    cr_assert_not_null(f->allocator);
}

/* The usual set-up in one call: defaults, then `configuration` (a
 * PYTORCH_ALLOC_CONF-style string, or NULL for none), then a device of
 * `capacity` bytes. */
static inline void fixture_start(struct fixture *f, const char *configuration, uint64_t capacity)
{
    fixture_defaults(f);
    if (configuration != NULL)
        fixture_configure(f, configuration);
    fixture_open(f, capacity);
}

static inline void fixture_close(struct fixture *f)
{
    gpucache_allocator_destroy(f->allocator);
    cr_assert_eq(accounting_driver_used_bytes(f->driver), 0,
                 "destroy must return every segment to the driver");
    cr_assert_eq(accounting_driver_live_fences(f->driver), 0,
                 "destroy must release every fence");
    accounting_driver_destroy(f->driver);
}

static inline void fixture_check(struct fixture *f)
{
    char why[256];
    bool ok = gpucache_allocator_check(f->allocator, why, sizeof why);
    cr_assert(ok, "allocator invariant broken: %s", why);
}

static inline uint64_t alloc_on(struct fixture *f, size_t size, gpucache_stream stream)
{
    uint64_t address = 0;
    gpucache_result result = gpucache_allocator_malloc(f->allocator, size, stream, &address);
    cr_assert_eq(result, GPUCACHE_SUCCESS, "malloc(%zu) failed with %d", size, result);
    fixture_check(f);
    return address;
}

static inline uint64_t alloc(struct fixture *f, size_t size)
{
    return alloc_on(f, size, 0);
}

/* cuMemFree: synchronous. */
static inline void free_sync(struct fixture *f, uint64_t address)
{
    cr_assert_eq(gpucache_allocator_free(f->allocator, address, GPUCACHE_FREE_SYNCHRONOUS, 0),
                 GPUCACHE_SUCCESS);
    fixture_check(f);
}

/* cuMemFreeAsync(address, stream). */
static inline void free_on(struct fixture *f, uint64_t address, gpucache_stream stream)
{
    cr_assert_eq(gpucache_allocator_free(f->allocator, address, GPUCACHE_FREE_STREAM_ORDERED,
                                         stream),
                 GPUCACHE_SUCCESS);
    fixture_check(f);
}

static inline struct gpucache_stats stats_of(struct fixture *f)
{
    struct gpucache_stats stats;
    gpucache_allocator_get_stats(f->allocator, &stats);
    return stats;
}

static inline int64_t reserved(struct fixture *f)
{
    return stats_of(f).reserved_bytes[GPUCACHE_STAT_ALL].current;
}

#endif

/* The VMM test driver: every rule checked here is one a real CUDA driver
 * enforces (or one whose breach would leak memory on it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm_test_driver.h"

static struct vmm_test_driver *from_context(void *context)
{
    return context;
}

static void misuse(struct vmm_test_driver *driver, const char *format, ...)
{
    if (driver->misuse_count++ == 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(driver->first_misuse, sizeof driver->first_misuse, format, arguments);
        va_end(arguments);
    }
}

/* Counts the call and says whether an armed failure fires on it. */
static bool injected(struct vmm_test_driver *driver, enum vmm_test_operation operation,
                     gpucache_result *result)
{
    driver->calls[operation]++;
    if (driver->fail_countdown[operation] == 0)
        return false;
    if (--driver->fail_countdown[operation] != 0)
        return false;
    driver->injected_failures++;
    *result = driver->fail_result[operation];
    return true;
}

static void *grow(void *array, size_t count, size_t element_size)
{
    /* Grows by doubling at powers of two: cheap enough for test sizes. */
    if (count != 0 && (count & (count - 1)) != 0)
        return array;
    void *grown = realloc(array, (count ? count * 2 : 8) * element_size);
    if (grown == NULL)
        abort();
    return grown;
}

static uint64_t take_addresses(struct vmm_test_driver *driver, size_t size)
{
    uint64_t address = driver->next_address;
    size_t aligned = (size + driver->granularity - 1) / driver->granularity * driver->granularity;
    /* A gap of one granule keeps neighbouring ranges from looking adjacent. */
    driver->next_address += aligned + driver->granularity;
    return address;
}

static gpucache_result page_granularity(void *context, int device, size_t *granularity)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    (void)device;
    if (injected(driver, VMM_TEST_GRANULARITY, &result))
        return result;
    *granularity = driver->granularity;
    return GPUCACHE_SUCCESS;
}

static gpucache_result address_reserve(void *context, int device, size_t size, uint64_t *address)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    if (injected(driver, VMM_TEST_ADDRESS_RESERVE, &result))
        return result;
    if (size == 0 || size % driver->granularity != 0) {
        misuse(driver, "address_reserve of %zu bytes, not a multiple of the granularity", size);
        return GPUCACHE_ERROR_INVALID_VALUE;
    }
    driver->reservations =
        grow(driver->reservations, driver->reservation_count, sizeof *driver->reservations);
    *address = take_addresses(driver, size);
    driver->reservations[driver->reservation_count++] =
        (struct vmm_test_reservation){*address, size, device, true};
    return GPUCACHE_SUCCESS;
}

static bool mapping_overlaps(const struct vmm_test_mapping *mapping, uint64_t address,
                             size_t size)
{
    return mapping->live && mapping->address < address + size &&
           address < mapping->address + mapping->size;
}

static gpucache_result address_free(void *context, int device, uint64_t address, size_t size)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    (void)device;
    if (injected(driver, VMM_TEST_ADDRESS_FREE, &result))
        return result;
    for (size_t i = 0; i < driver->mapping_count; i++)
        if (mapping_overlaps(&driver->mappings[i], address, size)) {
            misuse(driver, "address_free of 0x%llx while pages are still mapped in it",
                   (unsigned long long)address);
            return GPUCACHE_ERROR_INVALID_VALUE;
        }
    for (size_t i = 0; i < driver->reservation_count; i++) {
        struct vmm_test_reservation *reservation = &driver->reservations[i];
        if (reservation->live && reservation->base == address && reservation->size == size) {
            reservation->live = false;
            return GPUCACHE_SUCCESS;
        }
    }
    misuse(driver, "address_free of 0x%llx (%zu bytes): no such reservation",
           (unsigned long long)address, size);
    return GPUCACHE_ERROR_INVALID_VALUE;
}

static gpucache_result page_create(void *context, int device, size_t size,
                                   gpucache_page_handle *handle)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    if (injected(driver, VMM_TEST_PAGE_CREATE, &result))
        return result;
    if (size == 0 || size % driver->granularity != 0) {
        misuse(driver, "page_create of %zu bytes, not a multiple of the granularity", size);
        return GPUCACHE_ERROR_INVALID_VALUE;
    }
    if (driver->physical_in_use + size > driver->capacity)
        return GPUCACHE_ERROR_OUT_OF_MEMORY;
    driver->physical_in_use += size;
    driver->handles = grow(driver->handles, driver->handle_count, sizeof *driver->handles);
    driver->handles[driver->handle_count++] = (struct vmm_test_handle){size, device, 0, true};
    *handle = driver->handle_count;
    return GPUCACHE_SUCCESS;
}

static struct vmm_test_handle *find_handle(struct vmm_test_driver *driver,
                                             gpucache_page_handle handle)
{
    if (handle == 0 || handle > driver->handle_count)
        return NULL;
    return &driver->handles[handle - 1];
}

/* CUDA frees a handle's memory once it is released and no longer mapped. */
static void maybe_reclaim(struct vmm_test_driver *driver, struct vmm_test_handle *handle)
{
    if (!handle->live && handle->map_count == 0 && handle->size != 0) {
        driver->physical_in_use -= handle->size;
        handle->size = 0;
    }
}

static gpucache_result page_release(void *context, int device, gpucache_page_handle handle)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    (void)device;
    if (injected(driver, VMM_TEST_PAGE_RELEASE, &result))
        return result;
    struct vmm_test_handle *record = find_handle(driver, handle);
    if (record == NULL || !record->live) {
        misuse(driver, "page_release of handle %llu, not a live handle",
               (unsigned long long)handle);
        return GPUCACHE_ERROR_INVALID_VALUE;
    }
    record->live = false;
    maybe_reclaim(driver, record);
    return GPUCACHE_SUCCESS;
}

static bool inside_reservation(const struct vmm_test_driver *driver, uint64_t address,
                               size_t size)
{
    for (size_t i = 0; i < driver->reservation_count; i++) {
        const struct vmm_test_reservation *reservation = &driver->reservations[i];
        if (reservation->live && address >= reservation->base &&
            address + size <= reservation->base + reservation->size)
            return true;
    }
    return false;
}

static gpucache_result page_map(void *context, int device, uint64_t address, size_t size,
                                gpucache_page_handle handle)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    (void)device;
    if (injected(driver, VMM_TEST_PAGE_MAP, &result))
        return result;
    struct vmm_test_handle *record = find_handle(driver, handle);
    if (record == NULL || !record->live || record->size != size) {
        misuse(driver, "page_map of handle %llu: not live or not %zu bytes",
               (unsigned long long)handle, size);
        return GPUCACHE_ERROR_INVALID_VALUE;
    }
    if (address % driver->granularity != 0 || !inside_reservation(driver, address, size)) {
        misuse(driver, "page_map at 0x%llx: not aligned or outside every reservation",
               (unsigned long long)address);
        return GPUCACHE_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < driver->mapping_count; i++)
        if (mapping_overlaps(&driver->mappings[i], address, size)) {
            misuse(driver, "page_map at 0x%llx over an existing mapping",
                   (unsigned long long)address);
            return GPUCACHE_ERROR_INVALID_VALUE;
        }
    driver->mappings = grow(driver->mappings, driver->mapping_count, sizeof *driver->mappings);
    driver->mappings[driver->mapping_count++] =
        (struct vmm_test_mapping){address, size, handle, 0, true};
    record->map_count++;
    return GPUCACHE_SUCCESS;
}

static gpucache_result page_unmap(void *context, int device, uint64_t address, size_t size)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    (void)device;
    if (injected(driver, VMM_TEST_PAGE_UNMAP, &result))
        return result;
    for (size_t i = 0; i < driver->mapping_count; i++) {
        struct vmm_test_mapping *mapping = &driver->mappings[i];
        if (mapping->live && mapping->address == address && mapping->size == size) {
            mapping->live = false;
            struct vmm_test_handle *record = find_handle(driver, mapping->handle);
            record->map_count--;
            maybe_reclaim(driver, record);
            return GPUCACHE_SUCCESS;
        }
    }
    misuse(driver, "page_unmap of 0x%llx (%zu bytes): not exactly one mapping",
           (unsigned long long)address, size);
    return GPUCACHE_ERROR_INVALID_VALUE;
}

struct vmm_test_mapping *vmm_test_driver_mapping_at(const struct vmm_test_driver *driver,
                                                   uint64_t address)
{
    for (size_t i = 0; i < driver->mapping_count; i++)
        if (mapping_overlaps(&driver->mappings[i], address, 1))
            return &driver->mappings[i];
    return NULL;
}

static gpucache_result set_access(void *context, int device, uint64_t address, size_t size,
                                  const int *peers, size_t peer_count)
{
    struct vmm_test_driver *driver = from_context(context);
    gpucache_result result;
    if (injected(driver, VMM_TEST_SET_ACCESS, &result))
        return result;
    uint64_t devices = 1ull << device;
    for (size_t i = 0; i < peer_count; i++)
        devices |= 1ull << peers[i];
    /* CUDA requires the whole range to be mapped. */
    for (uint64_t at = address; at < address + size;) {
        struct vmm_test_mapping *mapping = vmm_test_driver_mapping_at(driver, at);
        if (mapping == NULL) {
            misuse(driver, "set_access over 0x%llx, which is not mapped",
                   (unsigned long long)at);
            return GPUCACHE_ERROR_INVALID_VALUE;
        }
        at = mapping->address + mapping->size;
    }
    for (uint64_t at = address; at < address + size;) {
        struct vmm_test_mapping *mapping = vmm_test_driver_mapping_at(driver, at);
        mapping->access_devices |= devices;
        at = mapping->address + mapping->size;
    }
    return GPUCACHE_SUCCESS;
}

static gpucache_result memory_info(void *context, int device, size_t *free_bytes,
                                   size_t *total_bytes)
{
    struct vmm_test_driver *driver = from_context(context);
    (void)device;
    *free_bytes = driver->capacity - driver->physical_in_use;
    *total_bytes = driver->total_memory;
    return GPUCACHE_SUCCESS;
}

void vmm_test_driver_init(struct vmm_test_driver *driver, size_t total_memory,
                            size_t granularity)
{
    memset(driver, 0, sizeof *driver);
    driver->granularity = granularity;
    driver->total_memory = total_memory;
    driver->capacity = total_memory;
    driver->next_address = 1ull << 40;
    /* Only what vmm/ calls: the rest stays NULL so a stray call crashes. */
    driver->driver = (struct gpucache_driver){
        .context = driver,
        .memory_info = memory_info,
        .page_granularity = page_granularity,
        .address_reserve = address_reserve,
        .address_free = address_free,
        .page_create = page_create,
        .page_release = page_release,
        .page_map = page_map,
        .page_unmap = page_unmap,
        .set_access = set_access,
    };
}

void vmm_test_driver_fini(struct vmm_test_driver *driver)
{
    free(driver->reservations);
    free(driver->handles);
    free(driver->mappings);
    memset(driver, 0, sizeof *driver);
}

void vmm_test_driver_fail_call(struct vmm_test_driver *driver,
                                 enum vmm_test_operation operation, uint64_t nth,
                                 gpucache_result result)
{
    driver->fail_countdown[operation] = nth;
    driver->fail_result[operation] = result;
}

void vmm_test_driver_disarm(struct vmm_test_driver *driver)
{
    memset(driver->fail_countdown, 0, sizeof driver->fail_countdown);
}

size_t vmm_test_driver_live_handles(const struct vmm_test_driver *driver)
{
    size_t count = 0;
    for (size_t i = 0; i < driver->handle_count; i++)
        count += driver->handles[i].live;
    return count;
}

size_t vmm_test_driver_live_mappings(const struct vmm_test_driver *driver)
{
    size_t count = 0;
    for (size_t i = 0; i < driver->mapping_count; i++)
        count += driver->mappings[i].live;
    return count;
}

size_t vmm_test_driver_live_reservations(const struct vmm_test_driver *driver)
{
    size_t count = 0;
    for (size_t i = 0; i < driver->reservation_count; i++)
        count += driver->reservations[i].live;
    return count;
}

bool vmm_test_driver_accessible(const struct vmm_test_driver *driver, uint64_t address,
                                  int device)
{
    const struct vmm_test_mapping *mapping = vmm_test_driver_mapping_at(driver, address);
    return mapping != NULL && (mapping->access_devices >> device & 1) != 0;
}

bool vmm_test_driver_mapped(const struct vmm_test_driver *driver, uint64_t address)
{
    return vmm_test_driver_mapping_at(driver, address) != NULL;
}

uint64_t vmm_test_driver_total_calls(const struct vmm_test_driver *driver)
{
    uint64_t total = 0;
    for (int i = 0; i < VMM_TEST_OPERATION_COUNT; i++)
        if (i != VMM_TEST_GRANULARITY)
            total += driver->calls[i];
    return total;
}

const struct vmm_test_handle *vmm_test_driver_handle(const struct vmm_test_driver *driver,
                                                     gpucache_page_handle handle)
{
    if (handle == 0 || handle > driver->handle_count)
        return NULL;
    return &driver->handles[handle - 1];
}

#include "test_support.h"

#include <dlfcn.h>
#include <string.h>

unsigned long long simulated_driver_calls(const char *name)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        return 0;
    unsigned long long (*call_count)(const char *) =
        (unsigned long long (*)(const char *))dlsym(driver, "gpusim_call_count");
    unsigned long long count = call_count ? call_count(name) : 0;
    dlclose(driver);
    return count;
}

size_t simulated_physical_bytes(int device)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        return 0;
    size_t (*physical_bytes)(int) = (size_t (*)(int))dlsym(driver, "gpusim_physical_bytes");
    size_t bytes = physical_bytes ? physical_bytes(device) : 0;
    dlclose(driver);
    return bytes;
}

bool simulated_driver_present(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        return false;
    bool present = dlsym(driver, "gpusim_call_count") != NULL;
    dlclose(driver);
    return present;
}

void check_driver_allocations(unsigned long long driver_allocations, unsigned calls,
                              const char *route)
{
    if (!simulated_driver_present())
        return;
    if (library_is_caching())
        CHECK(driver_allocations <= 2, "%llu driver allocations for %u %s calls",
              driver_allocations, calls, route);
    else
        CHECK(driver_allocations == calls, "%llu driver allocations for %u %s calls without "
              "caching", driver_allocations, calls, route);
}

bool library_is_loaded(void)
{
    return dlsym(RTLD_DEFAULT, "gpucache_empty_cache") != NULL;
}

bool library_is_caching(void)
{
    const char *configuration = getenv("GPUCACHE_ALLOC_CONF");
    return library_is_loaded() && !(configuration && strstr(configuration, "passthrough:True"));
}

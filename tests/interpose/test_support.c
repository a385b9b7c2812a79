#include "test_support.h"

#include <dlfcn.h>

unsigned long long simulated_driver_calls(const char *name)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(driver != NULL, "libcuda.so.1 is not loaded: %s", dlerror());
    unsigned long long (*call_count)(const char *) =
        (unsigned long long (*)(const char *))dlsym(driver, "gpusim_call_count");
    CHECK(call_count != NULL, "the loaded libcuda.so.1 is not the simulator");
    unsigned long long count = call_count(name);
    dlclose(driver);
    return count;
}

bool library_is_loaded(void)
{
    return dlsym(RTLD_DEFAULT, "gpucache_empty_cache") != NULL;
}

#include "library_location.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char library_name[] = "libgpucache.so";

bool library_location_find(char *path, size_t path_size, char *why, size_t why_size)
{
    const char *chosen = getenv("GPUCACHE_LIBRARY");
    if (chosen && *chosen) {
        if (access(chosen, R_OK) == 0 && realpath(chosen, path) && strlen(path) < path_size)
            return true;
        snprintf(why, why_size, "GPUCACHE_LIBRARY is '%s', which is not a readable file", chosen);
        return false;
    }
    char executable[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (length <= 0) {
        snprintf(why, why_size, "cannot tell where gpucache is installed (set GPUCACHE_LIBRARY "
                                "to the path of %s)", library_name);
        return false;
    }
    executable[length] = '\0';
    char *slash = strrchr(executable, '/');
    *slash = '\0';
    /* Installed side by side, installed as bin/ and lib/, or the build tree
     * (tools/gpucache and interpose/libgpucache.so). */
    static const char *const places[] = {"", "/../lib", "/../interpose"};
    char tried[3][PATH_MAX + 32];
    for (size_t index = 0; index < sizeof places / sizeof *places; index++) {
        snprintf(tried[index], sizeof tried[index], "%s%s/%s", executable, places[index],
                 library_name);
        char resolved[PATH_MAX];
        if (access(tried[index], R_OK) == 0 && realpath(tried[index], resolved) &&
            strlen(resolved) < path_size) {
            strcpy(path, resolved);
            return true;
        }
    }
    snprintf(why, why_size, "%s not found (tried %s, %s and %s; set GPUCACHE_LIBRARY to its path)",
             library_name, tried[0], tried[1], tried[2]);
    return false;
}

static bool is_sim_folder(const char *folder)
{
    char driver[PATH_MAX + 32], runtime[PATH_MAX + 48];
    snprintf(driver, sizeof driver, "%s/libcuda.so.1", folder);
    snprintf(runtime, sizeof runtime, "%s/runtime/libcudart.so.13", folder);
    return access(driver, R_OK) == 0 && access(runtime, R_OK) == 0;
}

bool library_location_find_sim(char *path, size_t path_size, char *why, size_t why_size)
{
    const char *chosen = getenv("GPUCACHE_SIM");
    if (chosen && *chosen) {
        if (is_sim_folder(chosen) && realpath(chosen, path) && strlen(path) < path_size)
            return true;
        snprintf(why, why_size,
                 "GPUCACHE_SIM is '%s', which does not hold libcuda.so.1 and "
                 "runtime/libcudart.so.13 of the simulated device", chosen);
        return false;
    }
    char executable[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (length > 0) {
        executable[length] = '\0';
        *strrchr(executable, '/') = '\0';
        char folder[PATH_MAX + 16];
        snprintf(folder, sizeof folder, "%s/../sim", executable);
        char resolved[PATH_MAX];
        if (is_sim_folder(folder) && realpath(folder, resolved) && strlen(resolved) < path_size) {
            strcpy(path, resolved);
            return true;
        }
        snprintf(why, why_size,
                 "the simulated device is not in %s (build it with ninja, or set GPUCACHE_SIM to "
                 "the folder holding its libcuda.so.1)", folder);
        return false;
    }
    snprintf(why, why_size, "cannot tell where gpucache is installed (set GPUCACHE_SIM to the "
                            "folder holding the simulated device's libcuda.so.1)");
    return false;
}

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

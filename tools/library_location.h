/* Where libgpucache.so is, for the commands that run programs under it. */
#ifndef GPUCACHE_LIBRARY_LOCATION_H
#define GPUCACHE_LIBRARY_LOCATION_H

#include <stdbool.h>
#include <stddef.h>

/* Finds the library: $GPUCACHE_LIBRARY when set (it must exist), else
 * libgpucache.so next to the gpucache executable, else ../lib/ (an installed
 * tree), else ../interpose/ (the build tree). Writes the absolute path into
 * `path`; false with one line in `why` naming every place tried. */
bool library_location_find(char *path, size_t path_size, char *why, size_t why_size);

/* Finds the simulated device (the folder holding the sim's libcuda.so.1,
 * with its runtime in runtime/): $GPUCACHE_SIM when set, else ../sim from
 * the gpucache executable (the build tree). Writes the absolute folder into
 * `path`; false with one line in `why`. */
bool library_location_find_sim(char *path, size_t path_size, char *why, size_t why_size);

#endif

/* Reading nvcc's fat binaries: the wrapper __cudaRegisterFatBinary receives,
 * the container it points to (what cuModuleLoadFatBinary takes), and the
 * entries inside it (SASS for one architecture, or PTX for one virtual
 * architecture), compressed with LZ4 (before CUDA 13) or zstd (CUDA 13's
 * default). */
#ifndef FATBIN_H
#define FATBIN_H

#include <stdbool.h>
#include <stddef.h>

enum fatbin_result {
    FATBIN_FOUND,      /* *ptx holds the chosen PTX text */
    FATBIN_NO_PTX,     /* a valid fat binary without PTX for a usable target */
    FATBIN_NOT_FATBIN, /* not a fat binary (nor its wrapper) */
    FATBIN_CORRUPT,    /* a fat binary whose entries cannot be read */
};

/* True when `image` starts with the `length` bytes of `prefix`; reads no
 * byte of `image` after the first that differs. */
bool fatbin_starts_with(const void *image, const void *prefix, size_t length);

/* True when `image` starts like a fat binary container or its wrapper. */
bool fatbin_is_fatbin(const void *image);

/* Picks the PTX entry of the highest virtual architecture at or below
 * `max_arch` (e.g. 90 for compute capability 9.0) and returns its text,
 * decompressed and NUL-terminated, in *ptx (free() it). `size` bounds the
 * image when known (0: trust the container's own sizes). On FATBIN_NO_PTX,
 * `sass_arches` lists the SASS targets present ("sm_75 sm_80") and
 * `ptx_arches` the PTX ones that were too new. `error` gets one line on
 * FATBIN_CORRUPT. */
enum fatbin_result fatbin_select_ptx(const void *image, size_t size, unsigned max_arch, char **ptx,
                                     size_t *ptx_length, unsigned *chosen_arch, char *sass_arches,
                                     size_t sass_arches_size, char *ptx_arches, size_t ptx_arches_size,
                                     char *error, size_t error_size);

#endif

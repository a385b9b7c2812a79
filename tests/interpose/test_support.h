/* Helpers shared by the programs that run under the preloaded library on
 * the simulated device. Each program exits 0 when every check passed, and
 * otherwise prints the first failed check and exits 1. */
#ifndef GPUCACHE_TEST_SUPPORT_H
#define GPUCACHE_TEST_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(condition, ...)                                                        \
    do {                                                                             \
        if (!(condition)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #condition); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* For runtime calls: the result must be cudaSuccess. */
#define CHECK_CUDA(call)                                                             \
    do {                                                                             \
        int check_cuda_result = (int)(call);                                         \
        CHECK(check_cuda_result == 0, "%s returned %d", #call, check_cuda_result);   \
    } while (0)

/* Calls so far to the simulated driver's exported entry point `name`, read
 * from the simulator in this process; 0 on a real driver. */
unsigned long long simulated_driver_calls(const char *name);

/* Physical bytes the simulator holds on `device` (0 on a real driver). */
size_t simulated_physical_bytes(int device);

/* True when the loaded libcuda.so.1 is the simulator, whose call counts
 * the tests read; false on a real GPU (scripts/gpu-check.sh counts there). */
bool simulated_driver_present(void);

/* Checks the cuMemAlloc_v2 calls `driver_allocations` that `calls`
 * allocation calls of the program caused: at most 2 under the caching
 * library (the route was caught and cached), exactly `calls` without it or
 * under passthrough:True. Does nothing without the simulator. */
void check_driver_allocations(unsigned long long driver_allocations, unsigned calls,
                              const char *route);

/* True when libgpucache.so is loaded in this process. */
bool library_is_loaded(void);

/* True when the library is loaded and caches (not passthrough:True). */
bool library_is_caching(void);

/* A deterministic byte for offset `offset` of allocation number `tag`. */
static inline unsigned char pattern_byte(unsigned tag, size_t offset)
{
    return (unsigned char)(tag * 131u + offset * 7u + (offset >> 9));
}

/* Small deterministic generator for sizes and orders. */
static inline unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffffu;
}

#endif

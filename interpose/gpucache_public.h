/* The functions libgpucache.so exports besides the CUDA driver hooks. They
 * are found with dlsym(RTLD_DEFAULT, name) in a process running under the
 * library, or named to PyTorch's CUDAPluggableAllocator. */
#ifndef GPUCACHE_PUBLIC_H
#define GPUCACHE_PUBLIC_H

#include <stddef.h>

#include <driver_types.h>

#include "gpucache_stats.h"

#define GPUCACHE_PUBLIC __attribute__((visibility("default")))

/* PyTorch's allocation function: `size` bytes on `device` (which must be
 * current) for use on `stream`; NULL when the cache cannot serve it. */
GPUCACHE_PUBLIC void *gpucache_malloc(size_t size, int device, cudaStream_t stream);

/* PyTorch's free function: a stream-ordered free on `stream`. A pointer the
 * cache did not hand out is freed by the driver. */
GPUCACHE_PUBLIC void gpucache_free(void *pointer, size_t size, int device, cudaStream_t stream);

/* Returns every wholly free cached segment to the driver, on every device
 * (torch.cuda.empty_cache(); PyTorch's reset function). */
GPUCACHE_PUBLIC void gpucache_empty_cache(void);

/* Fills `stats` for `device` with PyTorch's memory_stats() values (from the
 * cache, from the cache as it was when its context was last destroyed, or
 * from the counts of passthrough:True and backend:cudaMallocAsync).
 * Returns 0, or -1 when the library has not seen the device allocate. */
GPUCACHE_PUBLIC int gpucache_device_stats(int device, struct gpucache_stats *stats);

#endif

/* The two modes that exist so A/B runs compare like with like:
 * passthrough:True forwards every call and only records what it saw, and
 * backend:cudaMallocAsync serves cudaMalloc/cudaFree from the driver's own
 * stream-ordered pool instead of the caching allocator. */
#ifndef GPUCACHE_INTERPOSE_ALTERNATIVE_BACKENDS_H
#define GPUCACHE_INTERPOSE_ALTERNATIVE_BACKENDS_H

#include "cuda_headers.h"
#include "real_driver.h"

/* passthrough:True. `real_alloc_async` / `real_free_async` are the variant
 * the program called (legacy or _ptsz). */
CUresult count_only_alloc(const struct real_driver *driver, CUdeviceptr *dptr, size_t size);
CUresult count_only_free(const struct real_driver *driver, CUdeviceptr dptr);
CUresult count_only_alloc_async(const struct real_driver *driver,
                                PFN_cuMemAllocAsync_v11020 real_alloc_async, CUdeviceptr *dptr,
                                size_t size, CUstream stream);
CUresult count_only_free_async(PFN_cuMemFreeAsync_v11020 real_free_async, CUdeviceptr dptr,
                               CUstream stream);

/* backend:cudaMallocAsync: a synchronous allocation becomes a stream-ordered
 * one on the legacy stream, and its free a stream-ordered free after all the
 * work issued so far on every stream, as cudaFree's synchronisation would
 * have ordered it. */
CUresult driver_pool_alloc(const struct real_driver *driver, CUdeviceptr *dptr, size_t size);
CUresult driver_pool_free(const struct real_driver *driver, CUdeviceptr dptr);

#endif

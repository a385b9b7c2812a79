/* The allocator's driver interface (gpucache_driver.h) over the real CUDA
 * driver: plain segments with cuMemAlloc_v2, expandable segments with the
 * VMM calls, and fences made of CUevents. */
#ifndef GPUCACHE_INTERPOSE_CUDA_DRIVER_H
#define GPUCACHE_INTERPOSE_CUDA_DRIVER_H

#include "cuda_headers.h"
#include "gpucache_driver.h"

/* The interface every device allocator is created with. */
const struct gpucache_driver *cuda_driver_interface(void);

/* True while a stream capture is active in `device`'s context: the legacy
 * stream reports an implicit capture, or a live non-blocking stream of the
 * device is capturing. */
bool cuda_driver_capture_active(int device);

/* A non-blocking stream of `device` is being destroyed while its work may
 * still run: fences on every stream record on the legacy stream and the
 * live non-blocking ones, so the legacy stream is made to wait for the
 * destroyed one's remaining work (nothing when it is idle). Without this a
 * synchronous free after the destroy would not wait for that work. */
CUresult cuda_driver_stream_retiring(int device, CUstream stream);
/* Makes the legacy stream wait for the work issued so far on every live
 * non-blocking stream of `device`, without blocking the host. */
CUresult cuda_driver_order_legacy_after_all_streams(int device);

#endif

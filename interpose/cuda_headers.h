/* Includes the CUDA 13 headers the way every file of the library needs them:
 * hooks defined under their exact exported names (cuMemAlloc_v2, never the
 * macro spelling), default visibility for the cu* definitions only, and the
 * legacy (not per-thread) spelling of every name. */
#ifndef GPUCACHE_INTERPOSE_CUDA_HEADERS_H
#define GPUCACHE_INTERPOSE_CUDA_HEADERS_H

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "the library defines legacy and _ptsz hooks explicitly; never build it per-thread"
#endif

/* Makes the cu* declarations (and so our definitions of them) default
 * visible under -fvisibility=hidden; the version script then picks what is
 * exported. */
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT
#include <cuda.h>
#include <cudaTypedefs.h>
#include <driver_types.h>
#undef __CUDA_API_PUSH_VISIBILITY_DEFAULT

/* cuda.h renames these base names to their newest variant; the library must
 * also define the older variants, which older callers resolve. */
#undef cuGetProcAddress
#undef cuCtxDestroy
#undef cuStreamDestroy
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuCtxCreate
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamBeginCapture

#define GPUCACHE_EXPORT __attribute__((visibility("default")))

#endif

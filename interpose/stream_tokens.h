/* Stream handles as the allocator sees them. The per-thread default stream
 * is one handle value (CU_STREAM_PER_THREAD, or 0 in a _ptsz call) that
 * means a different stream in every thread, so the allocator gets a token
 * unique to the calling thread instead; the legacy default stream is 0. */
#ifndef GPUCACHE_INTERPOSE_STREAM_TOKENS_H
#define GPUCACHE_INTERPOSE_STREAM_TOKENS_H

#include <stdbool.h>

#include "cuda_headers.h"
#include "gpucache_driver.h"

/* The allocator's token for `stream` as passed to a legacy call or, with
 * `per_thread_call`, to a _ptsz call. */
gpucache_stream stream_token(CUstream stream, bool per_thread_call);

/* The driver handle to record or wait on for `token` in the calling thread.
 * Another thread's per-thread stream cannot be named; the legacy stream,
 * which orders after every per-thread stream, stands in for it. */
CUstream stream_handle(gpucache_stream token);

/* True for the legacy stream and for per-thread default streams: the
 * device of such a stream is the current context's. */
bool stream_token_is_default(gpucache_stream token);

#endif

/* Tokens for per-thread default streams are the address of a thread-local
 * byte with the low bit set: unique per live thread and never equal to a
 * driver stream handle, which is an aligned pointer. */
#include "stream_tokens.h"

#include <stdint.h>

static __thread char per_thread_marker __attribute__((tls_model("initial-exec")));

static gpucache_stream this_thread_token(void)
{
    return (gpucache_stream)(uintptr_t)&per_thread_marker | 1u;
}

static bool is_per_thread_token(gpucache_stream token)
{
    return (token & 1u) && token > (gpucache_stream)(uintptr_t)CU_STREAM_PER_THREAD;
}

gpucache_stream stream_token(CUstream stream, bool per_thread_call)
{
    if (stream == NULL)
        return per_thread_call ? this_thread_token() : 0;
    if (stream == CU_STREAM_LEGACY)
        return 0;
    if (stream == CU_STREAM_PER_THREAD)
        return this_thread_token();
    return (gpucache_stream)(uintptr_t)stream;
}

CUstream stream_handle(gpucache_stream token)
{
    if (token == 0)
        return CU_STREAM_LEGACY;
    if (is_per_thread_token(token))
        return token == this_thread_token() ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return (CUstream)(uintptr_t)token;
}

bool stream_token_is_default(gpucache_stream token)
{
    return token == 0 || is_per_thread_token(token);
}

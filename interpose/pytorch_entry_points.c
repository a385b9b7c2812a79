/* Entry points for PyTorch's CUDAPluggableAllocator, for processes that want
 * the library's cache inside PyTorch itself:
 *   torch.cuda.memory.CUDAPluggableAllocator("libgpucache.so",
 *       "gpucache_malloc", "gpucache_free")
 * PyTorch hands over its current stream, so frees are stream-ordered. */
#include "device_allocators.h"
#include "device_registry.h"
#include "gpucache_public.h"
#include "hook_support.h"
#include "log.h"
#include "stream_tokens.h"

static int device_mismatch_logged;

void *gpucache_malloc(size_t size, int device, cudaStream_t stream)
{
    const struct real_driver *driver = hook_driver();
    if (!driver || hook_bypassed_after_fork())
        return NULL;
    CUcontext context;
    int current;
    if (!device_of_current_context(driver, &context, &current))
        return NULL;
    if (current != device) {
        gpucache_log_once(&device_mismatch_logged,
                          "gpucache_malloc: device %d asked while device %d is current; "
                          "PyTorch sets the device before allocating, other callers must too",
                          device, current);
        return NULL;
    }
    struct gpucache_allocator *allocator = device_allocator_for(device, context);
    if (!allocator)
        return NULL;
    uint64_t address = 0;
    gpucache_result result = device_allocate(allocator, context, size,
                                             stream_token((CUstream)stream, false), &address);
    return result == GPUCACHE_SUCCESS ? (void *)(uintptr_t)address : NULL;
}

void gpucache_free(void *pointer, size_t size, int device, cudaStream_t stream)
{
    (void)size;
    (void)device;
    const struct real_driver *driver = hook_driver();
    if (!driver || !pointer || hook_bypassed_after_fork())
        return;
    gpucache_result result = device_free_anywhere((uint64_t)(uintptr_t)pointer,
                                                  GPUCACHE_FREE_STREAM_ORDERED,
                                                  stream_token((CUstream)stream, false));
    if (result == GPUCACHE_ALLOCATOR_NOT_OURS)
        driver->mem_free_v2((CUdeviceptr)(uintptr_t)pointer);
}

void gpucache_empty_cache(void)
{
    if (hook_bypassed_after_fork())
        return;
    for (int device = 0; device < device_count_limit(); device++) {
        struct gpucache_allocator *allocator = device_allocator(device);
        if (allocator && device_context(device))
            gpucache_allocator_empty_cache(allocator);
    }
}

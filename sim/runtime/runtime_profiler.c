/* cudaProfilerStart and cudaProfilerStop: with no profiler attached to the
 * simulated device there is nothing to start or stop, and both succeed, as
 * NVIDIA's runtime does when no profiling tool is collecting. */
#include <cuda_profiler_api.h>

#include "runtime_internal.h"

cudaError_t CUDARTAPI cudaProfilerStart(void)
{
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaProfilerStop(void)
{
    return cudaSuccess;
}

/* Programs for check_races.py, which runs them under GPUSIM_RACECHECK and
 * checks the report line, the exit status and abort mode:
 *
 *   program_races unordered   the allocator's corruption, reproduced natively:
 *                             a pool allocation on the legacy stream, a slow
 *                             host function and a memset there, then a
 *                             write of the same bytes on a non-blocking
 *                             stream that nothing orders after the memset
 *   program_races ordered     the same with cuStreamSynchronize before the
 *                             second write
 *   program_races destroyed   a write on a stream destroyed since races with
 *                             a later write on another stream */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BYTES 4096

static int check(CUresult result, const char *call)
{
    if (result != CUDA_SUCCESS)
        fprintf(stderr, "program_races: %s failed with %d\n", call, (int)result);
    return result != CUDA_SUCCESS;
}

#define CHECK(call)                                                                            \
    do {                                                                                       \
        if (check((call), #call))                                                              \
            return 1;                                                                          \
    } while (0)

static void CUDA_CB slow_host_function(void *unused)
{
    (void)unused;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000000L};
    nanosleep(&pause, NULL);
}

static int run(const char *scenario)
{
    CUcontext context;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&context, 0));
    CHECK(cuCtxSetCurrent(context));
    CUstream side;
    CHECK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CUdeviceptr buffer;
    if (strcmp(scenario, "destroyed") == 0) {
        CUstream gone;
        CHECK(cuMemAlloc(&buffer, BYTES));
        CHECK(cuStreamCreate(&gone, CU_STREAM_NON_BLOCKING));
        CHECK(cuMemsetD8Async(buffer, 1, BYTES, gone));
        CHECK(cuStreamDestroy(gone));
        CHECK(cuMemsetD32Async(buffer, 2, BYTES / 4, side));
        CHECK(cuCtxSynchronize());
        return 0;
    }
    CHECK(cuMemAllocAsync(&buffer, BYTES, CU_STREAM_LEGACY));
    CHECK(cuLaunchHostFunc(CU_STREAM_LEGACY, slow_host_function, NULL));
    CHECK(cuMemsetD8Async(buffer, 0, BYTES, CU_STREAM_LEGACY));
    if (strcmp(scenario, "ordered") == 0)
        CHECK(cuStreamSynchronize(CU_STREAM_LEGACY));
    else if (strcmp(scenario, "unordered") != 0)
        return 1;
    CHECK(cuMemsetD32Async(buffer, 0xFFFFFFFFu, BYTES / 4, side));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFreeAsync(buffer, side));
    CHECK(cuStreamSynchronize(side));
    CHECK(cuStreamDestroy(side));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: program_races unordered|ordered|destroyed\n");
        return 1;
    }
    return run(argv[1]);
}

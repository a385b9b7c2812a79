// A host-only CUDA program built by the real toolkit's nvcc with
// -cudart shared, so it references cudaMalloc@libcudart.so.13 and the
// module registration entry points. Run with LD_LIBRARY_PATH pointing at the
// simulated runtime and driver, it must load the simulated runtime (checked
// against argv[1], the directory it is expected in) and work on the sim.
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "program_check.h"


static int loaded_from(const char *expected_directory)
{
    // The C entry point, not one of cuda_runtime.h's C++ template overloads.
    cudaError_t (*malloc_entry)(void **, size_t) = cudaMalloc;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(malloc_entry), &info) == 0 || info.dli_fname == NULL)
        return 0;
    char library[PATH_MAX], expected[PATH_MAX];
    if (realpath(info.dli_fname, library) == NULL || realpath(expected_directory, expected) == NULL)
        return 0;
    if (strcmp(dirname(library), expected) != 0) {
        fprintf(stderr, "cudaMalloc came from %s, not from %s\n", info.dli_fname, expected);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !loaded_from(argv[1]))
        return 1;
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    cudaDeviceProp properties;
    CHECK(cudaGetDeviceProperties(&properties, 0));
    const size_t size = 1 << 16;
    unsigned char *host = static_cast<unsigned char *>(malloc(size));
    unsigned char *back = static_cast<unsigned char *>(malloc(size));
    for (size_t index = 0; index < size; index++)
        host[index] = static_cast<unsigned char>(index * 7);
    void *device_memory = NULL;
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMallocAsync(&device_memory, size, stream));
    CHECK(cudaMemcpyAsync(device_memory, host, size, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(back, device_memory, size, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(device_memory, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaStreamDestroy(stream));
    if (memcmp(host, back, size) != 0) {
        fprintf(stderr, "data did not round-trip\n");
        return 1;
    }
    printf("%s: %d device(s), data round-tripped\n", properties.name, count);
    free(host);
    free(back);
    return 0;
}

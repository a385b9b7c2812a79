// Shared by the kernel samples: every CUDA call is checked, and a failure
// prints the call and its error and exits with status 1.
#ifndef SAMPLE_CHECK_H
#define SAMPLE_CHECK_H

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t status_ = (call);                                                              \
        if (status_ != cudaSuccess) {                                                              \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                     \
                         cudaGetErrorString(status_));                                             \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

// Checks the launch itself and then the kernel's execution.
#define CHECK_KERNEL()                                                                             \
    do {                                                                                           \
        CHECK(cudaGetLastError());                                                                 \
        CHECK(cudaDeviceSynchronize());                                                            \
    } while (0)

#endif

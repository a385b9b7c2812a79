/* CHECK for the stand-alone test programs: a failing CUDA runtime call
 * prints its name and error and makes main() return 1. */
#ifndef PROGRAM_CHECK_H
#define PROGRAM_CHECK_H

#include <stdio.h>

#include <cuda_runtime_api.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t status_ = (call);                                                              \
        if (status_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, cudaGetErrorName(status_),              \
                    cudaGetErrorString(status_));                                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif

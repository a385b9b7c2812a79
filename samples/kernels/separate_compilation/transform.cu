// Device functions the kernel in main.cu calls: they read the variables
// tables.cu defines.
#include <cstdio>

#include "separate_compilation.h"

static __device__ int file_tag_value = 2000;

static __device__ __noinline__ int file_tag()
{
    return file_tag_value;
}

__device__ float polynomial(float x)
{
    // Horner's rule over the __constant__ table of another file.
    float sum = 0.0f;
    for (int i = COEFFICIENT_COUNT - 1; i >= 0; i--)
        sum = sum * x + coefficients[i];
    return sum;
}

__device__ int scaled(int x)
{
    if (x == 0)
        printf("scaled: scale %d\n", scale);
    atomicAdd(&hits, 1u);
    return x * scale + file_tag();
}

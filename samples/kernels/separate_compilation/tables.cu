// The data the other files use: a __constant__ table, a __device__ scale the
// host sets with cudaMemcpyToSymbol from main.cu, and a hit counter.
#include "separate_compilation.h"

__constant__ float coefficients[COEFFICIENT_COUNT] = {1.0f, 0.5f, 0.25f, 0.125f};
__device__ int scale = 1;
__device__ unsigned hits;

// Private to this file (transform.cu has its own, 2000): the result of
// tagged() shows that this file's is read.
static __device__ int file_tag_value = 1000;

static __device__ __noinline__ int file_tag()
{
    return file_tag_value;
}

__device__ int tagged(int x)
{
    return x + file_tag();
}

// What the three files of the separate_compilation sample share: each
// defines some of these and uses the others, so only the device link
// (nvcc -rdc=true) puts them together.
#ifndef SEPARATE_COMPILATION_H
#define SEPARATE_COMPILATION_H

#define COEFFICIENT_COUNT 4

extern __constant__ float coefficients[COEFFICIENT_COUNT]; // tables.cu
extern __device__ int scale;                               // tables.cu
extern __device__ unsigned hits;                           // tables.cu

__device__ int tagged(int x);       // tables.cu: x + 1000
__device__ float polynomial(float x); // transform.cu: the coefficients' polynomial at x
__device__ int scaled(int x);       // transform.cu: x * scale + 2000, counting a hit

#endif

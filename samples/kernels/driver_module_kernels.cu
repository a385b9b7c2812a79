// Kernels for driver_module.c, compiled to PTX at build time (nvcc -ptx) and
// loaded with cuModuleLoad. extern "C" keeps the names unmangled for
// cuModuleGetFunction; the __device__ variables are set and read through
// cuModuleGetGlobal.

__device__ int scale_factor;
__device__ unsigned int blocks_run;

extern "C" __global__ void scale_add(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = (float)scale_factor * x[i] + y[i];
    if (threadIdx.x == 0)
        atomicAdd(&blocks_run, 1u);
}

extern "C" __global__ void iota(int *out, int n, int start)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = start + i;
}

// Kernels of the interpreter benchmark (tests/sim/ptx/benchmark_ptx.c).
// benchmark_kernels.ptx is nvcc's output for this file:
//   nvcc -ptx -O3 -arch=compute_90 -o benchmark_kernels.ptx benchmark_kernels.cu
#define TILE 16

extern "C" __global__ void reduce(const float *in, float *out, int n)
{
    __shared__ float per_warp[32];
    float value = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        value += in[i];
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0)
        per_warp[threadIdx.x / 32] = value;
    __syncthreads();
    if (threadIdx.x < 32) {
        value = threadIdx.x < blockDim.x / 32 ? per_warp[threadIdx.x] : 0;
        for (int offset = 16; offset > 0; offset >>= 1)
            value += __shfl_down_sync(0xffffffffu, value, offset);
        if (threadIdx.x == 0)
            atomicAdd(out, value);
    }
}

extern "C" __global__ void matmul(const float *a, const float *b, float *c, int n)
{
    __shared__ float tile_a[TILE][TILE];
    __shared__ float tile_b[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, column = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int base = 0; base < n; base += TILE) {
        tile_a[threadIdx.y][threadIdx.x] = a[row * n + base + threadIdx.x];
        tile_b[threadIdx.y][threadIdx.x] = b[(base + threadIdx.y) * n + column];
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += tile_a[threadIdx.y][i] * tile_b[i][threadIdx.x];
        __syncthreads();
    }
    c[row * n + column] = sum;
}

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

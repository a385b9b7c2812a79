// An nvcc-built program with a kernel, linked with -cudart shared. On the sim
// the kernel cannot run: the launch must fail with
// cudaErrorNoKernelImageForDevice (reported by cudaGetLastError), never
// pretend to succeed, and the rest of the program must keep working.
#include <stdio.h>

#include <cuda_runtime.h>

__device__ int device_counter;

__global__ void increment(int *value)
{
    *value += 1;
    device_counter += 1;
}

int main()
{
    int *value = NULL;
    if (cudaMalloc(&value, sizeof *value) != cudaSuccess)
        return 1;
    increment<<<1, 1>>>(value);
    cudaError_t launch = cudaGetLastError();
    if (launch != cudaErrorNoKernelImageForDevice) {
        fprintf(stderr, "launch returned %s\n", cudaGetErrorName(launch));
        return 1;
    }
    if (cudaGetLastError() != cudaSuccess || cudaFree(value) != cudaSuccess)
        return 1;
    printf("kernel launch refused: %s\n", cudaGetErrorString(launch));
    return 0;
}

// Built with SASS only (-gencode arch=compute_75,code=sm_75, no PTX): the
// simulator cannot run it, so the launch fails with
// cudaErrorNoKernelImageForDevice, the driver says on stderr how to add
// PTX, and the rest of the runtime keeps working.
#include <stdio.h>

#include <cuda_runtime.h>

__global__ void touch(int *value)
{
    *value = 1;
}

int main()
{
    int *value = NULL;
    if (cudaMalloc(&value, sizeof *value) != cudaSuccess)
        return 1;
    touch<<<1, 1>>>(value);
    cudaError_t launch = cudaGetLastError();
    if (launch != cudaErrorNoKernelImageForDevice) {
        fprintf(stderr, "launch returned %s\n", cudaGetErrorName(launch));
        return 1;
    }
    if (cudaDeviceSynchronize() != cudaSuccess || cudaFree(value) != cudaSuccess)
        return 1;
    printf("SASS-only launch refused: %s\n", cudaGetErrorString(launch));
    return 0;
}

// An nvcc-built program with a kernel, linked with -cudart shared. On the sim
// the kernel runs through the PTX interpreter: the launch succeeds, the
// kernel's writes to global memory and to a __device__ variable are visible
// after synchronizing, and cudaMemcpyFromSymbol reads the variable; the
// extensible launch (cudaLaunchKernelEx) and the occupancy calculator work;
// after cudaDeviceReset the module loads again.
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
    if (cudaMalloc(&value, sizeof *value) != cudaSuccess || cudaMemset(value, 0, sizeof *value) != cudaSuccess)
        return 1;
    increment<<<1, 1>>>(value);
    cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) {
        fprintf(stderr, "launch returned %s\n", cudaGetErrorName(launch));
        return 1;
    }
    increment<<<1, 1>>>(value);
    int host_value = 0, host_counter = 0;
    if (cudaMemcpy(&host_value, value, sizeof host_value, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpyFromSymbol(&host_counter, device_counter, sizeof host_counter) != cudaSuccess)
        return 1;
    if (host_value != 2 || host_counter != 2) {
        fprintf(stderr, "kernel results: value %d, counter %d (expected 2 and 2)\n", host_value, host_counter);
        return 1;
    }
    // The variable is device memory: its address works with plain copies,
    // and cudaMemcpyToSymbol writes it.
    int *counter_address = NULL;
    size_t counter_size = 0;
    int forty = 40;
    if (cudaGetSymbolAddress((void **)&counter_address, device_counter) != cudaSuccess ||
        cudaGetSymbolSize(&counter_size, device_counter) != cudaSuccess || counter_size != sizeof(int) ||
        cudaMemcpy(&host_counter, counter_address, sizeof host_counter, cudaMemcpyDeviceToHost) != cudaSuccess ||
        host_counter != 2 || cudaMemcpyToSymbol(device_counter, &forty, sizeof forty) != cudaSuccess) {
        fprintf(stderr, "symbol address or size wrong\n");
        return 1;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(1);
    if (cudaLaunchKernelEx(&config, increment, value) != cudaSuccess ||
        cudaMemcpy(&host_value, value, sizeof host_value, cudaMemcpyDeviceToHost) != cudaSuccess || host_value != 3 ||
        cudaMemcpyFromSymbol(&host_counter, device_counter, sizeof host_counter) != cudaSuccess || host_counter != 41) {
        fprintf(stderr, "cudaLaunchKernelEx: value %d\n", host_value);
        return 1;
    }
    int grid_size = 0, block_size = 0;
    if (cudaOccupancyMaxPotentialBlockSize(&grid_size, &block_size, increment) != cudaSuccess || block_size <= 0 ||
        grid_size <= 0) {
        fprintf(stderr, "occupancy: grid %d block %d\n", grid_size, block_size);
        return 1;
    }
    if (cudaFree(value) != cudaSuccess)
        return 1;
    // A reset unloads the module; the next launch loads it again, with the
    // variable back at zero.
    if (cudaDeviceReset() != cudaSuccess || cudaMalloc(&value, sizeof *value) != cudaSuccess ||
        cudaMemset(value, 0, sizeof *value) != cudaSuccess)
        return 1;
    increment<<<1, 1>>>(value);
    if (cudaMemcpyFromSymbol(&host_counter, device_counter, sizeof host_counter) != cudaSuccess ||
        host_counter != 1) {
        fprintf(stderr, "after a reset: counter %d (expected 1)\n", host_counter);
        return 1;
    }
    if (cudaFree(value) != cudaSuccess)
        return 1;
    printf("kernel ran twice: value %d, counter %d\n", host_value, host_counter);
    return 0;
}

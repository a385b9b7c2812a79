/* Kernel launches, copies to and from device variables, and function
 * attributes for nvcc-built binaries: each finds the registered kernel or
 * variable (runtime_registration.c), which loads its module on first use,
 * and then calls the driver as NVIDIA's runtime does (cuLaunchKernel,
 * cuModuleGetGlobal plus an ordinary copy, cuFuncGetAttribute). */
#include <string.h>

#include "runtime_driver.h"

cudaError_t sim_runtime_launch(const void *stub_or_handle, bool by_handle, dim3 grid, dim3 block, void **args,
                               size_t shared_memory, cudaStream_t stream, bool cooperative,
                               enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    CUfunction function;
    cudaError_t status = sim_runtime_registered_function(stub_or_handle, by_handle, &function);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    const struct sim_runtime_stream_entry_points *driver = sim_runtime_stream_entry_points(default_stream);
    if (shared_memory > 0xffffffffu)
        return sim_runtime_record(cudaErrorInvalidConfiguration);
    CUresult result;
    if (cooperative) {
        if (driver->cuLaunchCooperativeKernel == NULL)
            return sim_runtime_record(cudaErrorNotSupported);
        result = driver->cuLaunchCooperativeKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                                   (unsigned)shared_memory, (CUstream)stream, args);
    } else {
        if (driver->cuLaunchKernel == NULL)
            return sim_runtime_record(cudaErrorNotSupported);
        result = driver->cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                        (unsigned)shared_memory, (CUstream)stream, args, NULL);
    }
    /* The driver's "invalid value" for a launch is the runtime's "invalid
     * configuration argument" (block or grid dimensions, shared memory). */
    if (result == CUDA_ERROR_INVALID_VALUE)
        return sim_runtime_record(cudaErrorInvalidConfiguration);
    return sim_runtime_record_driver(result);
}

cudaError_t sim_runtime_memcpy_symbol(const void *symbol, void *buffer, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, bool to_symbol, bool asynchronous,
                                      cudaStream_t stream, enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    CUdeviceptr address;
    size_t size;
    cudaError_t status = sim_runtime_registered_variable(symbol, &address, &size);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    if (offset > size || count > size - offset)
        return sim_runtime_record(cudaErrorInvalidValue);
    /* The variable side is device memory; the other side is host memory
     * unless the kind says device (or Default lets the driver tell). */
    bool other_is_device = kind == cudaMemcpyDeviceToDevice;
    if (to_symbol && kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return sim_runtime_record(cudaErrorInvalidMemcpyDirection);
    if (!to_symbol && kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return sim_runtime_record(cudaErrorInvalidMemcpyDirection);
    void *device = (void *)(uintptr_t)(address + offset);
    enum cudaMemcpyKind direction = kind == cudaMemcpyDefault ? cudaMemcpyDefault
                                    : other_is_device       ? cudaMemcpyDeviceToDevice
                                    : to_symbol             ? cudaMemcpyHostToDevice
                                                            : cudaMemcpyDeviceToHost;
    void *destination = to_symbol ? device : buffer;
    const void *source = to_symbol ? buffer : device;
    if (asynchronous)
        return sim_runtime_memcpy_async(destination, source, count, direction, stream, default_stream);
    return sim_runtime_memcpy(destination, source, count, direction, default_stream);
}

cudaError_t CUDARTAPI cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    if (devPtr == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    SIM_RUNTIME_BIND_OR_RETURN();
    CUdeviceptr address;
    size_t size;
    cudaError_t status = sim_runtime_registered_variable(symbol, &address, &size);
    if (status == cudaSuccess)
        *devPtr = (void *)(uintptr_t)address;
    return sim_runtime_record(status);
}

cudaError_t CUDARTAPI cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (size == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    SIM_RUNTIME_BIND_OR_RETURN();
    CUdeviceptr address;
    return sim_runtime_record(sim_runtime_registered_variable(symbol, &address, size));
}

static cudaError_t function_of(const void *func, CUfunction *function)
{
    cudaError_t status = sim_runtime_bind_context();
    if (status != cudaSuccess)
        return status;
    return sim_runtime_registered_function(func, false, function);
}

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (attr == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUfunction function;
    cudaError_t status = function_of(func, &function);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    if (sim_runtime_driver.cuFuncGetAttribute == NULL)
        return sim_runtime_record(cudaErrorNotSupported);
    memset(attr, 0, sizeof *attr);
    const struct {
        CUfunction_attribute attribute;
        void *field;
        bool is_size;
    } fields[] = {
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &attr->sharedSizeBytes, true},
        {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &attr->constSizeBytes, true},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &attr->localSizeBytes, true},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &attr->maxThreadsPerBlock, false},
        {CU_FUNC_ATTRIBUTE_NUM_REGS, &attr->numRegs, false},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, &attr->ptxVersion, false},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, &attr->binaryVersion, false},
        {CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, &attr->cacheModeCA, false},
        {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &attr->maxDynamicSharedSizeBytes, false},
        {CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &attr->preferredShmemCarveout, false},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        int value = 0;
        CUresult result = sim_runtime_driver.cuFuncGetAttribute(&value, fields[i].attribute, function);
        if (result != CUDA_SUCCESS)
            return sim_runtime_record_driver(result);
        if (fields[i].is_size)
            *(size_t *)fields[i].field = (size_t)value;
        else
            *(int *)fields[i].field = value;
    }
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    CUfunction function;
    cudaError_t status = function_of(func, &function);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    CUfunction_attribute attribute;
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
        attribute = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        break;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        attribute = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
        break;
    default:
        return sim_runtime_record(cudaErrorInvalidValue);
    }
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuFuncSetAttribute, function, attribute, value);
}

cudaError_t CUDARTAPI cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
    CUfunction function;
    cudaError_t status = function_of(func, &function);
    if (status != cudaSuccess)
        return sim_runtime_record(status);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuFuncSetCacheConfig, function, (CUfunc_cache)cacheConfig);
}

/* Resident blocks per multiprocessor of the simulated device (sim_device.c:
 * 2048 threads, 32 blocks, 64K registers and 228 KiB of shared memory per
 * SM, 1 KiB of it reserved per block), computed as the occupancy
 * calculator does, so launch-size heuristics pick what they would on an H100. */
cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                               int blockSize, size_t dynamicSMemSize,
                                                                               unsigned int flags)
{
    if (numBlocks == NULL || blockSize <= 0 || (flags & ~1u) != 0)
        return sim_runtime_record(cudaErrorInvalidValue);
    struct cudaFuncAttributes attributes;
    cudaError_t status = cudaFuncGetAttributes(&attributes, func);
    if (status != cudaSuccess)
        return status;
    if (blockSize > attributes.maxThreadsPerBlock) {
        *numBlocks = 0;
        return cudaSuccess;
    }
    int warps = (blockSize + 31) / 32;
    int by_threads = 64 / warps;
    int registers_per_block = warps * 32 * (attributes.numRegs > 0 ? attributes.numRegs : 1);
    /* The register count is an estimate from PTX (a GPU's compiler would
     * spill to fit), and the simulator launches any block the thread limit
     * allows: registers never rule a block out. */
    int by_registers = registers_per_block > 65536 ? 1 : 65536 / registers_per_block;
    size_t shared = attributes.sharedSizeBytes + dynamicSMemSize + 1024;
    int by_shared = (int)(233472 / shared);
    int blocks = by_threads < 32 ? by_threads : 32;
    blocks = by_registers < blocks ? by_registers : blocks;
    blocks = by_shared < blocks ? by_shared : blocks;
    *numBlocks = blocks;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                                     size_t dynamicSMemSize)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

/* Reaching the driver the way NVIDIA's CUDA 13 runtime does: dlopen
 * libcuda.so.1, one dlsym of cuGetProcAddress_v2, and every other entry
 * point fetched through it. Never linking libcuda keeps the runtime loadable
 * over the simulated driver and over a real one alike, and lets an
 * interposer that hooks dlsym or cuGetProcAddress see every request. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "runtime_driver.h"

struct sim_runtime_driver sim_runtime_driver;

struct entry_point_request {
    const char *symbol;
    int version;
    size_t offset;
};

/* #field stringizes the base name before cuda.h's macros can add a suffix;
 * offsetof sees the expanded member name the struct declares. */
#define REQUEST(field, version) { #field, version, offsetof(struct sim_runtime_driver, field) }

static const struct entry_point_request driver_requests[] = {
    REQUEST(cuInit, 2000),
    REQUEST(cuGetProcAddress, 12000),
    REQUEST(cuDeviceGet, 2000),
    REQUEST(cuDeviceGetCount, 2000),
    REQUEST(cuDeviceGetName, 2000),
    REQUEST(cuDeviceTotalMem, 3020),
    REQUEST(cuDeviceGetAttribute, 2000),
    REQUEST(cuDriverGetVersion, 2020),
    REQUEST(cuDeviceGetUuid, 9020),
    REQUEST(cuDevicePrimaryCtxRetain, 7000),
    REQUEST(cuDevicePrimaryCtxRelease, 7000),
    REQUEST(cuDevicePrimaryCtxReset, 7000),
    /* At 11000: the _v2 variant, which also applies to an active context. */
    REQUEST(cuDevicePrimaryCtxSetFlags, 11000),
    REQUEST(cuDevicePrimaryCtxGetState, 7000),
    REQUEST(cuDeviceCanAccessPeer, 4000),
    REQUEST(cuCtxSetCurrent, 4000),
    REQUEST(cuCtxGetCurrent, 4000),
    REQUEST(cuCtxGetDevice, 2000),
    REQUEST(cuCtxSynchronize, 2000),
    REQUEST(cuMemGetInfo, 3020),
    REQUEST(cuMemAllocManaged, 6000),
    REQUEST(cuMemAlloc, 3020),
    REQUEST(cuMemAllocPitch, 3020),
    REQUEST(cuMemFree, 3020),
    REQUEST(cuDeviceGetDefaultMemPool, 11020),
    REQUEST(cuDeviceGetMemPool, 11020),
    REQUEST(cuDeviceSetMemPool, 11020),
    REQUEST(cuMemPoolCreate, 11020),
    REQUEST(cuMemPoolDestroy, 11020),
    REQUEST(cuMemPoolSetAttribute, 11020),
    REQUEST(cuMemPoolGetAttribute, 11020),
    REQUEST(cuMemPoolTrimTo, 11020),
    REQUEST(cuMemFreeHost, 2000),
    REQUEST(cuMemHostAlloc, 2020),
    REQUEST(cuMemHostRegister, 6050),
    REQUEST(cuMemHostUnregister, 4000),
    REQUEST(cuMemHostGetDevicePointer, 3020),
    REQUEST(cuPointerGetAttributes, 7000),
    REQUEST(cuEventCreate, 2000),
    REQUEST(cuEventQuery, 2000),
    REQUEST(cuEventSynchronize, 2000),
    REQUEST(cuEventDestroy, 4000),
    REQUEST(cuEventElapsedTime, 12080),
    REQUEST(cuStreamCreate, 2000),
    REQUEST(cuStreamCreateWithPriority, 5050),
    REQUEST(cuStreamDestroy, 4000),
    REQUEST(cuIpcGetMemHandle, 4010),
    REQUEST(cuIpcOpenMemHandle, 11000),
    REQUEST(cuIpcCloseMemHandle, 4010),
    REQUEST(cuGraphCreate, 10000),
    REQUEST(cuGraphDestroy, 10000),
    REQUEST(cuGraphGetNodes, 10000),
    REQUEST(cuGraphInstantiateWithFlags, 11040),
    REQUEST(cuGraphExecDestroy, 10000),
    REQUEST(cuThreadExchangeStreamCaptureMode, 10010),
    REQUEST(cuModuleLoadData, 2000),
    REQUEST(cuModuleUnload, 2000),
    REQUEST(cuModuleGetFunction, 2000),
    REQUEST(cuModuleGetGlobal, 3020),
    REQUEST(cuLinkCreate, 5050),
    REQUEST(cuLinkAddData, 5050),
    REQUEST(cuLinkComplete, 5050),
    REQUEST(cuLinkDestroy, 5050),
    REQUEST(cuFuncGetAttribute, 2020),
    REQUEST(cuFuncSetAttribute, 9000),
    REQUEST(cuFuncSetCacheConfig, 3000),
};

struct stream_entry_point_request {
    const char *symbol;
    int legacy_version;
    int per_thread_version;
    size_t offset;
};

#define STREAM_REQUEST(field, legacy_version, per_thread_version)                                   \
    { #field, legacy_version, per_thread_version,                                                  \
      offsetof(struct sim_runtime_stream_entry_points, field) }

static const struct stream_entry_point_request stream_requests[] = {
    STREAM_REQUEST(cuMemAllocAsync, 11020, 11020),
    STREAM_REQUEST(cuMemAllocFromPoolAsync, 11020, 11020),
    STREAM_REQUEST(cuMemFreeAsync, 11020, 11020),
    STREAM_REQUEST(cuMemcpy, 4000, 7000),
    STREAM_REQUEST(cuMemcpyAsync, 4000, 7000),
    STREAM_REQUEST(cuMemcpyHtoD, 3020, 7000),
    STREAM_REQUEST(cuMemcpyHtoDAsync, 3020, 7000),
    STREAM_REQUEST(cuMemcpyDtoH, 3020, 7000),
    STREAM_REQUEST(cuMemcpyDtoHAsync, 3020, 7000),
    STREAM_REQUEST(cuMemcpyDtoD, 3020, 7000),
    STREAM_REQUEST(cuMemcpyDtoDAsync, 3020, 7000),
    STREAM_REQUEST(cuMemcpy2DUnaligned, 3020, 7000),
    STREAM_REQUEST(cuMemcpy2DAsync, 3020, 7000),
    STREAM_REQUEST(cuMemsetD8, 3020, 7000),
    STREAM_REQUEST(cuMemsetD8Async, 3020, 7000),
    STREAM_REQUEST(cuLaunchHostFunc, 10000, 10000),
    STREAM_REQUEST(cuStreamAddCallback, 5000, 7000),
    STREAM_REQUEST(cuEventRecord, 2000, 7000),
    STREAM_REQUEST(cuEventRecordWithFlags, 11010, 11010),
    STREAM_REQUEST(cuStreamGetPriority, 5050, 7000),
    STREAM_REQUEST(cuStreamGetFlags, 5050, 7000),
    STREAM_REQUEST(cuStreamGetDevice, 12080, 12080),
    STREAM_REQUEST(cuStreamGetId, 12000, 12000),
    STREAM_REQUEST(cuStreamWaitEvent, 3020, 7000),
    STREAM_REQUEST(cuStreamSynchronize, 2000, 7000),
    STREAM_REQUEST(cuStreamQuery, 2000, 7000),
    STREAM_REQUEST(cuStreamBeginCapture, 10010, 10010),
    STREAM_REQUEST(cuStreamEndCapture, 10000, 10000),
    STREAM_REQUEST(cuStreamIsCapturing, 10000, 10000),
    STREAM_REQUEST(cuLaunchKernel, 4000, 7000),
    STREAM_REQUEST(cuLaunchCooperativeKernel, 9000, 9000),
    STREAM_REQUEST(cuGraphInstantiateWithParams, 12000, 12000),
    STREAM_REQUEST(cuGraphUpload, 11010, 11010),
    STREAM_REQUEST(cuGraphLaunch, 10000, 10000),
};

/* Stores the entry point, or NULL when the driver has none for this version:
 * a missing one only fails the runtime calls that need it. */
static void fetch_entry_point(PFN_cuGetProcAddress_v12000 resolve, const char *symbol, int version,
                              cuuint64_t flags, void *slot)
{
    void *function = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (resolve(symbol, &function, version, flags, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS)
        function = NULL;
    memcpy(slot, &function, sizeof function);
}

static cudaError_t load_driver(void)
{
    void *handle = dlopen("libcuda.so.1", RTLD_NOW);
    if (handle == NULL)
        return cudaErrorInsufficientDriver;
    void *resolver_symbol = dlsym(handle, "cuGetProcAddress_v2");
    if (resolver_symbol == NULL)
        return cudaErrorInsufficientDriver;
    PFN_cuGetProcAddress_v12000 resolve;
    memcpy(&resolve, &resolver_symbol, sizeof resolve);

    struct sim_runtime_driver *driver = &sim_runtime_driver;
    for (size_t index = 0; index < sizeof driver_requests / sizeof driver_requests[0]; index++) {
        const struct entry_point_request *request = &driver_requests[index];
        fetch_entry_point(resolve, request->symbol, request->version, CU_GET_PROC_ADDRESS_DEFAULT,
                          (char *)driver + request->offset);
    }
    for (size_t index = 0; index < sizeof stream_requests / sizeof stream_requests[0]; index++) {
        const struct stream_entry_point_request *request = &stream_requests[index];
        fetch_entry_point(resolve, request->symbol, request->legacy_version,
                          CU_GET_PROC_ADDRESS_DEFAULT, (char *)&driver->legacy + request->offset);
        fetch_entry_point(resolve, request->symbol, request->per_thread_version,
                          CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                          (char *)&driver->per_thread + request->offset);
    }

    /* Without these nothing works; every other entry point is checked where
     * it is called. */
    if (driver->cuInit == NULL || driver->cuDriverGetVersion == NULL || driver->cuDeviceGet == NULL ||
        driver->cuDeviceGetCount == NULL || driver->cuDevicePrimaryCtxRetain == NULL ||
        driver->cuDevicePrimaryCtxRelease == NULL || driver->cuDevicePrimaryCtxReset == NULL ||
        driver->cuCtxSetCurrent == NULL)
        return cudaErrorInsufficientDriver;
    int driver_version = 0;
    if (driver->cuDriverGetVersion(&driver_version) != CUDA_SUCCESS || driver_version < CUDART_VERSION)
        return cudaErrorInsufficientDriver;
    return sim_runtime_error_from_driver(driver->cuInit(0));
}

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_status;

static void load_driver_once(void)
{
    load_status = load_driver();
}

cudaError_t sim_runtime_load_driver(void)
{
    pthread_once(&load_once, load_driver_once);
    return load_status;
}

const struct sim_runtime_stream_entry_points *
sim_runtime_stream_entry_points(enum sim_runtime_default_stream default_stream)
{
    return default_stream == SIM_RUNTIME_PER_THREAD_STREAM ? &sim_runtime_driver.per_thread
                                                           : &sim_runtime_driver.legacy;
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    (void)sim_runtime_load_driver();
    /* Without a loadable driver the answer is 0, not an error. */
    *driverVersion = 0;
    if (sim_runtime_driver.cuDriverGetVersion == NULL)
        return cudaSuccess;
    return sim_runtime_record_driver(sim_runtime_driver.cuDriverGetVersion(driverVersion));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (runtimeVersion == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

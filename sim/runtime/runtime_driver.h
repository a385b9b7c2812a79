/* The driver entry points the simulated runtime calls, fetched once through
 * cuGetProcAddress_v2 with the versions and flags the real CUDA 13 runtime
 * requests (recorded from its calls to cuGetProcAddress_v2), so whatever
 * driver is loaded — the sim or a real libcuda.so.1 — hands out the same
 * variants it would hand to NVIDIA's libcudart. */
#ifndef SIM_RUNTIME_DRIVER_H
#define SIM_RUNTIME_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "runtime_internal.h"

/* Entry points the runtime fetches twice: with flags 0 (stream 0 is the legacy
 * default stream) and with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * (stream 0 is the calling thread's default stream). Field names are the
 * driver's base names; cuda.h's macros give the fields the same _v2 suffixes
 * they give the functions, which does not matter here. */
struct sim_runtime_stream_entry_points {
    PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
    PFN_cuMemAllocFromPoolAsync_v11020 cuMemAllocFromPoolAsync;
    PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
    PFN_cuMemcpy_v4000 cuMemcpy;
    PFN_cuMemcpyAsync_v4000 cuMemcpyAsync;
    PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
    PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH;
    PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD;
    PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync;
    PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync;
    PFN_cuMemcpyDtoDAsync_v3020 cuMemcpyDtoDAsync;
    PFN_cuMemcpy2DUnaligned_v3020 cuMemcpy2DUnaligned;
    PFN_cuMemcpy2DAsync_v3020 cuMemcpy2DAsync;
    PFN_cuMemsetD8_v3020 cuMemsetD8;
    PFN_cuMemsetD8Async_v3020 cuMemsetD8Async;
    PFN_cuLaunchHostFunc_v10000 cuLaunchHostFunc;
    PFN_cuStreamAddCallback_v5000 cuStreamAddCallback;
    PFN_cuEventRecord_v2000 cuEventRecord;
    PFN_cuEventRecordWithFlags_v11010 cuEventRecordWithFlags;
    PFN_cuStreamGetPriority_v5050 cuStreamGetPriority;
    PFN_cuStreamGetFlags_v5050 cuStreamGetFlags;
    PFN_cuStreamGetId_v12000 cuStreamGetId;
    PFN_cuStreamGetDevice_v12080 cuStreamGetDevice;
    PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuStreamQuery_v2000 cuStreamQuery;
    PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture;
    PFN_cuStreamEndCapture_v10000 cuStreamEndCapture;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel;
    PFN_cuLaunchCooperativeKernel_v9000 cuLaunchCooperativeKernel;
    PFN_cuGraphInstantiateWithParams_v12000 cuGraphInstantiateWithParams;
    PFN_cuGraphUpload_v11010 cuGraphUpload;
    PFN_cuGraphLaunch_v10000 cuGraphLaunch;
};

/* Entry points fetched once, with flags 0. */
struct sim_runtime_driver {
    /* The resolver as the runtime re-fetched it at 12000; cudaGetDriverEntryPoint*
     * go through this copy, as NVIDIA's runtime does. */
    PFN_cuGetProcAddress_v12000 cuGetProcAddress;
    PFN_cuInit_v2000 cuInit;
    PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGetName_v2000 cuDeviceGetName;
    PFN_cuDeviceTotalMem_v3020 cuDeviceTotalMem;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuDeviceGetUuid_v9020 cuDeviceGetUuid;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    /* Requested at 7000, which yields the v1 symbols; their signatures equal
     * the _v2 ones the public typedefs describe. */
    PFN_cuDevicePrimaryCtxRelease_v11000 cuDevicePrimaryCtxRelease;
    PFN_cuDevicePrimaryCtxReset_v11000 cuDevicePrimaryCtxReset;
    PFN_cuDevicePrimaryCtxSetFlags_v11000 cuDevicePrimaryCtxSetFlags;
    PFN_cuDevicePrimaryCtxGetState_v7000 cuDevicePrimaryCtxGetState;
    PFN_cuDeviceCanAccessPeer_v4000 cuDeviceCanAccessPeer;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
    PFN_cuCtxSynchronize_v2000 cuCtxSynchronize;
    PFN_cuMemGetInfo_v3020 cuMemGetInfo;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemAllocPitch_v3020 cuMemAllocPitch;
    PFN_cuMemAllocManaged_v6000 cuMemAllocManaged;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuDeviceGetDefaultMemPool_v11020 cuDeviceGetDefaultMemPool;
    PFN_cuDeviceGetMemPool_v11020 cuDeviceGetMemPool;
    PFN_cuDeviceSetMemPool_v11020 cuDeviceSetMemPool;
    PFN_cuMemPoolCreate_v11020 cuMemPoolCreate;
    PFN_cuMemPoolDestroy_v11020 cuMemPoolDestroy;
    PFN_cuMemPoolSetAttribute_v11020 cuMemPoolSetAttribute;
    PFN_cuMemPoolGetAttribute_v11020 cuMemPoolGetAttribute;
    PFN_cuMemPoolTrimTo_v11020 cuMemPoolTrimTo;
    PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
    PFN_cuMemFreeHost_v2000 cuMemFreeHost;
    PFN_cuMemHostRegister_v6050 cuMemHostRegister;
    PFN_cuMemHostUnregister_v4000 cuMemHostUnregister;
    PFN_cuMemHostGetDevicePointer_v3020 cuMemHostGetDevicePointer;
    PFN_cuPointerGetAttributes_v7000 cuPointerGetAttributes;
    PFN_cuIpcGetMemHandle_v4010 cuIpcGetMemHandle;
    PFN_cuIpcOpenMemHandle_v11000 cuIpcOpenMemHandle;
    PFN_cuIpcCloseMemHandle_v4010 cuIpcCloseMemHandle;
    PFN_cuStreamCreate_v2000 cuStreamCreate;
    PFN_cuStreamCreateWithPriority_v5050 cuStreamCreateWithPriority;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy;
    PFN_cuEventCreate_v2000 cuEventCreate;
    PFN_cuEventQuery_v2000 cuEventQuery;
    PFN_cuEventSynchronize_v2000 cuEventSynchronize;
    PFN_cuEventDestroy_v4000 cuEventDestroy;
    PFN_cuEventElapsedTime_v12080 cuEventElapsedTime;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 cuThreadExchangeStreamCaptureMode;
    PFN_cuGraphCreate_v10000 cuGraphCreate;
    PFN_cuGraphDestroy_v10000 cuGraphDestroy;
    PFN_cuGraphGetNodes_v10000 cuGraphGetNodes;
    PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags;
    PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy;
    PFN_cuModuleLoadData_v2000 cuModuleLoadData;
    PFN_cuModuleUnload_v2000 cuModuleUnload;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
    PFN_cuModuleGetGlobal_v3020 cuModuleGetGlobal;
    /* Requested at 5050, as NVIDIA's runtime does (it links separately
     * compiled device code); the v1 signatures equal the v6050 typedefs. */
    PFN_cuLinkCreate_v6050 cuLinkCreate;
    PFN_cuLinkAddData_v6050 cuLinkAddData;
    PFN_cuLinkComplete_v5050 cuLinkComplete;
    PFN_cuLinkDestroy_v5050 cuLinkDestroy;
    PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute;
    PFN_cuFuncSetCacheConfig_v3000 cuFuncSetCacheConfig;

    struct sim_runtime_stream_entry_points legacy;
    struct sim_runtime_stream_entry_points per_thread;
};

/* The driver function of a kernel registered by nvcc's host code, found by
 * its host stub (or by the handle __cudaGetKernel gave out when `by_handle`);
 * loads the kernel's module into the current context on first use. */
cudaError_t sim_runtime_registered_function(const void *stub_or_handle, bool by_handle, CUfunction *function);

/* The device address and size of a registered __device__/__constant__
 * variable, found by its host shadow; loads its module on first use. */
cudaError_t sim_runtime_registered_variable(const void *symbol, CUdeviceptr *address, size_t *size);

/* Filled by sim_runtime_load_driver(); read-only afterwards. */
extern struct sim_runtime_driver sim_runtime_driver;

/* The stream-taking entry points for the given default-stream flavour. */
const struct sim_runtime_stream_entry_points *
sim_runtime_stream_entry_points(enum sim_runtime_default_stream default_stream);

/* The driver handle of a runtime device ordinal, after checking the ordinal. */
cudaError_t sim_runtime_device_handle(int device, CUdevice *handle);

/* The runtime error a driver result becomes. */
cudaError_t sim_runtime_error_from_driver(CUresult result);

/* Maps a driver result, records it when it is an error, and returns it. */
cudaError_t sim_runtime_record_driver(CUresult result);

/* Calls a fetched driver entry point, or fails with cudaErrorNotSupported
 * when the loaded driver did not provide it. */
#define SIM_RUNTIME_CALL(entry_point, ...)                                                         \
    ((entry_point) == NULL ? sim_runtime_record(cudaErrorNotSupported)                             \
                           : sim_runtime_record_driver((entry_point)(__VA_ARGS__)))

/* Makes a context current or returns (and records) why that failed. */
#define SIM_RUNTIME_BIND_OR_RETURN()                                                               \
    do {                                                                                           \
        cudaError_t bind_status_ = sim_runtime_bind_context();                                     \
        if (bind_status_ != cudaSuccess)                                                           \
            return sim_runtime_record(bind_status_);                                               \
    } while (0)

#endif

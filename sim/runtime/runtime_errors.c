/* Runtime error codes: their names and descriptions, how driver results turn
 * into them, and the per-thread "last error" that cudaGetLastError reports. */
#include <stddef.h>

#include "runtime_driver.h"

struct runtime_error_description {
    cudaError_t code;
    const char *name;
    const char *description;
};

#define ERROR_ENTRY(code, description) { code, #code, description }

/* Every code of the CUDA 13 cudaError enum. The numbers of the driver's
 * CUresult codes coincide with the runtime codes that mean the same thing,
 * which is what sim_runtime_error_from_driver relies on. */
static const struct runtime_error_description runtime_errors[] = {
    ERROR_ENTRY(cudaSuccess, "no error"),
    ERROR_ENTRY(cudaErrorInvalidValue, "invalid argument"),
    ERROR_ENTRY(cudaErrorMemoryAllocation, "out of memory"),
    ERROR_ENTRY(cudaErrorInitializationError, "initialization error"),
    ERROR_ENTRY(cudaErrorCudartUnloading, "driver shutting down"),
    ERROR_ENTRY(cudaErrorProfilerDisabled, "profiler disabled while using external profiling tool"),
    ERROR_ENTRY(cudaErrorProfilerNotInitialized, "profiler not initialized"),
    ERROR_ENTRY(cudaErrorProfilerAlreadyStarted, "profiler already started"),
    ERROR_ENTRY(cudaErrorProfilerAlreadyStopped, "profiler already stopped"),
    ERROR_ENTRY(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    ERROR_ENTRY(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    ERROR_ENTRY(cudaErrorInvalidSymbol, "invalid device symbol"),
    ERROR_ENTRY(cudaErrorInvalidHostPointer, "invalid host pointer"),
    ERROR_ENTRY(cudaErrorInvalidDevicePointer, "invalid device pointer"),
    ERROR_ENTRY(cudaErrorInvalidTexture, "invalid texture reference"),
    ERROR_ENTRY(cudaErrorInvalidTextureBinding, "texture is not bound to a pointer"),
    ERROR_ENTRY(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor"),
    ERROR_ENTRY(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    ERROR_ENTRY(cudaErrorAddressOfConstant, "invalid address of constant"),
    ERROR_ENTRY(cudaErrorTextureFetchFailed, "fetch from texture failed"),
    ERROR_ENTRY(cudaErrorTextureNotBound, "cannot fetch from a texture that is not bound"),
    ERROR_ENTRY(cudaErrorSynchronizationError, "incorrect use of __syncthreads()"),
    ERROR_ENTRY(cudaErrorInvalidFilterSetting, "linear filtering not supported for non-float type"),
    ERROR_ENTRY(cudaErrorInvalidNormSetting, "read as normalized float not supported for 32-bit non-float type"),
    ERROR_ENTRY(cudaErrorMixedDeviceExecution, "device emulation mode and device execution mode cannot be mixed"),
    ERROR_ENTRY(cudaErrorNotYetImplemented, "feature not yet implemented"),
    ERROR_ENTRY(cudaErrorMemoryValueTooLarge, "memory size or pointer value too large to fit in 32 bit"),
    ERROR_ENTRY(cudaErrorStubLibrary, "CUDA driver is a stub library"),
    ERROR_ENTRY(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    ERROR_ENTRY(cudaErrorCallRequiresNewerDriver, "API call is not supported in the installed CUDA driver"),
    ERROR_ENTRY(cudaErrorInvalidSurface, "invalid surface reference"),
    ERROR_ENTRY(cudaErrorDuplicateVariableName, "duplicate global variable looked up by string name"),
    ERROR_ENTRY(cudaErrorDuplicateTextureName, "duplicate texture looked up by string name"),
    ERROR_ENTRY(cudaErrorDuplicateSurfaceName, "duplicate surface looked up by string name"),
    ERROR_ENTRY(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable"),
    ERROR_ENTRY(cudaErrorIncompatibleDriverContext, "the current context was not created by the runtime"),
    ERROR_ENTRY(cudaErrorMissingConfiguration, "kernel launch without a launch configuration"),
    ERROR_ENTRY(cudaErrorPriorLaunchFailure, "a previous kernel launch failed"),
    ERROR_ENTRY(cudaErrorLaunchMaxDepthExceeded, "device-side launch nesting is too deep"),
    ERROR_ENTRY(cudaErrorLaunchFileScopedTex, "a device-side launch used a file-scoped texture"),
    ERROR_ENTRY(cudaErrorLaunchFileScopedSurf, "a device-side launch used a file-scoped surface"),
    ERROR_ENTRY(cudaErrorSyncDepthExceeded, "device-side synchronization nesting is too deep"),
    ERROR_ENTRY(cudaErrorLaunchPendingCountExceeded, "too many pending device-side launches"),
    ERROR_ENTRY(cudaErrorInvalidDeviceFunction, "invalid device function"),
    ERROR_ENTRY(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    ERROR_ENTRY(cudaErrorInvalidDevice, "invalid device ordinal"),
    ERROR_ENTRY(cudaErrorDeviceNotLicensed, "device doesn't have valid Grid license"),
    ERROR_ENTRY(cudaErrorSoftwareValidityNotEstablished, "integrity checks of the CUDA software failed"),
    ERROR_ENTRY(cudaErrorStartupFailure, "startup failure in cuda runtime"),
    ERROR_ENTRY(cudaErrorInvalidKernelImage, "device kernel image is invalid"),
    ERROR_ENTRY(cudaErrorDeviceUninitialized, "invalid device context"),
    ERROR_ENTRY(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"),
    ERROR_ENTRY(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed"),
    ERROR_ENTRY(cudaErrorArrayIsMapped, "array is mapped"),
    ERROR_ENTRY(cudaErrorAlreadyMapped, "resource already mapped"),
    ERROR_ENTRY(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
    ERROR_ENTRY(cudaErrorAlreadyAcquired, "resource already acquired"),
    ERROR_ENTRY(cudaErrorNotMapped, "resource not mapped"),
    ERROR_ENTRY(cudaErrorNotMappedAsArray, "resource not mapped as array"),
    ERROR_ENTRY(cudaErrorNotMappedAsPointer, "resource not mapped as pointer"),
    ERROR_ENTRY(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered"),
    ERROR_ENTRY(cudaErrorUnsupportedLimit, "limit is not supported on this architecture"),
    ERROR_ENTRY(cudaErrorDeviceAlreadyInUse, "exclusive-thread device already in use by a different thread"),
    ERROR_ENTRY(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices"),
    ERROR_ENTRY(cudaErrorInvalidPtx, "a PTX JIT compilation failed"),
    ERROR_ENTRY(cudaErrorInvalidGraphicsContext, "invalid OpenGL or DirectX context"),
    ERROR_ENTRY(cudaErrorNvlinkUncorrectable, "uncorrectable NVLink error detected during the execution"),
    ERROR_ENTRY(cudaErrorJitCompilerNotFound, "PTX JIT compiler library not found"),
    ERROR_ENTRY(cudaErrorUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported toolchain"),
    ERROR_ENTRY(cudaErrorJitCompilationDisabled, "PTX JIT compilation was disabled"),
    ERROR_ENTRY(cudaErrorUnsupportedExecAffinity, "the provided execution affinity is not supported"),
    ERROR_ENTRY(cudaErrorUnsupportedDevSideSync, "device-side synchronization is not supported by this kernel"),
    ERROR_ENTRY(cudaErrorContained, "an exception was contained to the faulting kernel"),
    ERROR_ENTRY(cudaErrorInvalidSource, "device kernel image is invalid"),
    ERROR_ENTRY(cudaErrorFileNotFound, "file not found"),
    ERROR_ENTRY(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found"),
    ERROR_ENTRY(cudaErrorSharedObjectInitFailed, "shared object initialization failed"),
    ERROR_ENTRY(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS"),
    ERROR_ENTRY(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    ERROR_ENTRY(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    ERROR_ENTRY(cudaErrorLossyQuery, "attempted introspection would be semantically lossy"),
    ERROR_ENTRY(cudaErrorSymbolNotFound, "named symbol not found"),
    ERROR_ENTRY(cudaErrorNotReady, "device not ready"),
    ERROR_ENTRY(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    ERROR_ENTRY(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    ERROR_ENTRY(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
    ERROR_ENTRY(cudaErrorLaunchIncompatibleTexturing, "launch uses incompatible texturing mode"),
    ERROR_ENTRY(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"),
    ERROR_ENTRY(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"),
    ERROR_ENTRY(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process"),
    ERROR_ENTRY(cudaErrorContextIsDestroyed, "context is destroyed"),
    ERROR_ENTRY(cudaErrorAssert, "device-side assert triggered"),
    ERROR_ENTRY(cudaErrorTooManyPeers, "peer mapping resources exhausted"),
    ERROR_ENTRY(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
    ERROR_ENTRY(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
    ERROR_ENTRY(cudaErrorHardwareStackError, "hardware stack error"),
    ERROR_ENTRY(cudaErrorIllegalInstruction, "an illegal instruction was encountered"),
    ERROR_ENTRY(cudaErrorMisalignedAddress, "misaligned address"),
    ERROR_ENTRY(cudaErrorInvalidAddressSpace, "operation not supported on global/shared address space"),
    ERROR_ENTRY(cudaErrorInvalidPc, "invalid program counter"),
    ERROR_ENTRY(cudaErrorLaunchFailure, "unspecified launch failure"),
    ERROR_ENTRY(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch"),
    ERROR_ENTRY(cudaErrorTensorMemoryLeak, "tensor memory not completely freed"),
    ERROR_ENTRY(cudaErrorNotPermitted, "operation not permitted"),
    ERROR_ENTRY(cudaErrorNotSupported, "operation not supported"),
    ERROR_ENTRY(cudaErrorSystemNotReady, "system not yet initialized"),
    ERROR_ENTRY(cudaErrorSystemDriverMismatch, "system has unsupported display driver / cuda driver combination"),
    ERROR_ENTRY(cudaErrorCompatNotSupportedOnDevice, "forward compatibility was attempted on non supported HW"),
    ERROR_ENTRY(cudaErrorMpsConnectionFailed, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    ERROR_ENTRY(cudaErrorMpsRpcFailure, "the remote procedural call between the MPS server and the MPS client failed"),
    ERROR_ENTRY(cudaErrorMpsServerNotReady, "MPS server is not ready to accept new MPS client requests"),
    ERROR_ENTRY(cudaErrorMpsMaxClientsReached, "the hardware resources required to create MPS client have been exhausted"),
    ERROR_ENTRY(cudaErrorMpsMaxConnectionsReached, "the hardware resources required to support device connections have been exhausted"),
    ERROR_ENTRY(cudaErrorMpsClientTerminated, "the MPS client has been terminated by the server"),
    ERROR_ENTRY(cudaErrorCdpNotSupported, "the module is using CUDA Dynamic Parallelism, which is not supported"),
    ERROR_ENTRY(cudaErrorCdpVersionMismatch, "the module uses CUDA Dynamic Parallelism from a different toolkit version"),
    ERROR_ENTRY(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
    ERROR_ENTRY(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture"),
    ERROR_ENTRY(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences"),
    ERROR_ENTRY(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began"),
    ERROR_ENTRY(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work"),
    ERROR_ENTRY(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream"),
    ERROR_ENTRY(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream"),
    ERROR_ENTRY(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream"),
    ERROR_ENTRY(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread"),
    ERROR_ENTRY(cudaErrorTimeout, "wait operation timed out"),
    ERROR_ENTRY(cudaErrorGraphExecUpdateFailure, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    ERROR_ENTRY(cudaErrorExternalDevice, "an async error has occurred in external entity outside of CUDA"),
    ERROR_ENTRY(cudaErrorInvalidClusterSize, "a kernel launch error has occurred due to cluster misconfiguration"),
    ERROR_ENTRY(cudaErrorFunctionNotLoaded, "the function handle is not loaded when calling an API that requires a loaded function"),
    ERROR_ENTRY(cudaErrorInvalidResourceType, "one or more of the passed resource types are invalid"),
    ERROR_ENTRY(cudaErrorInvalidResourceConfiguration, "one or more of the passed resources are in an invalid configuration"),
    ERROR_ENTRY(cudaErrorUnknown, "unknown error"),
};

static const char unrecognized_error[] = "unrecognized error code";

static const struct runtime_error_description *find_error(cudaError_t code)
{
    for (size_t index = 0; index < sizeof runtime_errors / sizeof runtime_errors[0]; index++)
        if (runtime_errors[index].code == code)
            return &runtime_errors[index];
    return NULL;
}

cudaError_t sim_runtime_error_from_driver(CUresult result)
{
    /* Both enums number a shared meaning identically; driver codes the
     * runtime has no counterpart for (e.g. CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
     * CUDA_ERROR_KEY_ROTATION) surface as cudaErrorUnknown. */
    const struct runtime_error_description *known = find_error((cudaError_t)result);
    return known != NULL ? known->code : cudaErrorUnknown;
}

static _Thread_local cudaError_t thread_last_error = cudaSuccess;

cudaError_t sim_runtime_record(cudaError_t error)
{
    if (error != cudaSuccess && error != cudaErrorNotReady)
        thread_last_error = error;
    return error;
}

cudaError_t sim_runtime_record_driver(CUresult result)
{
    return sim_runtime_record(sim_runtime_error_from_driver(result));
}

cudaError_t CUDARTAPI cudaGetLastError(void)
{
    cudaError_t error = thread_last_error;
    thread_last_error = cudaSuccess;
    return error;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
    return thread_last_error;
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
    const struct runtime_error_description *known = find_error(error);
    return known != NULL ? known->name : unrecognized_error;
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
    const struct runtime_error_description *known = find_error(error);
    return known != NULL ? known->description : unrecognized_error;
}

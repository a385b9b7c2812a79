/* Error names, descriptions and the driver-to-runtime error mapping. */
#include <string.h>

#include "runtime_driver.h"
#include "runtime_test_support.h"

Test(runtime_errors, names_match_the_enumerator_spelling)
{
    cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorNoKernelImageForDevice), "cudaErrorNoKernelImageForDevice");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorStreamCaptureUnsupported),
                     "cudaErrorStreamCaptureUnsupported");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorUnknown), "cudaErrorUnknown");
}

Test(runtime_errors, descriptions_are_the_familiar_ones)
{
    cr_assert_str_eq(cudaGetErrorString(cudaSuccess), "no error");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected");
}

Test(runtime_errors, every_code_from_0_to_1000_has_a_distinct_name_or_is_unrecognized)
{
    int named = 0;
    for (int code = 0; code <= 1000; code++) {
        const char *name = cudaGetErrorName((cudaError_t)code);
        const char *description = cudaGetErrorString((cudaError_t)code);
        cr_assert_not_null(name);
        cr_assert_not_null(description);
        if (strcmp(name, "unrecognized error code") == 0) {
            cr_assert_str_eq(description, "unrecognized error code", "code %d", code);
            continue;
        }
        named++;
        cr_assert(strncmp(name, "cuda", 4) == 0, "code %d is named %s", code, name);
        for (int other = 0; other < code; other++)
            cr_assert_str_neq(name, cudaGetErrorName((cudaError_t)other), "codes %d and %d share a name",
                              code, other);
    }
    /* The CUDA 13 header defines 133 codes in this range, cudaSuccess included. */
    cr_assert_eq(named, 133);
}

Test(runtime_errors, unknown_codes_are_unrecognized)
{
    cr_assert_str_eq(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
    cr_assert_str_eq(cudaGetErrorString((cudaError_t)-1), "unrecognized error code");
}

struct driver_to_runtime {
    CUresult driver;
    cudaError_t runtime;
};

Test(runtime_errors, driver_results_map_to_the_runtime_codes_of_the_same_meaning)
{
    static const struct driver_to_runtime expected[] = {
        { CUDA_SUCCESS, cudaSuccess },
        { CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue },
        { CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation },
        { CUDA_ERROR_NOT_INITIALIZED, cudaErrorInitializationError },
        { CUDA_ERROR_DEINITIALIZED, cudaErrorCudartUnloading },
        { CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice },
        { CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice },
        { CUDA_ERROR_INVALID_CONTEXT, cudaErrorDeviceUninitialized },
        { CUDA_ERROR_NO_BINARY_FOR_GPU, cudaErrorNoKernelImageForDevice },
        { CUDA_ERROR_INVALID_HANDLE, cudaErrorInvalidResourceHandle },
        { CUDA_ERROR_NOT_FOUND, cudaErrorSymbolNotFound },
        { CUDA_ERROR_NOT_READY, cudaErrorNotReady },
        { CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress },
        { CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, cudaErrorSetOnActiveProcess },
        { CUDA_ERROR_LAUNCH_FAILED, cudaErrorLaunchFailure },
        { CUDA_ERROR_NOT_PERMITTED, cudaErrorNotPermitted },
        { CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported },
        { CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cudaErrorStreamCaptureUnsupported },
        { CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cudaErrorStreamCaptureInvalidated },
        { CUDA_ERROR_CAPTURED_EVENT, cudaErrorCapturedEvent },
        { CUDA_ERROR_STUB_LIBRARY, cudaErrorStubLibrary },
        { CUDA_ERROR_UNKNOWN, cudaErrorUnknown },
    };
    for (size_t index = 0; index < sizeof expected / sizeof expected[0]; index++)
        cr_assert_eq(sim_runtime_error_from_driver(expected[index].driver), expected[index].runtime,
                     "driver %d became %s", (int)expected[index].driver,
                     cudaGetErrorName(sim_runtime_error_from_driver(expected[index].driver)));
}

Test(runtime_errors, driver_results_without_a_runtime_counterpart_are_unknown)
{
    cr_assert_eq(sim_runtime_error_from_driver(CUDA_ERROR_CONTEXT_ALREADY_CURRENT), cudaErrorUnknown);
    cr_assert_eq(sim_runtime_error_from_driver(CUDA_ERROR_KEY_ROTATION), cudaErrorUnknown);
    cr_assert_eq(sim_runtime_error_from_driver((CUresult)4242), cudaErrorUnknown);
}

/* The driver API without the runtime: a module loaded from a PTX file (the
 * path is argv[1]) with cuModuleLoad, its kernels found with
 * cuModuleGetFunction and launched with cuLaunchKernel, and its __device__
 * variables written and read through cuModuleGetGlobal. It runs first in the
 * device's primary context (cuDevicePrimaryCtxRetain, cuCtxSetCurrent) and
 * then in a context of its own (cuCtxCreate, CUDA 13's cuCtxCreate_v4 with
 * zeroed parameters). Prints a short summary; exits 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS) {                                                             \
            const char *name_ = NULL;                                                              \
            cuGetErrorName(result_, &name_);                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
                    name_ != NULL ? name_ : "unknown error");                                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Loads the module into the current context and runs both kernels; returns
 * how many results were wrong. */
static int run_module(const char *ptx_path, int factor, const char *context_name)
{
    CUmodule module;
    CHECK(cuModuleLoad(&module, ptx_path));
    CUfunction scale_add, iota, missing;
    CHECK(cuModuleGetFunction(&scale_add, module, "scale_add"));
    CHECK(cuModuleGetFunction(&iota, module, "iota"));
    if (cuModuleGetFunction(&missing, module, "no_such_kernel") != CUDA_ERROR_NOT_FOUND) {
        printf("%s: a missing kernel was found\n", context_name);
        return 1;
    }

    CUdeviceptr factor_address, blocks_address;
    size_t factor_size = 0, blocks_size = 0;
    CHECK(cuModuleGetGlobal(&factor_address, &factor_size, module, "scale_factor"));
    CHECK(cuModuleGetGlobal(&blocks_address, &blocks_size, module, "blocks_run"));
    int wrong = 0;
    if (factor_size != sizeof(int) || blocks_size != sizeof(unsigned)) {
        printf("%s: globals of %zu and %zu bytes\n", context_name, factor_size, blocks_size);
        wrong++;
    }
    CHECK(cuMemcpyHtoD(factor_address, &factor, sizeof factor));
    unsigned zero = 0;
    CHECK(cuMemcpyHtoD(blocks_address, &zero, sizeof zero));

    enum { n = 50000, threads = 128 };
    static float x[n], y[n], result[n];
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 101);
        y[i] = (float)(i % 7) - 3.0f;
    }
    CUdeviceptr device_x, device_y, device_ints;
    CHECK(cuMemAlloc(&device_x, sizeof x));
    CHECK(cuMemAlloc(&device_y, sizeof y));
    CHECK(cuMemAlloc(&device_ints, n * sizeof(int)));
    CHECK(cuMemcpyHtoD(device_x, x, sizeof x));
    CHECK(cuMemcpyHtoD(device_y, y, sizeof y));

    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int count = n;
    unsigned blocks = (n + threads - 1) / threads;
    void *scale_args[] = { &device_x, &device_y, &count };
    CHECK(cuLaunchKernel(scale_add, blocks, 1, 1, threads, 1, 1, 0, stream, scale_args, NULL));
    /* The other way to pass parameters: one packed buffer. */
    struct {
        CUdeviceptr out;
        int n;
        int start;
    } iota_params = { device_ints, n, -1000 };
    size_t iota_size = sizeof iota_params;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &iota_params, CU_LAUNCH_PARAM_BUFFER_SIZE, &iota_size,
                      CU_LAUNCH_PARAM_END };
    CHECK(cuLaunchKernel(iota, 32, 1, 1, threads, 1, 1, 0, stream, NULL, extra));
    CHECK(cuStreamSynchronize(stream));

    static int ints[n];
    unsigned blocks_run = 0;
    CHECK(cuMemcpyDtoH(result, device_y, sizeof result));
    CHECK(cuMemcpyDtoH(ints, device_ints, sizeof ints));
    CHECK(cuMemcpyDtoH(&blocks_run, blocks_address, sizeof blocks_run));
    for (int i = 0; i < n; i++) {
        if (result[i] != (float)factor * x[i] + y[i])
            wrong++;
        if (ints[i] != i - 1000)
            wrong++;
    }
    if (blocks_run != blocks) {
        printf("%s: %u blocks counted, %u launched\n", context_name, blocks_run, blocks);
        wrong++;
    }
    CHECK(cuStreamDestroy(stream));
    CHECK(cuMemFree(device_x));
    CHECK(cuMemFree(device_y));
    CHECK(cuMemFree(device_ints));
    CHECK(cuModuleUnload(module));
    printf("%s: scale_add over %d values by %d and iota %s\n", context_name, n, factor,
           wrong ? "WRONG" : "correct");
    return wrong;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]);
        return 2;
    }
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    if (count < 1) {
        printf("driver_module: no device\n");
        return 1;
    }
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));

    CUcontext primary;
    CHECK(cuDevicePrimaryCtxRetain(&primary, device));
    CHECK(cuCtxSetCurrent(primary));
    int wrong = run_module(argv[1], 3, "primary context");
    CHECK(cuCtxSetCurrent(NULL));
    CHECK(cuDevicePrimaryCtxRelease(device));

    /* CUDA 13's cuCtxCreate takes creation parameters; zeroed ones ask for
     * nothing beyond an ordinary context. */
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext own;
    CHECK(cuCtxCreate(&own, &params, 0, device));
    CUcontext current = NULL;
    CHECK(cuCtxGetCurrent(&current));
    if (current != own) {
        printf("created context: not made current\n");
        wrong++;
    }
    wrong += run_module(argv[1], -2, "created context");
    CHECK(cuCtxDestroy(own));

    if (wrong) {
        printf("driver_module: %d results wrong\n", wrong);
        return 1;
    }
    printf("driver_module: module loaded, launched and read back in 2 contexts\n");
    return 0;
}

/* Interpreter throughput: thread-instructions per CPU-second on three
 * kernels nvcc compiled (benchmark_kernels.cu -> benchmark_kernels.ptx): a
 * shuffle-and-shared-memory reduction, a 16x16-tiled shared-memory matrix
 * multiply, and a memory-bound saxpy. CPU time of the whole process is
 * the denominator, so the figure is per core whatever the machine's load
 * and thread count. Checks each result, so a fast wrong interpreter fails.
 *
 * Usage: benchmark_ptx PTX_FILE [SCALE]   (SCALE multiplies the work, default 1) */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpusim.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS) {                                                             \
            const char *name_ = "?";                                                               \
            cuGetErrorName(result_, &name_);                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, name_);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double cpu_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

static double wall_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

struct measurement {
    double cpu, wall;
    unsigned long long instructions;
};

static struct measurement start_measurement(void)
{
    CHECK(cuCtxSynchronize());
    return (struct measurement){cpu_seconds(), wall_seconds(), gpusim_thread_instructions()};
}

static void report(const char *name, struct measurement start)
{
    CHECK(cuCtxSynchronize());
    double cpu = cpu_seconds() - start.cpu, wall = wall_seconds() - start.wall;
    unsigned long long instructions = gpusim_thread_instructions() - start.instructions;
    printf("%-8s %12llu thread-instructions  %7.3f s CPU  %7.3f s wall  %8.1f M/s per core  %8.1f M/s\n", name,
           instructions, cpu, wall, instructions / cpu / 1e6, instructions / wall / 1e6);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PTX_FILE [SCALE]\n", argv[0]);
        return 2;
    }
    int scale = argc > 2 ? atoi(argv[2]) : 1;
    CUcontext context;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&context, 0));
    CHECK(cuCtxSetCurrent(context));
    CUmodule module;
    CHECK(cuModuleLoad(&module, argv[1]));
    CUfunction reduce, matmul, saxpy;
    CHECK(cuModuleGetFunction(&reduce, module, "reduce"));
    CHECK(cuModuleGetFunction(&matmul, module, "matmul"));
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

    int n = 1 << 20;
    float *host = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++)
        host[i] = (float)(i % 16);
    CUdeviceptr in, out, x, y;
    CHECK(cuMemAlloc(&in, n * sizeof(float)));
    CHECK(cuMemAlloc(&out, sizeof(float)));
    CHECK(cuMemcpyHtoD(in, host, n * sizeof(float)));

    struct measurement start = start_measurement();
    for (int r = 0; r < 4 * scale; r++) {
        CHECK(cuMemsetD32(out, 0, 1));
        void *params[] = {&in, &out, &n};
        CHECK(cuLaunchKernel(reduce, 128, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    }
    report("reduce", start);
    float sum;
    CHECK(cuMemcpyDtoH(&sum, out, sizeof sum));
    if (sum != 7.5f * n) {
        fprintf(stderr, "reduce: %f, expected %f\n", sum, 7.5f * n);
        return 1;
    }

    int size = 256;
    CUdeviceptr a, b, c;
    CHECK(cuMemAlloc(&a, size * size * sizeof(float)));
    CHECK(cuMemAlloc(&b, size * size * sizeof(float)));
    CHECK(cuMemAlloc(&c, size * size * sizeof(float)));
    CHECK(cuMemcpyHtoD(a, host, size * size * sizeof(float)));
    CHECK(cuMemcpyHtoD(b, host, size * size * sizeof(float)));
    start = start_measurement();
    for (int r = 0; r < scale; r++) {
        void *params[] = {&a, &b, &c, &size};
        CHECK(cuLaunchKernel(matmul, size / 16, size / 16, 1, 16, 16, 1, 0, NULL, params, NULL));
    }
    report("matmul", start);
    float corner;
    CHECK(cuMemcpyDtoH(&corner, c, sizeof corner));
    float expected = 0;
    for (int i = 0; i < size; i++)
        expected += host[i] * host[i * size];
    if (corner != expected) {
        fprintf(stderr, "matmul: c[0] = %f, expected %f\n", corner, expected);
        return 1;
    }

    CHECK(cuMemAlloc(&x, n * sizeof(float)));
    CHECK(cuMemAlloc(&y, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(x, host, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(y, host, n * sizeof(float)));
    float factor = 2.0f;
    start = start_measurement();
    for (int r = 0; r < 4 * scale; r++) {
        void *params[] = {&factor, &x, &y, &n};
        CHECK(cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    }
    report("saxpy", start);
    float last;
    CHECK(cuMemcpyDtoH(&last, y + (n - 1) * sizeof(float), sizeof last));
    if (last != host[n - 1] * (1.0f + 2.0f * 4 * scale)) {
        fprintf(stderr, "saxpy: y[n-1] = %f\n", last);
        return 1;
    }
    free(host);
    CHECK(cuModuleUnload(module));
    return 0;
}

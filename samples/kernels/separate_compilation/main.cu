// Separate compilation: the kernel calls device functions and uses
// __device__ and __constant__ variables of the other two files, and the host
// sets them with cudaMemcpyToSymbol through the declarations here. Every
// result is checked against the host's; a wrong one exits with status 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../sample_check.h"
#include "separate_compilation.h"

__global__ void apply(const float *x, float *curve, int *ints, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // Like transform.cu's, this format string is a private `$str` of the
    // file's PTX: the two must not be mixed up.
    if (i == 0)
        printf("apply: %d elements\n", n);
    if (i < n) {
        curve[i] = polynomial(x[i]);
        ints[2 * i] = scaled(i);
        ints[2 * i + 1] = tagged(i);
    }
}

static int check(const std::vector<float> &x, const std::vector<float> &curve, const std::vector<int> &ints,
                 const float *c, int s, int n, const char *round)
{
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        float expected = ((c[3] * x[i] + c[2]) * x[i] + c[1]) * x[i] + c[0];
        if (std::fabs(curve[i] - expected) > 1e-5f * std::fabs(expected) + 1e-6f || ints[2 * i] != i * s + 2000 ||
            ints[2 * i + 1] != i + 1000) {
            if (wrong++ < 5)
                std::printf("%s: element %d: %g %d %d, expected %g %d %d\n", round, i, curve[i], ints[2 * i],
                            ints[2 * i + 1], expected, i * s + 2000, i + 1000);
        }
    }
    return wrong;
}

int main()
{
    const int n = 1000;
    std::vector<float> x(n), curve(n);
    std::vector<int> ints(2 * n);
    for (int i = 0; i < n; i++)
        x[i] = -1.0f + 2.0f * i / n;
    float *dx, *dcurve;
    int *dints;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dcurve, n * sizeof(float)));
    CHECK(cudaMalloc(&dints, 2 * n * sizeof(int)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    // First with the initial values tables.cu gives.
    const float initial[COEFFICIENT_COUNT] = {1.0f, 0.5f, 0.25f, 0.125f};
    apply<<<(n + 127) / 128, 128>>>(dx, dcurve, dints, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(curve.data(), dcurve, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ints.data(), dints, 2 * n * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = check(x, curve, ints, initial, 1, n, "initial");

    // Then with values set from here, in variables another file defines.
    const float changed[COEFFICIENT_COUNT] = {-2.0f, 3.0f, 0.0f, 1.5f};
    const int new_scale = 7;
    CHECK(cudaMemcpyToSymbol(coefficients, changed, sizeof changed));
    CHECK(cudaMemcpyToSymbol(scale, &new_scale, sizeof new_scale));
    apply<<<(n + 127) / 128, 128>>>(dx, dcurve, dints, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(curve.data(), dcurve, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ints.data(), dints, 2 * n * sizeof(int), cudaMemcpyDeviceToHost));
    wrong += check(x, curve, ints, changed, new_scale, n, "changed");

    unsigned counted = 0;
    CHECK(cudaMemcpyFromSymbol(&counted, hits, sizeof counted));
    if (counted != 2u * n) {
        std::printf("hits: %u, expected %d\n", counted, 2 * n);
        wrong++;
    }
    int read_scale = 0;
    CHECK(cudaMemcpyFromSymbol(&read_scale, scale, sizeof read_scale));
    if (read_scale != new_scale) {
        std::printf("scale reads back %d, expected %d\n", read_scale, new_scale);
        wrong++;
    }
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dcurve));
    CHECK(cudaFree(dints));
    std::printf("separate compilation: %d elements, %s\n", n, wrong ? "WRONG" : "ok");
    return wrong ? 1 : 0;
}

// Device math against the host's libm: double sin, exp, log, sqrt, pow,
// atan2, fmod and tanh (sin and pow call device functions nvcc does not
// inline), their float counterparts, and integer intrinsics (division,
// __popc, __clz, __ffs, __brev, 64-bit high multiply, a warp-wide sum:
// __reduce_add_sync in the sm_80 build, shuffles otherwise). CUDA's double functions are within 2 ulp and its
// float ones within a few: tolerances are 1e-14 and 1e-5 relative.
#include <cmath>

#include "sample_check.h"

#define LANES 64

__global__ void evaluate(const double *in, double *out, float *out_float, int *out_int,
                         unsigned long long *out_long)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double x = in[t];
    float f = (float)x;
    double *d = out + t * 8;
    d[0] = sin(x); d[1] = exp(x); d[2] = log(x + 10.0); d[3] = sqrt(x + 10.0);
    d[4] = pow(x + 10.0, 1.5); d[5] = atan2(x, 2.0); d[6] = fmod(x, 0.7); d[7] = tanh(x);
    float *g = out_float + t * 8;
    g[0] = sinf(f); g[1] = expf(f); g[2] = logf(f + 10.0f); g[3] = f / 3.0f;
    g[4] = powf(f + 10.0f, 1.5f); g[5] = erff(f); g[6] = rsqrtf(f + 10.0f); g[7] = cosf(f);
    int i = (int)(x * 1000);
    int *n = out_int + t * 4;
    n[0] = i / 7; n[1] = __popc(i) + __clz(i) + __ffs(i); n[2] = (int)__brev((unsigned)i);
#if __CUDA_ARCH__ >= 800
    n[3] = __reduce_add_sync(0xffffffffu, i);
#else
    int sum = i;
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    n[3] = sum;
#endif
    unsigned long long l = (unsigned long long)(i + 100000) * 1234567ull;
    out_long[t] = l / 12345 + l % 977 + __umul64hi(l, l);
}

static unsigned reverse_bits(unsigned value)
{
    unsigned reversed = 0;
    for (int b = 0; b < 32; b++)
        reversed |= ((value >> b) & 1u) << (31 - b);
    return reversed;
}

static bool close(double got, double want, double tolerance)
{
    if (got == want) // infinities too
        return true;
    return std::fabs(got - want) <= tolerance * (std::fabs(want) + 1e-300);
}

int main()
{
    double in[LANES];
    for (int i = 0; i < LANES; i++)
        in[i] = (i - 20) * 0.37 + (i == 5 ? 1e6 : 0); // one argument needs the slow reduction
    double *device_in, *device_out;
    float *device_float;
    int *device_int;
    unsigned long long *device_long;
    CHECK(cudaMalloc(&device_in, sizeof in));
    CHECK(cudaMalloc(&device_out, LANES * 8 * sizeof(double)));
    CHECK(cudaMalloc(&device_float, LANES * 8 * sizeof(float)));
    CHECK(cudaMalloc(&device_int, LANES * 4 * sizeof(int)));
    CHECK(cudaMalloc(&device_long, LANES * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(device_in, in, sizeof in, cudaMemcpyHostToDevice));
    evaluate<<<LANES / 32, 32>>>(device_in, device_out, device_float, device_int, device_long);
    CHECK_KERNEL();
    static double out[LANES * 8];
    static float out_float[LANES * 8];
    static int out_int[LANES * 4];
    static unsigned long long out_long[LANES];
    CHECK(cudaMemcpy(out, device_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_float, device_float, sizeof out_float, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_int, device_int, sizeof out_int, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out_long, device_long, sizeof out_long, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int t = 0; t < LANES; t++) {
        double x = in[t];
        float f = (float)x;
        const double want[8] = {std::sin(x), std::exp(x), std::log(x + 10.0), std::sqrt(x + 10.0),
                                std::pow(x + 10.0, 1.5), std::atan2(x, 2.0), std::fmod(x, 0.7), std::tanh(x)};
        const float want_float[8] = {std::sin(f), std::exp(f), std::log(f + 10.0f), f / 3.0f,
                                     std::pow(f + 10.0f, 1.5f), std::erf(f), 1.0f / std::sqrt(f + 10.0f),
                                     std::cos(f)};
        for (int j = 0; j < 8; j++) {
            if (!close(out[t * 8 + j], want[j], 1e-14)) {
                std::printf("math_functions: double function %d of %g: %.17g, expected %.17g\n", j, x,
                            out[t * 8 + j], want[j]);
                wrong++;
            }
            // Float functions of huge arguments lose all precision on any device.
            if (std::fabs(x) < 1000 && !close(out_float[t * 8 + j], want_float[j], 1e-5)) {
                std::printf("math_functions: float function %d of %g: %.9g, expected %.9g\n", j, x,
                            out_float[t * 8 + j], want_float[j]);
                wrong++;
            }
        }
    }
    for (int warp = 0; warp < LANES / 32; warp++) {
        int sum = 0;
        for (int lane = 0; lane < 32; lane++)
            sum += (int)(in[warp * 32 + lane] * 1000);
        for (int lane = 0; lane < 32; lane++) {
            int t = warp * 32 + lane, i = (int)(in[t] * 1000);
            int bits = __builtin_popcount((unsigned)i) + (i ? __builtin_clz((unsigned)i) : 32) + __builtin_ffs(i);
            unsigned long long l = (unsigned long long)(i + 100000) * 1234567ull;
            unsigned long long high = (unsigned long long)(((unsigned __int128)l * l) >> 64);
            if (out_int[t * 4] != i / 7 || out_int[t * 4 + 1] != bits ||
                (unsigned)out_int[t * 4 + 2] != reverse_bits((unsigned)i) || out_int[t * 4 + 3] != sum ||
                out_long[t] != l / 12345 + l % 977 + high) {
                std::printf("math_functions: integer results of thread %d wrong\n", t);
                wrong++;
            }
        }
    }
    CHECK(cudaFree(device_in));
    CHECK(cudaFree(device_out));
    CHECK(cudaFree(device_float));
    CHECK(cudaFree(device_int));
    CHECK(cudaFree(device_long));
    if (wrong)
        return 1;
    std::printf("math_functions: %d threads of double, float and integer functions correct\n", LANES);
    return 0;
}

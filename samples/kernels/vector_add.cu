// c = a + b over a million floats, with a grid-stride loop and a ragged
// last block; every element is checked against the host's sum.
#include <vector>

#include "sample_check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

int main()
{
    const int n = 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) {
        a[i] = 0.5f * i;
        b[i] = 1000.0f - i;
    }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    add<<<300, 256>>>(da, db, dc, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i])
            wrong++;
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    if (wrong) {
        std::printf("vector_add: %d of %d elements wrong\n", wrong, n);
        return 1;
    }
    std::printf("vector_add: %d elements correct\n", n);
    return 0;
}

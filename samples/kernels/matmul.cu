// C = A * B for 130x150 times 150x100 matrices with 16x16 shared-memory
// tiles (dimensions that are not multiples of the tile, so edge tiles are
// partial). Entries are small integers, so float results are exact and are
// compared with the host's product exactly.
#include <vector>

#include "sample_check.h"

#define TILE 16

__global__ void matmul(const float *a, const float *b, float *c, int m, int k, int n)
{
    __shared__ float tile_a[TILE][TILE];
    __shared__ float tile_b[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, column = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int base = 0; base < k; base += TILE) {
        tile_a[threadIdx.y][threadIdx.x] =
            row < m && base + threadIdx.x < k ? a[row * k + base + threadIdx.x] : 0.0f;
        tile_b[threadIdx.y][threadIdx.x] =
            column < n && base + threadIdx.y < k ? b[(base + threadIdx.y) * n + column] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += tile_a[threadIdx.y][i] * tile_b[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && column < n)
        c[row * n + column] = sum;
}

int main()
{
    const int m = 130, k = 150, n = 100;
    std::vector<float> a(m * k), b(k * n), c(m * n);
    for (int i = 0; i < m * k; i++)
        a[i] = (float)(i % 7 - 3);
    for (int i = 0; i < k * n; i++)
        b[i] = (float)(i % 5 - 2);
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
    CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
    CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul<<<grid, block>>>(da, db, dc, m, k, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int row = 0; row < m; row++)
        for (int column = 0; column < n; column++) {
            float expected = 0;
            for (int i = 0; i < k; i++)
                expected += a[row * k + i] * b[i * n + column];
            if (c[row * n + column] != expected)
                wrong++;
        }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    if (wrong) {
        std::printf("matmul: %d of %d entries wrong\n", wrong, m * n);
        return 1;
    }
    std::printf("matmul: %dx%d product correct\n", m, n);
    return 0;
}

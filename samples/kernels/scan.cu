// An inclusive prefix sum over 1M integers in three passes: each block
// scans its tile (warp shuffles within warps, shared memory across them)
// and writes the tile's total; one block scans the totals the same way;
// every tile then adds the totals of the tiles before it. The result must
// equal the host's running sum.
#include <vector>

#include "sample_check.h"

constexpr int threads = 256;
constexpr int per_thread = 4;
constexpr int tile = threads * per_thread;

__device__ int warp_inclusive_scan(int value)
{
    int lane = threadIdx.x % 32;
    for (int offset = 1; offset < 32; offset <<= 1) {
        int other = __shfl_up_sync(0xffffffffu, value, offset);
        if (lane >= offset)
            value += other;
    }
    return value;
}

// Scans `tile` elements of `data` in place from `begin` (missing elements
// past `n` count as 0) and returns the tile's total to every thread.
__device__ int block_inclusive_scan(int *data, int begin, int n)
{
    __shared__ int warp_totals[threads / 32];
    __shared__ int total;
    int first = begin + threadIdx.x * per_thread;
    int items[per_thread];
    int running = 0;
    for (int k = 0; k < per_thread; k++) {
        items[k] = first + k < n ? data[first + k] : 0;
        running += items[k];
        items[k] = running;
    }
    // Exclusive offset of this thread's items within the block.
    int inclusive = warp_inclusive_scan(running);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 31)
        warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        int value = lane < threads / 32 ? warp_totals[lane] : 0;
        value = warp_inclusive_scan(value);
        if (lane < threads / 32)
            warp_totals[lane] = value;
        if (lane == threads / 32 - 1)
            total = value;
    }
    __syncthreads();
    int offset = inclusive - running + (warp > 0 ? warp_totals[warp - 1] : 0);
    for (int k = 0; k < per_thread; k++)
        if (first + k < n)
            data[first + k] = items[k] + offset;
    int result = total;
    return result;
}

__global__ void scan_tiles(int *data, int n, int *tile_totals)
{
    int total = block_inclusive_scan(data, blockIdx.x * tile, n);
    if (threadIdx.x == 0 && tile_totals != nullptr)
        tile_totals[blockIdx.x] = total;
}

__global__ void add_tile_offsets(int *data, int n, const int *scanned_totals)
{
    if (blockIdx.x == 0)
        return;
    int offset = scanned_totals[blockIdx.x - 1];
    for (int k = threadIdx.x; k < tile; k += blockDim.x) {
        int i = blockIdx.x * tile + k;
        if (i < n)
            data[i] += offset;
    }
}

int main()
{
    const int n = 1 << 20;
    const int tiles = (n + tile - 1) / tile;
    if (tiles > tile) {
        std::printf("scan: %d tiles do not fit one tile of totals\n", tiles);
        return 1;
    }
    std::vector<int> host(n);
    unsigned state = 12345;
    for (int i = 0; i < n; i++) {
        state = state * 1103515245u + 12345u;
        host[i] = (int)((state >> 16) % 201) - 100;
    }
    int *data, *totals;
    CHECK(cudaMalloc(&data, n * sizeof(int)));
    CHECK(cudaMalloc(&totals, tiles * sizeof(int)));
    CHECK(cudaMemcpy(data, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    scan_tiles<<<tiles, threads>>>(data, n, totals);
    CHECK(cudaGetLastError());
    scan_tiles<<<1, threads>>>(totals, tiles, nullptr);
    CHECK(cudaGetLastError());
    add_tile_offsets<<<tiles, threads>>>(data, n, totals);
    CHECK_KERNEL();
    std::vector<int> result(n);
    CHECK(cudaMemcpy(result.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(data));
    CHECK(cudaFree(totals));

    int wrong = 0, first_wrong = -1;
    long long running = 0;
    for (int i = 0; i < n; i++) {
        running += host[i];
        if (result[i] != (int)running) {
            if (first_wrong < 0)
                first_wrong = i;
            wrong++;
        }
    }
    if (wrong) {
        std::printf("scan: %d of %d prefix sums wrong, the first at %d\n", wrong, n, first_wrong);
        return 1;
    }
    std::printf("scan: inclusive prefix sum of %d values in %d tiles correct, total %lld\n", n, tiles,
                running);
    return 0;
}

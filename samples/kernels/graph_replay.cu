// Records two dependent kernels and the copy of their result back to the
// host into a CUDA graph by stream capture, then launches the graph ten
// times, each time after new input is copied in on the same stream, and
// checks every result on the host. The graph's kernels keep the arguments
// they were captured with; only the memory they point at changes.
#include <cstdio>

#include "sample_check.h"

__global__ void scale(int *out, const int *in, int n, int factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * factor;
}

__global__ void add(int *out, const int *a, const int *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

int main()
{
    const int n = 1 << 14, launches = 10, factor = 3;
    const size_t bytes = n * sizeof(int);
    int *host_in, *host_out;
    CHECK(cudaMallocHost(&host_in, bytes));
    CHECK(cudaMallocHost(&host_out, bytes));
    int *in, *scaled, *sum;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&scaled, bytes));
    CHECK(cudaMalloc(&sum, bytes));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    int blocks = (n + 255) / 256;
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    scale<<<blocks, 256, 0, stream>>>(scaled, in, n, factor);
    CHECK(cudaGetLastError());
    add<<<blocks, 256, 0, stream>>>(sum, scaled, in, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host_out, sum, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamEndCapture(stream, &graph));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    if (nodes != 3) {
        std::fprintf(stderr, "graph_replay: captured %zu nodes, expected 3\n", nodes);
        return 1;
    }
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    // The executable graph does not need the graph it came from.
    CHECK(cudaGraphDestroy(graph));

    long long checked = 0;
    for (int launch = 0; launch < launches; launch++) {
        for (int i = 0; i < n; i++)
            host_in[i] = (i % 1000) * (launch + 1) - launch;
        for (int i = 0; i < n; i++)
            host_out[i] = -1;
        CHECK(cudaMemcpyAsync(in, host_in, bytes, cudaMemcpyHostToDevice, stream));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        for (int i = 0; i < n; i++) {
            int expected = host_in[i] * (factor + 1);
            if (host_out[i] != expected) {
                std::fprintf(stderr, "graph_replay: launch %d element %d is %d, expected %d\n",
                             launch, i, host_out[i], expected);
                return 1;
            }
            checked++;
        }
    }

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(in));
    CHECK(cudaFree(scaled));
    CHECK(cudaFree(sum));
    CHECK(cudaFreeHost(host_in));
    CHECK(cudaFreeHost(host_out));
    std::printf("graph_replay: %d launches of a %zu-node graph, %lld results correct\n", launches,
                nodes, checked);
    return 0;
}

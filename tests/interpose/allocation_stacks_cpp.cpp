// C++ frames in snapshots: a member function of a class in a namespace
// allocates, and check_allocation_stacks.py expects its demangled name
// (model::Layer::allocate(unsigned long)) and the line of its cudaMalloc.
#include <cuda_runtime_api.h>
#include <cstdio>

namespace model {
struct Layer {
    void *buffer = nullptr;
    int line = 0;
    __attribute__((noinline)) void allocate(unsigned long bytes)
    {
        line = __LINE__ + 1;
        if (cudaMalloc(&buffer, bytes) != cudaSuccess)
            std::fprintf(stderr, "cudaMalloc failed\n");
    }
};
} // namespace model

int main()
{
    static model::Layer layers[3];
    for (auto &layer : layers)
        layer.allocate(4ul << 20);
    std::printf("member_line=%d\n", layers[0].line);
    return 0;
}

/* A plain CUDA runtime program, compiled against the real CUDA headers and
 * linked with -lcudart (the shared simulated runtime) or with the static
 * archive: allocates, copies, fills, checks the data and frees. Exits 0 only
 * if every step did what CUDA specifies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "program_check.h"


int main(void)
{
    enum { size = 1 << 20 };
    unsigned char *host = malloc(size), *back = malloc(size);
    if (host == NULL || back == NULL)
        return 1;
    for (size_t index = 0; index < size; index++)
        host[index] = (unsigned char)(index ^ (index >> 8));

    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    void *first = NULL, *second = NULL;
    CHECK(cudaMalloc(&first, size));
    CHECK(cudaMalloc(&second, size));
    CHECK(cudaMemcpy(first, host, size, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(second, first, size, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset((char *)second + 4096, 0x7f, 4096));
    CHECK(cudaMemcpy(back, second, size, cudaMemcpyDeviceToHost));
    for (size_t index = 0; index < size; index++) {
        unsigned char expected = index >= 4096 && index < 8192 ? 0x7f : host[index];
        if (back[index] != expected) {
            fprintf(stderr, "byte %zu is %#x, expected %#x\n", index, back[index], expected);
            return 1;
        }
    }
    CHECK(cudaFree(first));
    CHECK(cudaFree(second));
    CHECK(cudaGetLastError());
    printf("%d device(s), %d bytes round-tripped\n", count, size);
    free(host);
    free(back);
    return 0;
}

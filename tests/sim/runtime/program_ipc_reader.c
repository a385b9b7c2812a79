/* The other process of the IPC check: opens the device allocation named by
 * an IPC handle (argv[1], hex), checks the bytes the exporting process wrote
 * (byte i is i * 13 modulo 256, argv[2] bytes long), overwrites the first 16
 * bytes with 0xcd for the exporter to see, and closes the handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "program_check.h"


int main(int argc, char **argv)
{
    cudaIpcMemHandle_t handle;
    if (argc != 3 || strlen(argv[1]) != 2 * sizeof handle) {
        fprintf(stderr, "usage: %s HANDLE_HEX SIZE\n", argv[0]);
        return 2;
    }
    unsigned char *handle_bytes = (unsigned char *)&handle;
    for (size_t index = 0; index < sizeof handle; index++)
        if (sscanf(argv[1] + 2 * index, "%2hhx", &handle_bytes[index]) != 1)
            return 2;
    size_t size = strtoull(argv[2], NULL, 10);
    unsigned char *back = malloc(size);
    void *shared = NULL;
    CHECK(cudaIpcOpenMemHandle(&shared, handle, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaMemcpy(back, shared, size, cudaMemcpyDeviceToHost));
    for (size_t index = 0; index < size; index++)
        if (back[index] != (unsigned char)(index * 13)) {
            fprintf(stderr, "byte %zu is %#x in the importing process\n", index, back[index]);
            return 1;
        }
    CHECK(cudaMemset(shared, 0xcd, 16));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaIpcCloseMemHandle(shared));
    free(back);
    return 0;
}

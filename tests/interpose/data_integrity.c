/* Thousands of mixed allocations and frees (synchronous and stream-ordered,
 * from 1 byte to tens of MiB), each filled with its own byte pattern and
 * checked when freed and at the end: any overlap between live blocks or any
 * block handed out twice shows up as a wrong byte. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "test_support.h"

#define OPERATIONS 3000
#define MAX_LIVE 64

struct live_block {
    unsigned char *device;
    size_t size;
    unsigned tag;
    bool stream_ordered;
};

static unsigned char *host_buffer;

static size_t random_size(unsigned *state)
{
    unsigned pick = next_random(state) % 100;
    if (pick < 50)
        return 1 + next_random(state) % 4096;
    if (pick < 85)
        return 4096 + next_random(state) % (1u << 20);
    if (pick < 98)
        return (1u << 20) + next_random(state) % (8u << 20);
    return (12u << 20) + next_random(state) % (20u << 20);
}

static void fill(struct live_block *block)
{
    for (size_t i = 0; i < block->size; i++)
        host_buffer[i] = pattern_byte(block->tag, i);
    CHECK_CUDA(cudaMemcpy(block->device, host_buffer, block->size, cudaMemcpyHostToDevice));
}

static void verify(const struct live_block *block)
{
    memset(host_buffer, 0, block->size);
    CHECK_CUDA(cudaMemcpy(host_buffer, block->device, block->size, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < block->size; i++)
        CHECK(host_buffer[i] == pattern_byte(block->tag, i),
              "block %u (%zu bytes at %p) byte %zu is %u, expected %u", block->tag, block->size,
              (void *)block->device, i, host_buffer[i], pattern_byte(block->tag, i));
}

static void release(struct live_block *block)
{
    verify(block);
    if (block->stream_ordered)
        CHECK_CUDA(cudaFreeAsync(block->device, 0));
    else
        CHECK_CUDA(cudaFree(block->device));
}

int main(void)
{
    host_buffer = malloc(32u << 20);
    CHECK(host_buffer != NULL, "no host memory");
    struct live_block live[MAX_LIVE];
    size_t live_count = 0;
    unsigned state = 12345;
    for (unsigned operation = 0; operation < OPERATIONS; operation++) {
        bool allocate = live_count == 0 ||
                        (live_count < MAX_LIVE && next_random(&state) % 100 < 55);
        if (allocate) {
            struct live_block *block = &live[live_count++];
            block->size = random_size(&state);
            block->tag = operation;
            block->stream_ordered = next_random(&state) % 3 == 0;
            void *pointer = NULL;
            if (block->stream_ordered)
                CHECK_CUDA(cudaMallocAsync(&pointer, block->size, 0));
            else
                CHECK_CUDA(cudaMalloc(&pointer, block->size));
            CHECK(((uintptr_t)pointer & 511) == 0, "%p is not 512-byte aligned", pointer);
            block->device = pointer;
            fill(block);
        } else {
            size_t victim = next_random(&state) % live_count;
            release(&live[victim]);
            live[victim] = live[--live_count];
        }
    }
    for (size_t i = 0; i < live_count; i++)
        verify(&live[i]);
    while (live_count)
        release(&live[--live_count]);
    CHECK_CUDA(cudaDeviceSynchronize());
    free(host_buffer);
    printf("%d operations, every byte intact\n", OPERATIONS);
    return 0;
}

/* Recycles block structs so that steady-state allocation never calls the
 * host allocator: structs come from slabs and go back to a free list. */
#include <stdlib.h>
#include <string.h>

#include "allocator_internal.h"

/* 256 blocks of <= 128 bytes: 32 KiB per slab, one host allocation per
 * 256 splits the first time a program reaches a new block count. */
#define BLOCKS_PER_SLAB 256

/* Out of line: the taking fast path then saves no registers. */
__attribute__((noinline)) static bool grow(struct gpucache_allocator *allocator)
{
    struct block_store *store = &allocator->store;
    size_t new_total = store->total_blocks + BLOCKS_PER_SLAB;
    /* Every block may be allocated at once: room in the address map is
     * reserved here so that inserting never has to grow it. */
    if (!block_map_reserve(&allocator->allocated, new_total))
        return false;
    if (store->slab_count == store->slab_capacity) {
        size_t capacity = store->slab_capacity ? store->slab_capacity * 2 : 16;
        void **slabs = realloc(store->slabs, capacity * sizeof *slabs);
        if (slabs == NULL)
            return false;
        store->slabs = slabs;
        store->slab_capacity = capacity;
    }
    struct block *slab = aligned_alloc(_Alignof(struct block), BLOCKS_PER_SLAB * sizeof *slab);
    if (slab == NULL)
        return false;
    memset(slab, 0, BLOCKS_PER_SLAB * sizeof *slab);
    store->slabs[store->slab_count++] = slab;
    for (size_t i = 0; i < BLOCKS_PER_SLAB; i++) {
        slab[i].list_next = store->free_list;
        store->free_list = &slab[i];
    }
    store->total_blocks = new_total;
    return true;
}

struct block *block_store_take(struct gpucache_allocator *allocator)
{
    struct block_store *store = &allocator->store;
    if (store->free_list == NULL && !grow(allocator))
        return NULL;
    /* A copy of a constant compiles to a few vector stores; zeroing with
     * memset compiled to `rep stos`, slow to start, on every split. */
    static const struct block fresh = {.mapped = true};
    struct block *block = store->free_list;
    store->free_list = block->list_next;
    memcpy(block, &fresh, sizeof *block);
    return block;
}

void block_store_give(struct gpucache_allocator *allocator, struct block *block)
{
    block->list_next = allocator->store.free_list;
    allocator->store.free_list = block;
}

void block_store_destroy(struct block_store *store)
{
    for (size_t i = 0; i < store->slab_count; i++)
        free(store->slabs[i]);
    free(store->slabs);
    memset(store, 0, sizeof *store);
}

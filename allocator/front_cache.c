/* Front caches: a block freed stream-ordered on its own stream is reusable
 * at once on that stream (DESIGN.md, Reuse safety), so it may wait whole
 * for the next request of its size there, skipping the merge of the free
 * and the tree search and split of the hit. Nothing else may take it until
 * it is merged back, and everything else merges it back first: a block in a
 * front is never seen by another stream, a walk, a reader or the miss chain. */
#include "allocator_internal.h"

static struct front_cache *front_find(struct gpucache_allocator *allocator,
                                      gpucache_stream stream)
{
    /* last_front is NULL or a front in use (release_front clears it). */
    struct front_cache *front = allocator->last_front;
    if (front != NULL && front->stream == stream)
        return front;
    for (int i = 0; i < FRONT_STREAMS; i++) {
        front = &allocator->fronts[i];
        if (front->used && front->stream == stream) {
            allocator->last_front = front;
            return front;
        }
    }
    return NULL;
}

/* front_find when the latest front is another stream's. Out of line: the
 * usual hit then saves no registers. */
__attribute__((noinline)) struct front_cache *
front_find_other(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    return front_find(allocator, stream);
}

/* The free the block's front deferred, as gpucache_allocator_free applies
 * it, then the merge with its free neighbours. */
static void release_block(struct gpucache_allocator *allocator, struct block *block)
{
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool;
    block_map_remove(&allocator->allocated, block->address);
    allocator->front_blocks--;
    allocator->front_requested[pool] -= (int64_t)block->requested_size;
    if (!block->front_after_fence) {
        allocator->front_allocated_blocks[pool]--;
        allocator->front_allocated_bytes[pool] -= (int64_t)block->size;
        stat_array_decrease(stats->allocation, pool, 1);
        stat_array_decrease(stats->allocated_bytes, pool, (int64_t)block->size);
    }
    block->front_after_fence = false;
    block->state = BLOCK_ALLOCATED;
    block_becomes_free(allocator, block);
}

static void release_slot(struct gpucache_allocator *allocator, struct front_slot *slot)
{
    while (slot->top != NULL) {
        struct block *block = slot->top;
        slot->top = block->list_next;
        block->list_next = NULL;
        release_block(allocator, block);
    }
    slot->count = 0;
    slot->key = 0;
}

static void release_front(struct gpucache_allocator *allocator, struct front_cache *front)
{
    for (int i = 0; i < FRONT_SIZES; i++)
        release_slot(allocator, &front->slots[i]);
    front->used = false;
    front->next_victim = 0;
    if (allocator->last_front == front)
        allocator->last_front = NULL;
}

static void settle_pair_totals(struct gpucache_allocator *allocator)
{
    struct gpucache_stats *stats = &allocator->stats;
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct front_pair_totals *pairs = &allocator->front_pairs[pool];
        for (int slot = 0; slot < 2; slot++) {
            int index = slot == 0 ? GPUCACHE_STAT_ALL : stat_type_of((enum pool_kind)pool);
            stats->allocation[index].allocated += pairs->allocation_count;
            stats->allocation[index].freed += pairs->allocation_count;
            stats->active[index].allocated += pairs->active_count;
            stats->active[index].freed += pairs->active_count;
            stats->allocated_bytes[index].allocated += pairs->allocation_bytes;
            stats->allocated_bytes[index].freed += pairs->allocation_bytes;
            stats->active_bytes[index].allocated += pairs->active_bytes;
            stats->active_bytes[index].freed += pairs->active_bytes;
            stats->requested_bytes[index].allocated += pairs->requested;
            stats->requested_bytes[index].freed += pairs->requested;
        }
        *pairs = (struct front_pair_totals){0, 0, 0, 0, 0};
    }
}

void front_cache_flush_slow(struct gpucache_allocator *allocator)
{
    for (int i = 0; i < FRONT_STREAMS && allocator->front_blocks != 0; i++)
        if (allocator->fronts[i].used)
            release_front(allocator, &allocator->fronts[i]);
    settle_pair_totals(allocator);
}

void front_cache_flush_stream(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    struct front_cache *front = front_find(allocator, stream);
    if (front != NULL)
        release_front(allocator, front);
}

/* A hit whose request differs from the block's last one changes
 * requested_bytes as the eager free and allocation would have: the peak is
 * taken against what the statistics would read, without the requests of
 * blocks still waiting in fronts (their decreases are deferred). */
__attribute__((noinline)) void front_change_requested(struct gpucache_allocator *allocator,
                                                     enum pool_kind pool, uint64_t old,
                                                     uint64_t requested)
{
    struct gpucache_stat *array = allocator->stats.requested_bytes;
    int64_t waiting[2] = {
        allocator->front_requested[POOL_SMALL] + allocator->front_requested[POOL_LARGE],
        allocator->front_requested[pool]};
    int indices[2] = {GPUCACHE_STAT_ALL, stat_type_of(pool)};
    for (int i = 0; i < 2; i++) {
        struct gpucache_stat *stat = &array[indices[i]];
        stat->current += (int64_t)requested - (int64_t)old;
        if (stat->current - waiting[i] > stat->peak)
            stat->peak = stat->current - waiting[i];
        stat->allocated += (int64_t)requested;
        stat->freed += (int64_t)old;
    }
}

/* A hit of a block whose allocation statistics fell at its free: they rise
 * again, with the peak taken against what they would read without the
 * blocks whose decreases still wait in fronts. */
static inline void count_one(struct gpucache_stat *stat, int64_t amount, int64_t waiting)
{
    stat->current += amount;
    stat->allocated += amount;
    if (stat->current - waiting > stat->peak)
        stat->peak = stat->current - waiting;
}

__attribute__((noinline)) void front_count_allocated(struct gpucache_allocator *allocator,
                                                    enum pool_kind pool, int64_t bytes)
{
    struct gpucache_stats *stats = &allocator->stats;
    int type = stat_type_of(pool);
    const int64_t *blocks = allocator->front_allocated_blocks;
    const int64_t *sizes = allocator->front_allocated_bytes;
    count_one(&stats->allocation[GPUCACHE_STAT_ALL], 1, blocks[POOL_SMALL] + blocks[POOL_LARGE]);
    count_one(&stats->allocation[type], 1, blocks[pool]);
    count_one(&stats->allocated_bytes[GPUCACHE_STAT_ALL], bytes,
              sizes[POOL_SMALL] + sizes[POOL_LARGE]);
    count_one(&stats->allocated_bytes[type], bytes, sizes[pool]);
}


static struct front_cache *front_claim(struct gpucache_allocator *allocator,
                                       gpucache_stream stream)
{
    struct front_cache *front = front_find(allocator, stream);
    if (front != NULL)
        return front;
    for (int i = 0; i < FRONT_STREAMS && front == NULL; i++)
        if (!allocator->fronts[i].used)
            front = &allocator->fronts[i];
    if (front == NULL) {
        front = &allocator->fronts[allocator->next_front_victim];
        allocator->next_front_victim = (uint8_t)((allocator->next_front_victim + 1) % FRONT_STREAMS);
        release_front(allocator, front);
    }
    front->used = true;
    front->stream = stream;
    allocator->last_front = front;
    return front;
}

static struct front_slot *slot_claim(struct gpucache_allocator *allocator,
                                     struct front_cache *front, uint64_t size,
                                     enum pool_kind pool)
{
    struct front_slot *unused = NULL;
    for (int i = 0; i < FRONT_SIZES; i++) {
        struct front_slot *slot = &front->slots[i];
        if (slot->key == (size | pool))
            return slot;
        if (slot->key == 0 && unused == NULL)
            unused = slot;
    }
    if (unused == NULL) {
        unused = &front->slots[front->next_victim];
        front->next_victim = (uint8_t)((front->next_victim + 1) % FRONT_SIZES);
        release_slot(allocator, unused);
    }
    unused->key = size | pool;
    return unused;
}


/* A front or slot to claim (and perhaps to merge back first). Out of line:
 * the usual free finds both ready and then saves no registers. */
__attribute__((noinline)) bool front_put_claiming(struct gpucache_allocator *allocator,
                                                 struct block *block)
{
    struct front_cache *front = front_claim(allocator, block->stream);
    struct front_slot *slot = slot_claim(allocator, front, block->size, block->pool);
    if (slot->count >= FRONT_DEPTH)
        return false;
    front_push(allocator, slot, block);
    return true;
}

bool front_cache_put_after_fence(struct gpucache_allocator *allocator, struct block *block)
{
    /* A retired stream allocates nothing; the address map must take the
     * block back, which the block store reserved room for. */
    if (!allocator->completions_to_front || block->stream == STREAM_RETIRED ||
        block->size >= allocator->config->max_split_size || block->segment->pinned)
        return false;
    block->front_after_fence = true;
    if (!front_put_in_front(allocator, block)) {
        block->front_after_fence = false;
        return false;
    }
    block_map_insert(&allocator->allocated, block->address, block);
    return true;
}

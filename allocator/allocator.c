/* The caching allocator of one device: the malloc flow with its OOM retry
 * chain, splitting, freeing and merging, and the public entry points. */
#include <stdlib.h>
#include <string.h>

#include "expandable_segments.h"
#include "gpucache_allocator_testing.h"
#include "segment_source.h"
#include "size_policy.h"

struct gpucache_allocator *gpucache_allocator_create(const struct gpucache_config *config,
                                                     const struct gpucache_driver *driver,
                                                     int device)
{
    /* Aligned as its fronts are: each front's lock owns its cache line. */
    size_t bytes = (sizeof(struct gpucache_allocator) + _Alignof(struct gpucache_allocator) - 1) /
                   _Alignof(struct gpucache_allocator) * _Alignof(struct gpucache_allocator);
    struct gpucache_allocator *allocator =
        aligned_alloc(_Alignof(struct gpucache_allocator), bytes);
    if (allocator == NULL)
        return NULL;
    memset(allocator, 0, bytes);
    if (pthread_mutex_init(&allocator->mutex, NULL) != 0) {
        free(allocator);
        return NULL;
    }
    allocator->config = config;
    allocator->driver = driver;
    allocator->device = device;
    for (int pool = 0; pool < POOL_COUNT; pool++)
        RB_INIT(&allocator->pools[pool].free_blocks);
    RB_INIT(&allocator->segments);
    allocator->all_streams.all_streams = true;
    front_cache_init(allocator);
    allocator->rounds_plainly = size_policy_rounds_plainly(config);
    allocator->lanes_free_synchronously = config->reuse == GPUCACHE_REUSE_ASYNC;
    allocator->stats.max_split_size =
        config->max_split_size == UINT64_MAX ? -1 : (int64_t)config->max_split_size;

    /* The cap needs the device's size, which can only be asked in the
     * context the allocator will serve: the interposer binds that context
     * after creating the allocator, so the first growth resolves it
     * (resolve_memory_limits). */
    allocator->allowed_memory_maximum = UINT64_MAX;
    allocator->memory_limits_known = config->per_process_memory_fraction >= 1.0;
    return allocator;
}

static void teardown(struct gpucache_allocator *allocator, bool context_alive)
{
    front_cache_flush(allocator);
    if (!context_alive)
        allocator_report_forgotten(allocator);
    epochs_discard(allocator, context_alive);
    segment_source_drop_all(allocator, context_alive);
    block_store_destroy(&allocator->store);
    block_map_destroy(&allocator->allocated);
    pthread_mutex_destroy(&allocator->mutex);
    free(allocator);
}

void gpucache_allocator_destroy(struct gpucache_allocator *allocator)
{
    if (allocator != NULL)
        teardown(allocator, true);
}

void gpucache_allocator_abandon(struct gpucache_allocator *allocator)
{
    if (allocator != NULL)
        teardown(allocator, false);
}

static void change_inactive_split(struct gpucache_allocator *allocator, const struct block *block,
                                  int64_t blocks, int64_t bytes)
{
    stat_array_change(allocator->stats.inactive_split, block->pool, blocks);
    stat_array_change(allocator->stats.inactive_split_bytes, block->pool, bytes);
}

/* Whether the free neighbour may join a block being freed: it must be free,
 * equally mapped, and safe for the block's stream. */
static bool can_merge(const struct gpucache_allocator *allocator, const struct block *block,
                      const struct block *neighbour)
{
    if (neighbour == NULL || neighbour->state != BLOCK_FREE || neighbour->mapped != block->mapped)
        return false;
    return block_reusable_by(allocator, neighbour, block->stream);
}

/* Takes `gone`, an address neighbour of `survivor`, out of the segment's
 * chain; the survivor will cover its bytes. */
static void unlink_into(struct block *survivor, struct block *gone)
{
    if (gone == survivor->next) {
        survivor->next = gone->next;
        if (gone->next != NULL)
            gone->next->prev = survivor;
    } else {
        survivor->prev = gone->prev;
        if (gone->prev != NULL)
            gone->prev->next = survivor;
    }
}

/* Absorbs a free neighbour; returns the bytes it brought. */
static size_t merge_neighbour(struct gpucache_allocator *allocator, struct block *block,
                              struct block *neighbour)
{
    free_blocks_remove(allocator, neighbour);
    if (neighbour == block->prev)
        block->address = neighbour->address;
    unlink_into(block, neighbour);
    block->size += neighbour->size;
    if (neighbour->stream == block->stream && neighbour->free_tick > block->free_tick)
        block->free_tick = neighbour->free_tick;
    size_t absorbed = neighbour->size;
    block_store_give(allocator, neighbour);
    return absorbed;
}

/* The usual free: a free neighbour of the same stream absorbs the block
 * where it sits in the free tree (and takes the other free neighbour too),
 * so that a hit's split and the free's merge cost no tree rebalancing. */
static void merge_into_neighbour(struct gpucache_allocator *allocator, struct block *block,
                                 struct block *survivor, struct block *other)
{
    int64_t split_blocks = -1;
    int64_t split_bytes = -(int64_t)survivor->size;
    uint64_t address = survivor == block->prev ? survivor->address : block->address;
    uint64_t size = survivor->size + block->size;
    unlink_into(survivor, block);
    if (block->free_tick > survivor->free_tick)
        survivor->free_tick = block->free_tick;
    block_store_give(allocator, block);
    if (other != NULL) {
        split_blocks -= 1;
        split_bytes -= (int64_t)other->size;
        free_blocks_remove(allocator, other);
        if (other == survivor->prev)
            address = other->address;
        unlink_into(survivor, other);
        size += other->size;
        if (other->stream == survivor->stream && other->free_tick > survivor->free_tick)
            survivor->free_tick = other->free_tick;
        block_store_give(allocator, other);
    }
    free_blocks_resize(allocator, survivor, address, size);
    if (block_is_split(survivor)) {
        split_blocks += 1;
        split_bytes += (int64_t)size;
    }
    change_inactive_split(allocator, survivor, split_blocks, split_bytes);
}

/* Keeps a freed block of a pinned segment out of every free tree. */
static void retain_block(struct gpucache_allocator *allocator, struct block *block)
{
    block->state = BLOCK_RETAINED;
    block->list_next = allocator->retained;
    allocator->retained = block;
}

void block_free_completed(struct gpucache_allocator *allocator, struct block *block)
{
    emit_event(allocator, GPUCACHE_EVENT_FREE_COMPLETED, block->address, block->requested_size,
               block->stream);
    block_becomes_free(allocator, block);
}

void block_becomes_free(struct gpucache_allocator *allocator, struct block *block)
{
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool; /* a local: see allocate_found_block */
    int64_t requested = (int64_t)block->requested_size;
    stat_array_decrease(stats->active, pool, 1);
    stat_array_decrease(stats->active_bytes, pool, (int64_t)block->size);
    stat_array_decrease(stats->requested_bytes, pool, requested);
    block->requested_size = 0;
    if (block->segment->pinned) {
        retain_block(allocator, block);
        return;
    }

    struct block *prev = can_merge(allocator, block, block->prev) ? block->prev : NULL;
    struct block *next = can_merge(allocator, block, block->next) ? block->next : NULL;
    if (prev != NULL && prev->stream == block->stream) {
        merge_into_neighbour(allocator, block, prev, next);
        return;
    }
    if (next != NULL && next->stream == block->stream) {
        merge_into_neighbour(allocator, block, next, prev);
        return;
    }

    /* Neighbours of other streams (cleared ones) join this block instead,
     * which keeps this block's stream. */
    int64_t split_blocks = 0;
    int64_t split_bytes = 0;
    struct block *neighbours[2] = {prev, next};
    for (int i = 0; i < 2; i++) {
        if (neighbours[i] == NULL)
            continue;
        split_blocks -= 1;
        split_bytes -= (int64_t)merge_neighbour(allocator, block, neighbours[i]);
    }
    if (block_is_split(block)) {
        split_blocks += 1;
        split_bytes += (int64_t)block->size;
    }
    change_inactive_split(allocator, block, split_blocks, split_bytes);
    free_blocks_insert(allocator, block);
}

/* Merges a free block with its free successor when no stream's work can
 * still use either: both free on one stream, or both cleared. */
static bool coalesce_with_next(struct gpucache_allocator *allocator, struct block *block)
{
    struct block *next = block->next;
    if (next == NULL || next->state != BLOCK_FREE || next->mapped != block->mapped)
        return false;
    bool same_stream = next->stream == block->stream;
    if (!same_stream && !(block_cleared(allocator, block) && block_cleared(allocator, next)))
        return false;
    int64_t bytes_before = (int64_t)(block->size + next->size);
    free_blocks_remove(allocator, block);
    if (!same_stream)
        block->free_tick = 0;
    merge_neighbour(allocator, block, next);
    uint64_t gc_count_base = block->gc_count_base;
    free_blocks_insert(allocator, block);
    block->gc_count_base = gc_count_base;
    if (block_is_split(block))
        change_inactive_split(allocator, block, -1, 0);
    else
        change_inactive_split(allocator, block, -2, -bytes_before);
    return true;
}

void coalesce_free_blocks(struct gpucache_allocator *allocator)
{
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        bool merged = true;
        while (merged) {
            merged = false;
            struct block *block;
            RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks) {
                if (coalesce_with_next(allocator, block)) {
                    merged = true;
                    break;
                }
            }
        }
    }
}

/* Hands out the free block `block` (still in its tree) for a request,
 * splitting off the rest when PyTorch would. `lower_bound`: the block is
 * the first of its stream of at least `rounded` bytes in its tree. */
static inline __attribute__((always_inline)) struct block *
allocate_found_block(struct gpucache_allocator *allocator, struct block *block, size_t size,
                     size_t rounded, gpucache_stream stream, bool lower_bound)
{
    const struct gpucache_config *config = allocator->config;
    bool already_split = block_is_split(block);
    bool expandable = block->segment->kind == SEGMENT_EXPANDABLE;
    struct block *front = NULL;
    if (size_policy_should_split(config, block->pool == POOL_SMALL, expandable, block->size,
                                 rounded))
        front = block_store_take(allocator); /* NULL (no host memory): keep it whole */
    if (front != NULL) {
        struct block *remaining = block;
        front->address = remaining->address;
        front->size = rounded;
        front->segment = remaining->segment;
        front->pool = remaining->pool;
        front->mapped = remaining->mapped;
        front->prev = remaining->prev;
        front->next = remaining;
        if (front->prev != NULL)
            front->prev->next = front;
        remaining->prev = front;
        if (lower_bound)
            free_blocks_cut_lower_bound(allocator, remaining, remaining->address + rounded,
                                      remaining->size - rounded, rounded);
        else
            free_blocks_resize(allocator, remaining, remaining->address + rounded,
                             remaining->size - rounded);
        /* The signs are known here: no branch on them as in
         * change_inactive_split. */
        struct gpucache_stats *stats = &allocator->stats;
        if (already_split) {
            stat_array_decrease(stats->inactive_split_bytes, remaining->pool, (int64_t)rounded);
        } else {
            stat_array_increase(stats->inactive_split, remaining->pool, 1);
            stat_array_increase(stats->inactive_split_bytes, remaining->pool,
                                (int64_t)remaining->size);
        }
        block = front;
    } else {
        free_blocks_remove(allocator, block);
        if (already_split)
            change_inactive_split(allocator, block, -1, -(int64_t)block->size);
    }

    block->state = BLOCK_ALLOCATED;
    block->stream = stream;
    block->requested_size = size;
    block->free_tick = 0;
    block_map_insert(&allocator->allocated, block->address, block);

    /* Locals: block->pool is a byte, which may alias any statistic, so
     * each statistics store would make the compiler read it again. */
    enum pool_kind pool = block->pool;
    int64_t bytes = (int64_t)block->size;
    struct gpucache_stats *stats = &allocator->stats;
    stat_array_increase(stats->allocation, pool, 1);
    stat_array_increase(stats->allocated_bytes, pool, bytes);
    stat_array_increase(stats->active, pool, 1);
    stat_array_increase(stats->active_bytes, pool, bytes);
    stat_array_increase(stats->requested_bytes, pool, (int64_t)size);
    if ((uint64_t)bytes >= config->max_split_size)
        stat_increase(&stats->oversize_allocations, 1);
    emit_block_event(allocator, GPUCACHE_EVENT_ALLOC, block->address, size, block->size, stream);
    return block;
}

/* A cached block for the request: this stream's own first, then one of
 * another stream that no GPU work can still be using. */
static struct block *take_cached_block(struct gpucache_allocator *allocator, enum pool_kind pool,
                                       gpucache_stream stream, size_t rounded)
{
    struct block *block = free_blocks_best_fit(allocator, pool, stream, rounded);
    if (block == NULL)
        block = free_blocks_cross_stream_fit(allocator, pool, stream, rounded);
    return block;
}

/* Outcome of one attempt to get new device memory. */
enum growth {
    GROWTH_DONE,     /* *out holds the new block */
    GROWTH_FAILED,   /* out of memory: the retry chain goes on */
    GROWTH_REJECTED, /* stop the chain: *result says why */
};

static enum growth grow(struct gpucache_allocator *allocator, enum pool_kind pool,
                        gpucache_stream stream, size_t rounded, bool retry, struct block **out,
                        gpucache_result *result)
{
    if (retry)
        allocator->stats.num_alloc_retries++;
    size_t segment_size = size_policy_segment_size(allocator->config, rounded);
    uint64_t reserved = (uint64_t)allocator->stats.reserved_bytes[GPUCACHE_STAT_ALL].current;
    if (allocator->allowed_memory_maximum != UINT64_MAX &&
        reserved + segment_size > allocator->allowed_memory_maximum) {
        if (allocator->config->throw_on_cudamalloc_oom) {
            allocator->stats.num_oom_rejections++;
            *result = GPUCACHE_ERROR_OUT_OF_MEMORY;
            return GROWTH_REJECTED;
        }
        return GROWTH_FAILED;
    }
    *result = segment_source_acquire(allocator, pool, stream, rounded, segment_size, out);
    if (*result == GPUCACHE_SUCCESS) {
        free_blocks_insert(allocator, *out);
        return GROWTH_DONE;
    }
    return *result == GPUCACHE_ERROR_OUT_OF_MEMORY ? GROWTH_FAILED : GROWTH_REJECTED;
}

/* Everything freed so far becomes reusable before the last retry: waits on
 * the fences of every stream involved, and synchronizes the device only as
 * the last resort when a fence cannot answer. */
static void finish_outstanding_work(struct gpucache_allocator *allocator)
{
    allocator->stats.num_sync_all_streams++;
    bool outstanding = allocator->stats.pending_blocks.current > 0 ||
                       allocator_tick(allocator) > allocator->all_completed_tick;
    if (outstanding && !epochs_wait_all(allocator))
        synchronize_device_for_reuse(allocator);
}

/* The oom event: PyTorch records the device's free bytes with it. */
static void report_out_of_memory(struct gpucache_allocator *allocator, size_t rounded,
                                 gpucache_stream stream)
{
    if (allocator->observer == NULL)
        return;
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    gpucache_result result;
    DRIVER_CALL(allocator, result, memory_info, allocator->device, &free_bytes, &total_bytes);
    emit_event(allocator, GPUCACHE_EVENT_OOM, result == GPUCACHE_SUCCESS ? free_bytes : 0, rounded,
               stream);
}

/* The miss path: PyTorch's order (a free block of the pool, garbage
 * collection past its threshold, a new segment, then releasing cached
 * blocks and retrying), with the
 * reuse-safety steps first: close the open epochs, take a block another
 * stream has cleared, and wait for the oldest epochs of synchronous frees
 * before growing. Waiting is not gated on the epoch's own bytes covering the
 * request: freed blocks merge with free neighbours into runs larger than
 * what any epoch holds, and the program waited for each of those frees in
 * cuMemFree anyway, so the wait costs it nothing it did not already pay. */
static struct block *allocate_on_miss(struct gpucache_allocator *allocator, enum pool_kind pool,
                                      gpucache_stream stream, size_t rounded,
                                      gpucache_result *result)
{
    struct block *block = NULL;
    stream_state_find(allocator, stream, true);
    epochs_close_all_open(allocator);
    epochs_process_completed(allocator);
    if ((block = take_cached_block(allocator, pool, stream, rounded)) != NULL)
        return block;
    epochs_request_cross_stream_clearing(allocator, pool, stream, rounded);
    while (allocator->synchronous_closed_bytes[pool] != 0) {
        if (!epochs_wait_oldest(allocator, pool))
            break;
        if ((block = take_cached_block(allocator, pool, stream, rounded)) != NULL)
            return block;
    }

    if (!resolve_memory_limits(allocator, result)) {
        allocator->stats.num_ooms++;
        report_out_of_memory(allocator, rounded, stream);
        return NULL;
    }
    if (allocator->gc_enabled)
        garbage_collect_cached_blocks(allocator);
    enum growth growth = grow(allocator, pool, stream, rounded, false, &block, result);
    /* Growth of the request's expandable size class failed: a free block of
     * the other class serves rather than an OOM. */
    if (growth != GROWTH_DONE &&
        (block = free_blocks_best_fit_other_class(allocator, pool, stream, rounded)) != NULL)
        return block;
    if (growth == GROWTH_FAILED && release_available_cached_blocks(allocator, pool, stream, rounded))
        growth = grow(allocator, pool, stream, rounded, false, &block, result);
    if (growth == GROWTH_FAILED && !driver_capture_active(allocator)) {
        /* What the synchronize made free may serve the request as it is. */
        finish_outstanding_work(allocator);
        if ((block = take_cached_block(allocator, pool, stream, rounded)) != NULL)
            return block;
        release_cached_blocks(allocator);
        growth = grow(allocator, pool, stream, rounded, true, &block, result);
    }
    if (growth == GROWTH_DONE)
        return block;
    if (growth == GROWTH_FAILED)
        *result = GPUCACHE_ERROR_OUT_OF_MEMORY;
    if (*result == GPUCACHE_ERROR_OUT_OF_MEMORY) {
        allocator->stats.num_ooms++;
        report_out_of_memory(allocator, rounded, stream);
    }
    return NULL;
}

void allocator_lock_slowly(struct gpucache_allocator *allocator)
{
    for (int spins = 0; spins < 200; spins++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (pthread_mutex_trylock(&allocator->mutex) == 0)
            return;
    }
    pthread_mutex_lock(&allocator->mutex);
}

/* Out of line, so that the front's hit saves no registers for the rest. */
__attribute__((noinline)) static gpucache_result
report_request_too_large(struct gpucache_allocator *allocator, size_t size, gpucache_stream stream)
{
    allocator->stats.num_ooms++;
    report_out_of_memory(allocator, size, stream);
    return GPUCACHE_ERROR_OUT_OF_MEMORY;
}

__attribute__((noinline)) static void query_fences_from_hit_path(struct gpucache_allocator *allocator)
{
    size_t closed = allocator->closed_epoch_count;
    allocator->completions_to_front = true;
    epochs_process_completed(allocator);
    allocator->completions_to_front = false;
    /* Fences that complete long after they are recorded would otherwise
     * cost a query per few hits: a query that finds nothing completed
     * doubles the interval to the next, one that finds some resets it. */
    unsigned backoff = allocator->closed_epoch_count < closed
                           ? 0
                           : ((allocator->query_backoff << 1) | 8u) & 63u;
    /* Only a change is written: the lanes of every thread read this line. */
    if (backoff != allocator->query_backoff)
        __atomic_store_n(&allocator->query_backoff, backoff, __ATOMIC_RELAXED);
}

/* A block a front holds serves the request (malloc_locked's hit). */
static uint64_t front_hit(struct gpucache_allocator *allocator, struct block *block, size_t size,
                          enum pool_kind pool, gpucache_stream stream)
{
    /* A front hit is a lookup of the pool for garbage collection's ages, as
     * the tree search it replaces was. */
    if (allocator->gc_enabled)
        allocator->pools[pool].gc_clock++;
    emit_block_event(allocator, GPUCACHE_EVENT_ALLOC, block->address, size, block->size, stream);
    return block->address;
}

/* Hands out the free block `block` of the trees while fronts defer
 * decreases, its peaks taken against what the statistics read without
 * those; `front` (the stream's own, or NULL) hands it out
 * (front_cache_allocated_beside). */
static uint64_t allocate_beside_fronts(struct gpucache_allocator *allocator,
                                       struct front_cache *front, struct block *block,
                                       size_t size, size_t rounded, gpucache_stream stream,
                                       bool lower_bound)
{
    struct front_peaks peaks;
    front_cache_save_peaks(allocator, block->pool, &peaks);
    block = allocate_found_block(allocator, block, size, rounded, stream, lower_bound);
    front_cache_allocated_beside(allocator, front, block, &peaks);
    return block->address;
}

/* Whether the free block `block` could have been merged into the stream
 * of a neighbour that waits in the slot of a front other than `own`, where
 * this stream could not then have taken it: freed at once, as
 * merge-at-free frees it, that neighbour takes in free neighbours cleared
 * for its stream, and merge-at-free would grow here unless the merged
 * block is cleared too. So the allocation waits for the flush that merges
 * it. A block no fence has cleared was not mergeable then either; a
 * neighbour a front handed out, or one whose synchronous free waits for its
 * fence, is not free under merge-at-free; a neighbour cleared for every
 * stream leaves its merged block to this stream's cross-stream fit. */
static bool beside_other_fronts(struct gpucache_allocator *allocator, const struct block *block,
                                const struct front_cache *own)
{
    struct block *neighbours[2] = {block->prev, block->next};
    for (int i = 0; i < 2; i++)
        if (neighbours[i] != NULL && neighbours[i]->state == BLOCK_FRONT &&
            (own == NULL || neighbours[i]->front != own->index) &&
            block_cleared(allocator, block) &&
            front_cache_slot_holds_uncleared(allocator, neighbours[i]))
            return true;
    return false;
}

/* A miss while other streams' fronts are claimed, or while its own front
 * waits for the fence of a batch of its lane's synchronous frees of the
 * size, served without flushing the fronts: a flush would send every pair
 * after it, on every stream, down the ordinary path until the fronts
 * filled again. The stream's own slots merge back, so that the best fit
 * sees what merge-at-free would have; other streams' fronts hold nothing
 * this stream may take before a fence. A free block of the trees serves,
 * handed out by the stream's front so that its free comes back through
 * the lane. With none, while the front's batch waits, the oldest epoch of
 * synchronous frees is waited for, as the miss chain would before growing,
 * and the front's slot serves. False (nothing done) where the flush and
 * the miss chain must serve: a stream alone with its front and no batch
 * of the size keeps the flush, whose exact statistics cost less than
 * deferring them past the miss. */
static bool malloc_beside_fronts(struct gpucache_allocator *allocator, struct front_cache *own,
                                 size_t size, size_t rounded, enum pool_kind pool,
                                 gpucache_stream stream, uint64_t *address)
{
    unsigned others = allocator->fronts_claimed & ~(own != NULL ? 1u << own->index : 0u);
    /* Batches exist only where the lanes serve synchronous frees. */
    bool batch_waits = own != NULL && __atomic_load_n(&own->fenced_batches, __ATOMIC_RELAXED) != 0 &&
                       front_cache_keeps(own, rounded | pool);
    if (others == 0 && !batch_waits)
        return false;
    if (own != NULL)
        front_cache_empty_slots(allocator, own);
    /* The stream's best fit (in a plain segment the lower bound itself),
     * else, as the miss chain would take next, a block of another stream
     * that no GPU work can still be using. */
    struct block *block = free_blocks_best_fit(allocator, pool, stream, rounded);
    bool lower_bound = block != NULL && block->segment->kind == SEGMENT_PLAIN;
    if (block == NULL) {
        /* A block taken into a stream's keeping needs the stream's state,
         * as the miss chain makes it: without one, nothing could prove the
         * stream's work on it done, and it would never merge with a
         * neighbour of another stream nor its segment go back. */
        if (stream_state_find(allocator, stream, true) == NULL)
            return false;
        block = free_blocks_cross_stream_fit(allocator, pool, stream, rounded);
    }
    if (block != NULL) {
        if (beside_other_fronts(allocator, block, own))
            return false;
        *address =
            allocate_beside_fronts(allocator, own, block, size, rounded, stream, lower_bound);
        return true;
    }
    if (!batch_waits)
        return false;
    /* Its own batch: another front's would refill that front, not this
     * one, and the miss would then flush them all. */
    if (!front_cache_wait_batch(allocator, own) ||
        (block = front_cache_take(allocator, stream, rounded, pool, size)) == NULL)
        return false;
    *address = front_hit(allocator, block, size, pool, stream);
    return true;
}

/* The allocation the front could not serve, under the lock: best fit, then
 * the miss chain. */
__attribute__((noinline)) static gpucache_result
malloc_past_front(struct gpucache_allocator *allocator, size_t size, size_t rounded,
                  enum pool_kind pool, gpucache_stream stream, uint64_t *address)
{
    if (allocator->fronts_claimed != 0 &&
        malloc_beside_fronts(allocator, front_cache_of_stream(allocator, stream), size, rounded,
                             pool, stream, address))
        return GPUCACHE_SUCCESS;
    /* Every other path sees the fronts' blocks as free blocks, and
     * statistics are exact again before any of them rises. */
    front_cache_flush(allocator);
    gpucache_result result = GPUCACHE_SUCCESS;
    struct block *block = free_blocks_best_fit(allocator, pool, stream, rounded);
    /* In a plain segment the best fit is the lower bound itself. */
    bool lower_bound = block != NULL && block->segment->kind == SEGMENT_PLAIN;
    if (block == NULL)
        block = allocate_on_miss(allocator, pool, stream, rounded, &result);
    if (block != NULL) {
        /* A step of the chain may have failed before a later one succeeded. */
        result = GPUCACHE_SUCCESS;
        *address =
            allocate_found_block(allocator, block, size, rounded, stream, lower_bound)->address;
    }
    return result;
}

/* Everything but a lane's hit, under the lock. Out of line: the hit then
 * saves no registers. */
__attribute__((noinline)) static gpucache_result
malloc_locked(struct gpucache_allocator *allocator, size_t size, gpucache_stream stream,
              uint64_t *address, bool query_due)
{
    allocator_lock(allocator);
    gpucache_result result;
    if (size > ALLOCATION_HARD_LIMIT) {
        result = report_request_too_large(allocator, size, stream);
    } else {
        /* Querying fences costs driver calls; a hit does not need the
         * blocks they free, so only every 8th allocation asks, or fewer
         * (query_pace; a miss always does). */
        if (allocator->closed_epoch_count != 0 &&
            (query_due || (allocator->mallocs_since_query++ & query_pace(allocator)) == 0))
            query_fences_from_hit_path(allocator);
        /* The stream's own batches may refill its slot: the lane asks for
         * them only when its slot takes a batch whole. */
        struct front_cache *own = query_due ? front_cache_of_stream(allocator, stream) : NULL;
        if (own != NULL && __atomic_load_n(&own->fenced_batches, __ATOMIC_RELAXED) != 0)
            front_cache_complete_batches(allocator, own);
        size_t rounded = allocator->rounds_plainly ? size_policy_round_plainly(size)
                                                   : size_policy_round(allocator->config, size);
        enum pool_kind pool = size_policy_is_small(rounded) ? POOL_SMALL : POOL_LARGE;
        struct block *front = front_cache_take(allocator, stream, rounded, pool, size);
        if (front != NULL) {
            *address = front_hit(allocator, front, size, pool, stream);
            result = GPUCACHE_SUCCESS;
        } else {
            result = malloc_past_front(allocator, size, rounded, pool, stream, address);
        }
    }
    pthread_mutex_unlock(&allocator->mutex);
    return result;
}

gpucache_result gpucache_allocator_malloc(struct gpucache_allocator *allocator, size_t size,
                                          gpucache_stream stream, uint64_t *address)
{
    if (size == 0 || address == NULL)
        return GPUCACHE_ERROR_INVALID_VALUE;
    uint64_t hit = LANE_MISS;
    if (size <= ALLOCATION_HARD_LIMIT) {
        hit = front_lane_take(allocator, stream, size);
        if (hit > LANE_QUERY_DUE) {
            *address = hit;
            return GPUCACHE_SUCCESS;
        }
    }
    return malloc_locked(allocator, size, stream, address, hit == LANE_QUERY_DUE);
}

/* The free of `block` (the map's entry for `address`, or NULL) that the
 * front did not take, under the lock. Out of line: the front's free then
 * saves no registers. */
__attribute__((noinline)) static gpucache_result
free_locked(struct gpucache_allocator *allocator, uint64_t address, struct block *block,
            enum gpucache_free_kind kind, gpucache_stream stream)
{
    if (block != NULL)
        block_map_remove(&allocator->allocated, address);
    if (block == NULL)
        return segment_source_find(allocator, address) != NULL ? GPUCACHE_ERROR_INVALID_VALUE
                                                               : GPUCACHE_ALLOCATOR_NOT_OURS;
    emit_block_event(allocator, GPUCACHE_EVENT_FREE_REQUESTED, block->address,
                     block->requested_size, block->size, block->stream);
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool; /* a local: see allocate_found_block */
    uint64_t bytes = block->size;
    stat_array_decrease(stats->allocation, pool, 1);
    stat_array_decrease(stats->allocated_bytes, pool, (int64_t)bytes);
    if (bytes >= allocator->config->max_split_size)
        stat_decrease(&stats->oversize_allocations, 1);

    bool same_stream = kind == GPUCACHE_FREE_STREAM_ORDERED && stream == block->stream;
    bool relaxed = kind == GPUCACHE_FREE_SYNCHRONOUS &&
                   allocator->config->reuse == GPUCACHE_REUSE_RELAXED;
    if (same_stream || relaxed) {
        /* Work on its own stream is ordered before any reuse there. */
        block->free_tick = allocator_next_tick(allocator);
        block_free_completed(allocator, block);
    } else {
        struct stream_state *state = &allocator->all_streams;
        if (kind == GPUCACHE_FREE_STREAM_ORDERED) {
            struct stream_state *own = stream_state_find(allocator, stream, true);
            if (own != NULL)
                state = own;
        }
        epoch_add_pending(allocator, state, block);
    }
    return GPUCACHE_SUCCESS;
}

/* Everything but a lane's free, under the lock. Out of line: the lane's
 * free then saves no registers. */
__attribute__((noinline)) static gpucache_result
free_past_lanes(struct gpucache_allocator *allocator, uint64_t address,
                enum gpucache_free_kind kind, gpucache_stream stream)
{
    allocator_lock(allocator);
    struct block *block = block_map_find(&allocator->allocated, address);
    /* A front's block is allocated when the front handed it out (it leaves
     * the front now); waiting in a slot, it was freed already. */
    if (block != NULL && block->state == BLOCK_FRONT &&
        !front_cache_handed_out(allocator, block, true))
        block = NULL;
    gpucache_result result = GPUCACHE_SUCCESS;
    if (block != NULL && block->state == BLOCK_ALLOCATED && kind == GPUCACHE_FREE_STREAM_ORDERED &&
        stream == block->stream && front_cache_put(allocator, block)) {
        /* Reusable at once on its own stream: the events of a same-stream
         * free, while the statistics wait for the flush. */
        emit_free_at_once(allocator, block->address, block->requested_size, block->size,
                          block->stream);
    } else {
        result = free_locked(allocator, address, block, kind, stream);
    }
    pthread_mutex_unlock(&allocator->mutex);
    return result;
}

gpucache_result gpucache_allocator_free(struct gpucache_allocator *allocator, uint64_t address,
                                        enum gpucache_free_kind kind, gpucache_stream stream)
{
    if (kind == GPUCACHE_FREE_STREAM_ORDERED ? front_lane_put(allocator, address, stream)
                                             : front_lane_free_synchronously(allocator, address))
        return GPUCACHE_SUCCESS;
    return free_past_lanes(allocator, address, kind, stream);
}

gpucache_result gpucache_allocator_pin_segment(struct gpucache_allocator *allocator,
                                               uint64_t address)
{
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    struct block *block = block_map_find(&allocator->allocated, address);
    struct segment *segment = block != NULL ? block->segment : NULL;
    gpucache_result result = GPUCACHE_ERROR_INVALID_VALUE;
    if (segment != NULL && segment->base == address && segment->kind == SEGMENT_PLAIN) {
        result = GPUCACHE_SUCCESS;
        if (!segment->pinned) {
            segment->pinned = true;
            for (struct block *piece = block; piece != NULL; piece = piece->next) {
                if (piece->state != BLOCK_FREE)
                    continue;
                free_blocks_remove(allocator, piece);
                change_inactive_split(allocator, piece, -1, -(int64_t)piece->size);
                retain_block(allocator, piece);
            }
        }
    }
    pthread_mutex_unlock(&allocator->mutex);
    return result;
}

bool gpucache_allocator_owns(struct gpucache_allocator *allocator, uint64_t address)
{
    pthread_mutex_lock(&allocator->mutex);
    bool ours = segment_source_find(allocator, address) != NULL;
    pthread_mutex_unlock(&allocator->mutex);
    return ours;
}

bool gpucache_allocator_block_size(struct gpucache_allocator *allocator, uint64_t address,
                                   size_t *requested_size)
{
    pthread_mutex_lock(&allocator->mutex);
    struct block *block = block_map_find(&allocator->allocated, address);
    if (block != NULL && block->state == BLOCK_FRONT &&
        !front_cache_handed_out(allocator, block, false))
        block = NULL;
    if (block != NULL && requested_size != NULL)
        *requested_size = block->requested_size;
    pthread_mutex_unlock(&allocator->mutex);
    return block != NULL;
}

void gpucache_allocator_empty_cache(struct gpucache_allocator *allocator)
{
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    epochs_process_completed(allocator);
    release_cached_blocks(allocator);
    pthread_mutex_unlock(&allocator->mutex);
}

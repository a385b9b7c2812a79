/* Front caches: a block freed stream-ordered on its own stream is reusable
 * at once on that stream (DESIGN.md, Reuse safety), so it may wait whole
 * for the next request of its size there, skipping the merge of the free
 * and the tree search and split of the hit. Nothing else may take it until
 * it is merged back, and everything else merges it back first: a block in a
 * front is never seen by another stream, a walk, a reader or the miss chain.
 *
 * The lanes (front_lane_take, front_lane_put, front_lane_free_synchronously)
 * serve a stream's hits and frees under its front's lock alone, so threads
 * on different streams run them side by side; so do the fences of a lane's
 * batches of synchronous frees and their completion into its slots. Every
 * other function here runs under the allocator's lock and takes a front's
 * lock around what it changes in the front. */
#include <sched.h>

#include "allocator_internal.h"
#include "gpucache_allocator_testing.h"
#include "size_policy.h"

/* The deferred counts a lane changes under its front's lock: the peaks
 * read them with every front's lock held (raise_peaks_slowly), so plain
 * arithmetic, which the compiler may fold into one instruction. */
static inline void counter_add(int64_t *counter, int64_t amount)
{
    *counter += amount;
}

static inline int64_t counter_read(const int64_t *counter)
{
    return *counter;
}

/* The lock: held for a few dozen instructions by a lane, longer only by a
 * flush, so a waiter spins briefly and then yields. */
static __attribute__((noinline)) void front_lock_wait(struct front_cache *front)
{
    for (unsigned spins = 0;; spins++) {
        if (__atomic_load_n(&front->lock, __ATOMIC_RELAXED) == 0 &&
            __atomic_exchange_n(&front->lock, 1, __ATOMIC_ACQUIRE) == 0)
            return;
        if (spins >= 64)
            sched_yield();
#if defined(__x86_64__) || defined(__i386__)
        else
            __builtin_ia32_pause();
#endif
    }
}

static inline void front_lock(struct front_cache *front)
{
    if (__builtin_expect(__atomic_exchange_n(&front->lock, 1, __ATOMIC_ACQUIRE) != 0, 0))
        front_lock_wait(front);
}

static inline void front_unlock(struct front_cache *front)
{
    __atomic_store_n(&front->lock, 0, __ATOMIC_RELEASE);
}

/* Takes the locks of the fronts in `claimed` (bits of fronts_claimed) but
 * `held`'s, in index order: under the allocator's lock, which no one else
 * holds then, and the lanes take one front's lock only, so no cycle forms. */
static void lock_fronts(struct gpucache_allocator *allocator, unsigned claimed,
                        const struct front_cache *held)
{
    for (; claimed != 0; claimed &= claimed - 1) {
        struct front_cache *front = &allocator->fronts[__builtin_ctz(claimed)];
        if (front != held)
            front_lock(front);
    }
}

static void unlock_fronts(struct gpucache_allocator *allocator, unsigned claimed,
                          const struct front_cache *held)
{
    for (; claimed != 0; claimed &= claimed - 1) {
        struct front_cache *front = &allocator->fronts[__builtin_ctz(claimed)];
        if (front != held)
            front_unlock(front);
    }
}

void front_cache_init(struct gpucache_allocator *allocator)
{
    for (int i = 0; i < FRONT_STREAMS; i++)
        allocator->fronts[i].index = (uint8_t)i;
}

/* The set of the handed-out map that `address` belongs to. Block addresses
 * are multiples of 512: those bits go, then Fibonacci hashing spreads
 * neighbouring blocks over the sets. */
static inline struct handed_out_entry *handed_out_set(struct front_cache *front,
                                                      uint64_t address)
{
    uint64_t mixed = (address >> 9) * UINT64_C(0x9E3779B97F4A7C15);
    return front->handed_out[mixed >> 58];
}

/* The entry of `address`, or NULL. */
static inline struct handed_out_entry *handed_out_find(struct front_cache *front,
                                                       uint64_t address)
{
    struct handed_out_entry *set = handed_out_set(front, address);
    if (set[0].address == address)
        return &set[0];
    if (set[1].address == address)
        return &set[1];
    return NULL;
}

/* An empty entry for `address`, or NULL when both ways are taken. */
static inline struct handed_out_entry *handed_out_room(struct front_cache *front,
                                                       uint64_t address)
{
    struct handed_out_entry *set = handed_out_set(front, address);
    if (set[0].address == 0)
        return &set[0];
    if (set[1].address == 0)
        return &set[1];
    return NULL;
}

static inline void handed_out_fill(struct front_cache *front, struct handed_out_entry *entry,
                                   struct block *block)
{
    entry->address = block->address;
    entry->block = block;
    front->handed_out_count++;
}

static inline void handed_out_clear(struct front_cache *front, struct handed_out_entry *entry)
{
    entry->address = 0;
    entry->block = NULL;
    front->handed_out_count--;
}

/* front_cache_of_stream past its check of the latest front: only the
 * allocator's lock claims and releases fronts. */
struct front_cache *front_cache_of_stream_slowly(struct gpucache_allocator *allocator,
                                                 gpucache_stream stream)
{
    for (int i = 0; i < FRONT_STREAMS; i++) {
        struct front_cache *front = &allocator->fronts[i];
        if (front->used && front->stream == stream) {
            allocator->last_front = front;
            return front;
        }
    }
    return NULL;
}

/* The free the block's front deferred, as gpucache_allocator_free applies
 * it, then the merge with its free neighbours. */
static void release_block(struct gpucache_allocator *allocator, struct front_cache *front,
                          struct block *block)
{
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool;
    block_map_remove(&allocator->allocated, block->address);
    counter_add(&front->active_blocks[pool], -1);
    counter_add(&front->active_bytes[pool], -(int64_t)block->size);
    counter_add(&front->requested[pool], -(int64_t)block->requested_size);
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[pool], -1);
        counter_add(&front->allocated_bytes[pool], -(int64_t)block->size);
        stat_array_decrease(stats->allocation, pool, 1);
        stat_array_decrease(stats->allocated_bytes, pool, (int64_t)block->size);
    }
    block->front_after_fence = false;
    /* Every free_tick stays at or below the tick: the checks for "nothing
     * freed since the last fence" compare them. Lanes take ticks meanwhile. */
    uint64_t tick = allocator_tick(allocator);
    while (block->free_tick > tick &&
           !__atomic_compare_exchange_n(&allocator->tick, &tick, block->free_tick, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    block->state = BLOCK_ALLOCATED;
    block_becomes_free(allocator, block);
}

/* Merges back the blocks of a slot, which keeps its size. */
static void empty_slot(struct gpucache_allocator *allocator, struct front_cache *front,
                       struct front_slot *slot)
{
    while (slot->top != NULL) {
        struct block *block = slot->top;
        slot->top = block->list_next;
        block->list_next = NULL;
        release_block(allocator, front, block);
    }
    slot->count = 0;
}

static void release_slot(struct gpucache_allocator *allocator, struct front_cache *front,
                         struct front_slot *slot)
{
    empty_slot(allocator, front, slot);
    slot->key = 0;
}

void front_cache_empty_slots(struct gpucache_allocator *allocator, struct front_cache *front)
{
    front_lock(front);
    for (int i = 0; i < FRONT_SIZES; i++)
        empty_slot(allocator, front, &front->slots[i]);
    front_unlock(front);
}

/* The blocks the front handed out become ordinary allocated blocks. */
static void return_handed_out(struct front_cache *front)
{
    for (int set = 0; set < FRONT_HANDED_OUT_SETS && front->handed_out_count != 0; set++)
        for (int way = 0; way < 2; way++) {
            struct handed_out_entry *entry = &front->handed_out[set][way];
            if (entry->address == 0)
                continue;
            entry->block->state = BLOCK_ALLOCATED;
            handed_out_clear(front, entry);
        }
}

static void settle_pair_totals(struct gpucache_allocator *allocator, struct front_cache *front)
{
    struct gpucache_stats *stats = &allocator->stats;
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct front_pair_totals *pairs = &front->pairs[pool];
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

/* A synchronous free the lane deferred becomes an ordinary pending block:
 * its allocation statistics fall, and it leaves the address map. */
static void settle_synchronous_free(struct gpucache_allocator *allocator,
                                    struct front_cache *front, struct block *block)
{
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool;
    counter_add(&front->allocated_blocks[pool], -1);
    counter_add(&front->allocated_bytes[pool], -(int64_t)block->size);
    stat_array_decrease(stats->allocation, pool, 1);
    stat_array_decrease(stats->allocated_bytes, pool, (int64_t)block->size);
    block_map_remove(&allocator->allocated, block->address);
    block->state = BLOCK_PENDING;
}

/* settle_synchronous_free for every block of `list` (linked by list_next). */
static void settle_synchronous_list(struct gpucache_allocator *allocator,
                                    struct front_cache *front, struct block *list)
{
    for (struct block *block = list; block != NULL; block = block->list_next)
        settle_synchronous_free(allocator, front, block);
}

/* The pending values of `batch` leave the front for the statistics: its
 * ceiling falls with them, so the sum stays within the peaks. */
static void pending_leave_front(struct gpucache_allocator *allocator, struct front_cache *front,
                                const struct lane_batch *batch)
{
    int64_t amount[2] = {(int64_t)batch->count,
                         (int64_t)(batch->bytes[POOL_SMALL] + batch->bytes[POOL_LARGE])};
    for (int i = 0; i < 2; i++) {
        front->pending_waiting[i] -= amount[i];
        front->pending_ceiling[i] -= amount[i];
        allocator->pending_ceilings[i] -= amount[i];
    }
}

/* The oldest of the front's fenced batches, taken out. */
static struct front_batch pop_fenced(struct front_cache *front)
{
    struct front_batch batch = front->fenced[front->fenced_oldest];
    front->fenced_oldest = (front->fenced_oldest + 1) % FRONT_FENCED_BATCHES;
    __atomic_store_n(&front->fenced_batches, front->fenced_batches - 1, __ATOMIC_RELAXED);
    return batch;
}

/* A fenced batch taken out of the front becomes an ordinary epoch of
 * every stream; the front's lock held. Without an epoch to hold it, its
 * fence goes and its blocks are returned for the open epoch. */
static struct block *settle_fenced(struct gpucache_allocator *allocator, struct front_cache *front,
                                   const struct front_batch *batch)
{
    settle_synchronous_list(allocator, front, batch->batch.first);
    pending_leave_front(allocator, front, &batch->batch);
    if (epochs_add_fenced_batch(allocator, batch))
        return NULL;
    driver_fence_release(allocator, batch->fence);
    return batch->batch.first;
}

static struct block *settle_oldest_fenced(struct gpucache_allocator *allocator,
                                          struct front_cache *front)
{
    struct front_batch batch = pop_fenced(front);
    return settle_fenced(allocator, front, &batch);
}

/* The front's unfenced frees become ordinary pending blocks, returned for
 * the open epoch; its lock held. */
static struct block *settle_unfenced(struct gpucache_allocator *allocator,
                                     struct front_cache *front)
{
    struct lane_batch unfenced = front->unfenced;
    settle_synchronous_list(allocator, front, unfenced.first);
    pending_leave_front(allocator, front, &unfenced);
    front->unfenced = (struct lane_batch){0};
    return unfenced.first;
}

/* Appends `list` to `*to` (both linked by list_next). */
static void append_blocks(struct block **to, struct block *list)
{
    while (*to != NULL)
        to = &(*to)->list_next;
    *to = list;
}

/* The front's fenced batches become ordinary epochs, and its unfenced
 * frees ordinary pending blocks, returned (linked by list_next) for the
 * open epoch; its lock held. */
static struct block *settle_synchronous_frees(struct gpucache_allocator *allocator,
                                              struct front_cache *front)
{
    struct block *open = NULL;
    while (front->fenced_batches != 0)
        append_blocks(&open, settle_oldest_fenced(allocator, front));
    append_blocks(&open, settle_unfenced(allocator, front));
    return open;
}

/* What the front's lane's synchronous frees owe, settled: its batches and
 * unfenced frees become ordinary epochs and pending blocks (returned for
 * the open epoch), its fences' totals are added, and its ceilings go. Its
 * lock held. */
static struct block *settle_synchronous(struct gpucache_allocator *allocator,
                                        struct front_cache *front)
{
    struct gpucache_stats *stats = &allocator->stats;
    struct block *unfenced = settle_synchronous_frees(allocator, front);
    /* The batches its lane fenced and completed itself. */
    struct gpucache_stat *pending[2] = {&stats->pending_blocks, &stats->pending_bytes};
    for (int i = 0; i < 2; i++) {
        pending[i]->allocated += front->pending_completed[i];
        pending[i]->freed += front->pending_completed[i];
        front->pending_completed[i] = 0;
    }
    stats->num_epochs_closed += front->epochs_closed;
    stats->driver_nanoseconds += front->driver_nanoseconds;
    if (front->completed_tick > allocator->all_completed_tick)
        allocator->all_completed_tick = front->completed_tick;
    front->epochs_closed = 0;
    front->driver_nanoseconds = 0;
    front->completed_tick = 0;
    /* Its waiting values left with its batches; what is left of its
     * ceilings is room no one holds. */
    for (int i = 0; i < 2; i++) {
        allocator->pending_ceilings[i] -= front->pending_ceiling[i];
        front->pending_ceiling[i] = front->pending_most[i] = 0;
    }
    front->synchronous = false;
    return unfenced;
}

/* Empties a front and gives it up; its lock held. Returns its unfenced
 * synchronous frees, for the open epoch. */
static struct block *release_front_locked(struct gpucache_allocator *allocator,
                                          struct front_cache *front)
{
    for (int i = 0; i < FRONT_SIZES; i++)
        release_slot(allocator, front, &front->slots[i]);
    /* Only a front that shared the pending room may hold any. */
    struct block *unfenced = front->synchronous ? settle_synchronous(allocator, front) : NULL;
    return_handed_out(front);
    settle_pair_totals(allocator, front);
    for (int pool = 0; pool < POOL_COUNT; pool++)
        front->requested_floor[pool] = front->allocated_blocks_floor[pool] =
            front->allocated_bytes_floor[pool] = front->active_blocks_floor[pool] =
                front->active_bytes_floor[pool] = 0;
    front->floored = false;
    __atomic_store_n(&front->used, false, __ATOMIC_RELAXED);
    front->next_victim = 0;
    front->hits_since_query = 0;
    __atomic_store_n(&allocator->fronts_claimed,
                     (uint8_t)(allocator->fronts_claimed & ~(1u << front->index)), __ATOMIC_RELAXED);
    if (allocator->last_front == front)
        allocator->last_front = NULL;
    return unfenced;
}

static void release_front(struct gpucache_allocator *allocator, struct front_cache *front)
{
    front_lock(front);
    struct block *unfenced = release_front_locked(allocator, front);
    front_unlock(front);
    /* Outside the front's lock: the epochs never take it. */
    epochs_add_synchronous_frees(allocator, unfenced);
}

void front_cache_flush_slow(struct gpucache_allocator *allocator)
{
    while (allocator->fronts_claimed != 0)
        release_front(allocator, &allocator->fronts[__builtin_ctz(allocator->fronts_claimed)]);
}

void gpucache_allocator_lane_counts(struct gpucache_allocator *allocator, uint64_t *hits,
                                    uint64_t *frees)
{
    *hits = *frees = 0;
    for (int i = 0; i < FRONT_STREAMS; i++) {
        struct front_cache *front = &allocator->fronts[i];
        front_lock(front);
        *hits += front->lane_hits;
        *frees += front->lane_frees;
        front_unlock(front);
    }
}

void gpucache_allocator_hold_lock(struct gpucache_allocator *allocator, bool held)
{
    if (held)
        pthread_mutex_lock(&allocator->mutex);
    else
        pthread_mutex_unlock(&allocator->mutex);
}

uint64_t gpucache_allocator_lane_synchronous_frees(struct gpucache_allocator *allocator)
{
    uint64_t frees = 0;
    for (int i = 0; i < FRONT_STREAMS; i++) {
        struct front_cache *front = &allocator->fronts[i];
        front_lock(front);
        frees += front->lane_synchronous_frees;
        front_unlock(front);
    }
    return frees;
}

void front_cache_flush_stream(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    struct front_cache *front = front_cache_of_stream(allocator, stream);
    if (front != NULL)
        release_front(allocator, front);
}

bool front_cache_handed_out(struct gpucache_allocator *allocator, struct block *block,
                            bool reclaim)
{
    struct front_cache *front = &allocator->fronts[block->front];
    front_lock(front);
    struct handed_out_entry *entry = handed_out_find(front, block->address);
    bool handed_out = entry != NULL && entry->block == block;
    if (handed_out && reclaim) {
        handed_out_clear(front, entry);
        block->state = BLOCK_ALLOCATED;
    }
    front_unlock(front);
    return handed_out;
}

/* Puts a block in a slot of its front; the front's lock held. The block is
 * BLOCK_FRONT of this front already: a lane never writes a block's state. */
static void slot_push(struct front_cache *front, struct front_slot *slot, struct block *block)
{
    block->list_next = slot->top;
    slot->top = block;
    slot->count++;
    counter_add(&front->active_blocks[block->pool], 1);
    counter_add(&front->active_bytes[block->pool], (int64_t)block->size);
    counter_add(&front->requested[block->pool], (int64_t)block->requested_size);
}

/* slot_push, with the block's allocation statistics deferred now (a block
 * a fence freed had them lowered then; its hit raises them). */
static void front_push(struct front_cache *front, struct front_slot *slot, struct block *block)
{
    slot_push(front, slot, block);
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[block->pool], 1);
        counter_add(&front->allocated_bytes[block->pool], (int64_t)block->size);
    }
}

static struct front_cache *front_claim(struct gpucache_allocator *allocator,
                                       gpucache_stream stream)
{
    struct front_cache *front = front_cache_of_stream(allocator, stream);
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
    front_lock(front);
    __atomic_store_n(&front->stream, stream, __ATOMIC_RELAXED);
    __atomic_store_n(&front->used, true, __ATOMIC_RELAXED);
    front_unlock(front);
    __atomic_store_n(&allocator->fronts_claimed,
                     (uint8_t)(allocator->fronts_claimed | 1u << front->index), __ATOMIC_RELAXED);
    allocator->last_front = front;
    return front;
}

/* The slot of `key` in the front, or NULL; the front's lock held. */
static struct front_slot *slot_for_key(struct front_cache *front, uint64_t key)
{
    for (int i = 0; i < FRONT_SIZES; i++)
        if (front->slots[i].key == key)
            return &front->slots[i];
    return NULL;
}

/* The slot of `key` in the front, or an unused one claimed for it; NULL when
 * every slot holds another size. */
static struct front_slot *slot_for(struct front_cache *front, uint64_t key)
{
    struct front_slot *unused = NULL;
    for (int i = 0; i < FRONT_SIZES; i++) {
        struct front_slot *slot = &front->slots[i];
        if (slot->key == key)
            return slot;
        if (slot->key == 0 && unused == NULL)
            unused = slot;
    }
    if (unused != NULL)
        unused->key = key;
    return unused;
}

/* slot_for, replacing (and merging back) another size's slot when every
 * slot is taken; the front's lock held. */
static struct front_slot *slot_claim(struct gpucache_allocator *allocator,
                                     struct front_cache *front, uint64_t key)
{
    struct front_slot *slot = slot_for(front, key);
    if (slot == NULL) {
        slot = &front->slots[front->next_victim];
        front->next_victim = (uint8_t)((front->next_victim + 1) % FRONT_SIZES);
        release_slot(allocator, front, slot);
        slot->key = key;
    }
    return slot;
}

static bool front_put_in_front(struct gpucache_allocator *allocator, struct block *block)
{
    struct front_cache *front = front_claim(allocator, block->stream);
    front_lock(front);
    struct front_slot *slot = slot_claim(allocator, front, block->size | block->pool);
    bool taken = slot->count < FRONT_DEPTH;
    if (taken) {
        block->state = BLOCK_FRONT;
        block->front = front->index;
        front_push(front, slot, block);
    }
    front_unlock(front);
    return taken;
}

/* Whether a slot may hold `block`: oversize blocks change
 * oversize_allocations and are few; blocks of a pinned segment are
 * retained, never reused. */
static inline bool slot_may_hold(const struct gpucache_allocator *allocator,
                                 const struct block *block)
{
    return block->size < allocator->config->max_split_size && !block->segment->pinned;
}

bool front_cache_put(struct gpucache_allocator *allocator, struct block *block)
{
    if (!slot_may_hold(allocator, block))
        return false;
    /* Reusable at once on its own stream; other streams need a fence after
     * this free. */
    block->free_tick = allocator_next_tick(allocator);
    return front_put_in_front(allocator, block);
}

bool front_cache_put_after_fence(struct gpucache_allocator *allocator, struct block *block)
{
    /* A retired stream allocates nothing; the address map must take the
     * block back, which the block store reserved room for. */
    if (!allocator->completions_to_front || block->stream == STREAM_RETIRED ||
        !slot_may_hold(allocator, block))
        return false;
    block->front_after_fence = true;
    if (!front_put_in_front(allocator, block)) {
        block->front_after_fence = false;
        return false;
    }
    block_map_insert(&allocator->allocated, block->address, block);
    return true;
}

/* What the statistics would read without the deferred decreases of the
 * fronts' blocks, for the peaks of a hit that raises them: the lanes change
 * those counts under their fronts' locks alone, so they are read
 * atomically. `counters` is the offset of a [POOL_COUNT] array of a front;
 * [0]: both pools, [1]: `pool`. */
static void front_waiting(const struct gpucache_allocator *allocator, size_t counters,
                          enum pool_kind pool, int64_t waiting[2])
{
    waiting[0] = waiting[1] = 0;
    for (unsigned claimed = allocator->fronts_claimed; claimed != 0; claimed &= claimed - 1) {
        const int64_t *values = (const int64_t *)(const void *)((const char *)&allocator->fronts[__builtin_ctz(claimed)] + counters);
        int64_t here = counter_read(&values[pool]);
        waiting[0] += here + counter_read(&values[pool ^ 1]);
        waiting[1] += here;
    }
}

/* The floor of the deferred count at `counters` (it follows the count). */
#define FRONT_FLOOR(front, counters) \
    ((int64_t *)(void *)((char *)(front) + (counters) + POOL_COUNT * sizeof(int64_t)))
_Static_assert(offsetof(struct front_cache, requested_floor) ==
                       offsetof(struct front_cache, requested) + POOL_COUNT * sizeof(int64_t) &&
                   offsetof(struct front_cache, allocated_blocks_floor) ==
                       offsetof(struct front_cache, allocated_blocks) + POOL_COUNT * sizeof(int64_t) &&
                   offsetof(struct front_cache, allocated_bytes_floor) ==
                       offsetof(struct front_cache, allocated_bytes) + POOL_COUNT * sizeof(int64_t) &&
                   offsetof(struct front_cache, active_blocks_floor) ==
                       offsetof(struct front_cache, active_blocks) + POOL_COUNT * sizeof(int64_t) &&
                   offsetof(struct front_cache, active_bytes_floor) ==
                       offsetof(struct front_cache, active_bytes) + POOL_COUNT * sizeof(int64_t),
               "each deferred count is followed by its floor");

/* A value is above its peak while fronts defer decreases of it, so a
 * lane's hit, which ends a deferred decrease, could raise what the
 * statistics would read past the peak. Raises the peaks of the `all` and
 * `pool` slots of `array` to that reading (the deferred counts at
 * `counters`), then sets the floors of those counts: every front's below
 * its count now by a share of the room left under the peaks, so that the
 * shares add up to the room. A hit that keeps its front's counts at or
 * above their floors then keeps the reading at or below the peaks; one
 * that would not takes this path again. Every front's lock is held across
 * the reading and the setting, so no lane's hit falls between them.
 *
 * The room is shared in `granule`s, what the hit being served takes (1 for
 * a count, its size for bytes): an even split of less than a granule each
 * lets no front hit at all. Granules left over go to the other fronts
 * before `held`, the front being served: its next hit most likely follows
 * its own free, which gives the room back to it, while another front may
 * be between its free and its next hit. With a leftover granule given to
 * the front served, threads on two streams at the peak sent each other's
 * next hit here turn by turn. */
static __attribute__((noinline)) void raise_peaks_slowly(struct gpucache_allocator *allocator,
                                                         struct front_cache *held,
                                                         struct gpucache_stat *array,
                                                         enum pool_kind pool, size_t counters,
                                                         int64_t granule)
{
    struct gpucache_stat *stats[2] = {&array[GPUCACHE_STAT_ALL], &array[stat_type_of(pool)]};
    unsigned claimed = allocator->fronts_claimed;
    lock_fronts(allocator, claimed, held);
    int64_t waiting[2];
    front_waiting(allocator, counters, pool, waiting);
    int64_t room = INT64_MAX;
    for (int i = 0; i < 2; i++) {
        int64_t reading = stats[i]->current - waiting[i];
        if (reading > stats[i]->peak)
            stats[i]->peak = reading;
        if (stats[i]->peak - reading < room)
            room = stats[i]->peak - reading;
    }
    int64_t fronts = __builtin_popcount(claimed);
    if (granule < 1)
        granule = 1;
    int64_t granules = room / granule;
    int64_t share = granules / fronts;
    int64_t extra = granules - share * fronts; /* granules left over, < fronts */
    int64_t dust = room - granules * granule;  /* less than a granule: to `held` */
    for (unsigned rest = claimed; rest != 0; rest &= rest - 1) {
        struct front_cache *front = &allocator->fronts[__builtin_ctz(rest)];
        const int64_t *counts = (const int64_t *)(const void *)((const char *)front + counters);
        int64_t *floors = FRONT_FLOOR(front, counters);
        for (int p = 0; p < POOL_COUNT; p++)
            floors[p] = counts[p];
        front->floored = true;
        int64_t spend = share * granule;
        if (front != held && extra > 0) {
            spend += granule;
            extra--;
        }
        floors[pool] = counts[pool] > spend ? counts[pool] - spend : 0;
    }
    /* Left over when every other front has one more granule, or no front
     * but `held` is claimed. */
    if (held != NULL) {
        int64_t *floors = FRONT_FLOOR(held, counters);
        int64_t spend = extra * granule + dust;
        floors[pool] = floors[pool] > spend ? floors[pool] - spend : 0;
    }
    unlock_fronts(allocator, claimed, held);
}

/* raise_peaks_slowly where a value is above its peak. */
static inline void raise_peaks(struct gpucache_allocator *allocator,
                               struct front_cache *held, struct gpucache_stat *array,
                               enum pool_kind pool, size_t counters, int64_t granule)
{
    const struct gpucache_stat *all = &array[GPUCACHE_STAT_ALL];
    const struct gpucache_stat *own = &array[stat_type_of(pool)];
    if (all->current > all->peak || own->current > own->peak)
        raise_peaks_slowly(allocator, held, array, pool, counters, granule);
}

/* A hit whose request differs from the block's last one changes
 * requested_bytes as the eager free and allocation would have. */
static void front_change_requested(struct gpucache_allocator *allocator,
                                   struct front_cache *held, enum pool_kind pool,
                                   uint64_t old, uint64_t requested)
{
    struct gpucache_stat *array = allocator->stats.requested_bytes;
    int indices[2] = {GPUCACHE_STAT_ALL, stat_type_of(pool)};
    for (int i = 0; i < 2; i++) {
        struct gpucache_stat *stat = &array[indices[i]];
        stat->current += (int64_t)requested - (int64_t)old;
        stat->allocated += (int64_t)requested;
        stat->freed += (int64_t)old;
    }
    raise_peaks(allocator, held, array, pool, offsetof(struct front_cache, requested),
                (int64_t)requested);
}

/* A hit of a block whose allocation statistics fell at its free: they rise
 * again. */
static void front_count_allocated(struct gpucache_allocator *allocator,
                                  struct front_cache *held, enum pool_kind pool,
                                  int64_t bytes)
{
    struct gpucache_stats *stats = &allocator->stats;
    int indices[2] = {GPUCACHE_STAT_ALL, stat_type_of(pool)};
    for (int i = 0; i < 2; i++) {
        stats->allocation[indices[i]].current += 1;
        stats->allocation[indices[i]].allocated += 1;
        stats->allocated_bytes[indices[i]].current += bytes;
        stats->allocated_bytes[indices[i]].allocated += bytes;
    }
    raise_peaks(allocator, held, stats->allocation, pool,
                offsetof(struct front_cache, allocated_blocks), 1);
    raise_peaks(allocator, held, stats->allocated_bytes, pool,
                offsetof(struct front_cache, allocated_bytes), bytes);
}

/* Takes the top block of `slot` for a hit of `requested` bytes; the front's
 * lock held. The block stays BLOCK_FRONT. */
static inline __attribute__((always_inline)) struct block *
pop_for_hit(struct front_cache *front, struct front_slot *slot, enum pool_kind pool,
            uint64_t requested)
{
    struct block *block = slot->top;
    slot->top = block->list_next;
    slot->count--;
    block->list_next = NULL;
    int64_t size = (int64_t)block->size;
    counter_add(&front->active_blocks[pool], -1);
    counter_add(&front->active_bytes[pool], -size);
    counter_add(&front->requested[pool], -(int64_t)block->requested_size);
    struct front_pair_totals *pairs = &front->pairs[pool];
    pairs->active_count++;
    pairs->active_bytes += size;
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[pool], -1);
        counter_add(&front->allocated_bytes[pool], -size);
        pairs->allocation_count++;
        pairs->allocation_bytes += size;
    }
    if (block->requested_size == requested)
        pairs->requested += (int64_t)requested;
    return block;
}

/* Whether a hit of `block` would take an active count of its front below
 * its floor; the front's lock held. */
static inline bool below_active_floors(const struct front_cache *front,
                                       const struct block *block, enum pool_kind pool)
{
    return front->active_blocks[pool] - 1 < front->active_blocks_floor[pool] ||
           front->active_bytes[pool] - (int64_t)block->size < front->active_bytes_floor[pool];
}

/* Whether a hit of `block` would take a deferred count of its front below
 * its floor; the front's lock held. */
static bool below_floors(const struct front_cache *front, const struct block *block,
                         enum pool_kind pool)
{
    return front->allocated_blocks[pool] - 1 < front->allocated_blocks_floor[pool] ||
           front->allocated_bytes[pool] - (int64_t)block->size <
               front->allocated_bytes_floor[pool] ||
           front->requested[pool] - (int64_t)block->requested_size <
               front->requested_floor[pool] ||
           below_active_floors(front, block, pool);
}

struct block *front_cache_take(struct gpucache_allocator *allocator, gpucache_stream stream,
                               uint64_t size, enum pool_kind pool, uint64_t requested)
{
    if (allocator->fronts_claimed == 0)
        return NULL;
    struct front_cache *front = front_cache_of_stream(allocator, stream);
    if (front == NULL)
        return NULL;
    front_lock(front);
    struct block *block = NULL;
    /* A hit that keeps its front's deferred counts at or above their floors
     * keeps what the statistics would read at or below the peaks, as a
     * lane's does (raise_peaks_slowly); below them, it raises the peaks. */
    bool below = false;
    bool below_active = false;
    for (int i = 0; i < FRONT_SIZES && block == NULL; i++) {
        struct front_slot *slot = &front->slots[i];
        if (slot->key == (size | pool) && slot->top != NULL) {
            below = front->floored && !slot->top->front_after_fence &&
                    below_floors(front, slot->top, pool);
            below_active = front->floored && below_active_floors(front, slot->top, pool);
            block = pop_for_hit(front, slot, pool, requested);
        }
    }
    if (block != NULL) {
        /* A block freed synchronously is most likely freed so again: it is
         * handed out only when the lane serves such frees. */
        bool hand_out = !block->front_after_fence || allocator->lanes_free_synchronously;
        bool after_fence = block->front_after_fence;
        if (after_fence) {
            front_count_allocated(allocator, front, pool, (int64_t)block->size);
        } else if (below) {
            raise_peaks(allocator, front, allocator->stats.allocation, pool,
                        offsetof(struct front_cache, allocated_blocks), 1);
            raise_peaks(allocator, front, allocator->stats.allocated_bytes, pool,
                        offsetof(struct front_cache, allocated_bytes), (int64_t)size);
        }
        if (below_active) {
            raise_peaks(allocator, front, allocator->stats.active, pool,
                        offsetof(struct front_cache, active_blocks), 1);
            raise_peaks(allocator, front, allocator->stats.active_bytes, pool,
                        offsetof(struct front_cache, active_bytes), (int64_t)size);
        }
        if (block->requested_size != requested)
            front_change_requested(allocator, front, pool, block->requested_size, requested);
        else if (below || after_fence)
            raise_peaks(allocator, front, allocator->stats.requested_bytes, pool,
                        offsetof(struct front_cache, requested), (int64_t)requested);
        block->front_after_fence = false;
        block->requested_size = requested;
        block->free_tick = 0;
        /* Its free may then come back through the lane. */
        struct handed_out_entry *entry =
            hand_out ? handed_out_room(front, block->address) : NULL;
        if (entry != NULL)
            handed_out_fill(front, entry, block);
        else
            block->state = BLOCK_ALLOCATED;
    }
    front_unlock(front);
    return block;
}

bool front_cache_slot_holds_uncleared(struct gpucache_allocator *allocator,
                                      const struct block *block)
{
    struct front_cache *front = &allocator->fronts[block->front];
    /* Its lane writes the block's free_tick under this lock. */
    front_lock(front);
    struct front_slot *slot = slot_for_key(front, block->size | block->pool);
    bool held = false;
    for (const struct block *waiting = slot != NULL ? slot->top : NULL;
         waiting != NULL && !held; waiting = waiting->list_next)
        held = waiting == block;
    held = held && !block_cleared(allocator, block);
    front_unlock(front);
    return held;
}

bool front_cache_keeps(struct front_cache *front, uint64_t key)
{
    front_lock(front);
    bool keeps = slot_for_key(front, key) != NULL;
    front_unlock(front);
    return keeps;
}

/* The arrays of the statistics the fronts defer, and where each front
 * keeps its deferred counts of them. */
static struct gpucache_stat *deferred_array(struct gpucache_allocator *allocator, int which)
{
    struct gpucache_stats *stats = &allocator->stats;
    struct gpucache_stat *arrays[FRONT_DEFERRED_STATS] = {
        stats->allocation, stats->allocated_bytes, stats->requested_bytes, stats->active,
        stats->active_bytes,
    };
    return arrays[which];
}

static const size_t deferred_counters[FRONT_DEFERRED_STATS] = {
    offsetof(struct front_cache, allocated_blocks), offsetof(struct front_cache, allocated_bytes),
    offsetof(struct front_cache, requested),        offsetof(struct front_cache, active_blocks),
    offsetof(struct front_cache, active_bytes),
};

void front_cache_save_peaks(struct gpucache_allocator *allocator, enum pool_kind pool,
                            struct front_peaks *saved)
{
    for (int which = 0; which < FRONT_DEFERRED_STATS; which++) {
        const struct gpucache_stat *array = deferred_array(allocator, which);
        saved->peaks[which][0] = array[GPUCACHE_STAT_ALL].peak;
        saved->peaks[which][1] = array[stat_type_of(pool)].peak;
    }
}

/* The peaks `saved` put back, then raised to what the statistics read
 * without the fronts' deferred decreases, after the allocation of `block`
 * (`held`: a front whose lock the caller holds, or NULL). */
static void put_peaks_right(struct gpucache_allocator *allocator, struct front_cache *held,
                            const struct block *block, const struct front_peaks *saved)
{
    enum pool_kind pool = block->pool;
    int64_t granules[FRONT_DEFERRED_STATS] = {
        1, (int64_t)block->size, (int64_t)block->requested_size, 1, (int64_t)block->size,
    };
    for (int which = 0; which < FRONT_DEFERRED_STATS; which++) {
        struct gpucache_stat *array = deferred_array(allocator, which);
        array[GPUCACHE_STAT_ALL].peak = saved->peaks[which][0];
        array[stat_type_of(pool)].peak = saved->peaks[which][1];
        raise_peaks(allocator, held, array, pool, deferred_counters[which], granules[which]);
    }
}

void front_cache_allocated_beside(struct gpucache_allocator *allocator, struct front_cache *front,
                                  struct block *block, const struct front_peaks *saved)
{
    if (front == NULL) {
        put_peaks_right(allocator, NULL, block, saved);
        return;
    }
    front_lock(front);
    put_peaks_right(allocator, front, block, saved);
    /* Only blocks a slot may hold come back through the lane. */
    struct handed_out_entry *entry =
        slot_may_hold(allocator, block) ? handed_out_room(front, block->address) : NULL;
    if (entry != NULL) {
        block->state = BLOCK_FRONT;
        block->front = front->index;
        handed_out_fill(front, entry, block);
    }
    front_unlock(front);
}

/* ---- the lanes: the front's lock only */

__thread uint8_t front_lane_hint __attribute__((tls_model("initial-exec")));

struct front_cache *front_lane_find_other(struct gpucache_allocator *allocator,
                                          gpucache_stream stream)
{
    /* Only the claimed fronts: a claim this load misses makes a lane miss,
     * which the ordinary path serves. */
    for (unsigned claimed = __atomic_load_n(&allocator->fronts_claimed, __ATOMIC_RELAXED);
         claimed != 0; claimed &= claimed - 1) {
        int i = __builtin_ctz(claimed);
        struct front_cache *front = &allocator->fronts[i];
        if (__atomic_load_n(&front->stream, __ATOMIC_RELAXED) == stream &&
            __atomic_load_n(&front->used, __ATOMIC_RELAXED)) {
            front_lane_hint = (uint8_t)i;
            return front;
        }
    }
    return NULL;
}

/* ---- the lanes' batches: fenced and completed by the lane itself, in its
 * front; the front's lock held throughout */

/* Whether the blocks of `batch` can go to their slot without replacing
 * another size's, which only the allocator's lock may merge back; claims an
 * unused slot for them. */
static bool batch_has_slot(struct front_cache *front, const struct lane_batch *batch)
{
    return batch->key != LANE_BATCH_MIXED && slot_for(front, batch->key) != NULL;
}

/* The blocks of a completed batch of the front, free for every stream now:
 * every one goes back to its slot, past the depth that caps a stream's own
 * frees, since these blocks are what the lane's synchronous frees
 * circulate, enough of them to cover a fence's delay. They grew only from
 * free blocks of the trees (malloc_beside_fronts), and a miss of their
 * stream, or one that the trees cannot serve, merges them back there. The
 * allocator's lock held too unless batch_has_slot. */
static void batch_to_slots(struct gpucache_allocator *allocator, struct front_cache *front,
                           const struct lane_batch *batch)
{
    struct block *list = batch->first;
    if (allocator->observer != NULL)
        for (struct block *block = list; block != NULL; block = block->list_next)
            emit_event(allocator, GPUCACHE_EVENT_FREE_COMPLETED, block->address,
                       block->requested_size, block->stream);
    int64_t amount[2] = {(int64_t)batch->count,
                         (int64_t)(batch->bytes[POOL_SMALL] + batch->bytes[POOL_LARGE])};
    for (int i = 0; i < 2; i++) {
        front->pending_waiting[i] -= amount[i];
        front->pending_completed[i] += amount[i];
    }
    if (batch->key != LANE_BATCH_MIXED) {
        /* One size, as a step's temporaries mostly are: the whole list goes
         * on top of its slot at once, as blocks freed on its stream (their
         * allocation statistics were deferred all along). */
        struct front_slot *slot = slot_claim(allocator, front, batch->key);
        batch->last->list_next = slot->top;
        slot->top = list;
        slot->count += batch->count;
        counter_add(&front->active_blocks[list->pool], (int64_t)batch->count);
        counter_add(&front->active_bytes[list->pool], (int64_t)batch->bytes[list->pool]);
        counter_add(&front->requested[list->pool], batch->requested);
        return;
    }
    struct front_slot *slot = NULL; /* the previous block's */
    while (list != NULL) {
        struct block *block = list;
        list = block->list_next;
        uint64_t key = block->size | block->pool;
        if (slot == NULL || slot->key != key)
            slot = slot_claim(allocator, front, key);
        slot_push(front, slot, block);
    }
}

/* Completes the front's oldest batch if its fence has; the allocator's lock
 * held too unless batch_has_slot. */
static bool complete_oldest_fenced(struct gpucache_allocator *allocator, struct front_cache *front)
{
    const struct gpucache_driver *driver = allocator->driver;
    struct gpucache_fence *fence = front->fenced[front->fenced_oldest].fence;
    int64_t timer = driver_timer_start();
    /* No queries during a capture, as on the ordinary path. */
    gpucache_result result = GPUCACHE_ERROR_NOT_READY;
    if (!driver->capture_active(driver->context, allocator->device))
        result = driver->fence_query(driver->context, fence);
    if (result == GPUCACHE_SUCCESS)
        driver->fence_release(driver->context, fence);
    front->driver_nanoseconds += monotonic_nanoseconds() - timer;
    if (result != GPUCACHE_SUCCESS)
        return false;
    struct front_batch done = pop_fenced(front);
    if (done.tick > front->completed_tick)
        front->completed_tick = done.tick;
    batch_to_slots(allocator, front, &done.batch);
    return true;
}

/* Fences the front's unfenced frees on every stream, as a batch of the
 * front. False when every batch waits already, or no fence could be
 * recorded (a capture, a driver error): the allocator's lock decides then
 * (front_cache_fence_batch). The driver call holds only this lock, so
 * threads on other streams go on meanwhile. */
static bool fence_in_front(struct gpucache_allocator *allocator, struct front_cache *front)
{
    if (front->fenced_batches == FRONT_FENCED_BATCHES)
        return false;
    const struct gpucache_driver *driver = allocator->driver;
    /* Taken before the record: a lane's free that read the older tick came
     * before the record, so the fence covers it. */
    uint64_t tick = allocator_next_tick(allocator);
    struct gpucache_fence *fence = NULL;
    gpucache_result result = GPUCACHE_ERROR_NOT_READY;
    int64_t timer = driver_timer_start();
    /* No events during capture: the blocks stay pending. */
    if (!driver->capture_active(driver->context, allocator->device))
        result = driver->fence_all_streams(driver->context, allocator->device, &fence);
    front->driver_nanoseconds += monotonic_nanoseconds() - timer;
    if (result != GPUCACHE_SUCCESS)
        return false;
    struct front_batch *batch =
        &front->fenced[(front->fenced_oldest + front->fenced_batches) % FRONT_FENCED_BATCHES];
    batch->batch = front->unfenced;
    batch->fence = fence;
    batch->tick = tick;
    /* After its last free: a synchronize whose point came before it proves
     * nothing of this batch (front_cache_batches_done). */
    batch->last_free = allocator_next_free(allocator);
    front->unfenced = (struct lane_batch){0};
    __atomic_store_n(&front->fenced_batches, front->fenced_batches + 1, __ATOMIC_RELAXED);
    front->epochs_closed++;
    for (int i = 0; i < 2; i++)
        if (front->pending_waiting[i] > front->pending_most[i])
            front->pending_most[i] = front->pending_waiting[i];
    /* A slot that never runs dry never asks for its batches: with half of
     * them waiting, each fence asks for the oldest, so that the last does
     * not need the allocator's lock. */
    if (front->fenced_batches >= FRONT_FENCED_BATCHES / 2 &&
        batch_has_slot(front, &front->fenced[front->fenced_oldest].batch))
        complete_oldest_fenced(allocator, front);
    return true;
}



/* The lane's hit from the slot of `rounded | pool`, or LANE_MISS; *dry
 * when the slot had no block (not when its top block is not the lane's to
 * serve). */
static inline __attribute__((always_inline)) uint64_t
lane_hit(struct gpucache_allocator *allocator, struct front_cache *front, gpucache_stream stream,
         size_t size, size_t rounded, enum pool_kind pool, bool *dry)
{
    for (int i = 0; i < FRONT_SIZES; i++) {
        struct front_slot *slot = &front->slots[i];
        if (slot->key != (rounded | pool) || slot->top == NULL)
            continue;
        struct block *block = slot->top;
        /* A request of another size, or a block whose allocation
         * statistics fell at its free, moves peaks, and a block its set
         * cannot hold could not come back here: the ordinary path takes
         * them. */
        struct handed_out_entry *entry = handed_out_room(front, block->address);
        *dry = false;
        if (block->requested_size != size || block->front_after_fence || entry == NULL ||
            (front->floored && below_floors(front, block, pool)))
            return LANE_MISS;
        pop_for_hit(front, slot, pool, size);
        handed_out_fill(front, entry, block);
        front->lane_hits++;
        emit_block_event(allocator, GPUCACHE_EVENT_ALLOC, block->address, size, block->size,
                         stream);
        return block->address;
    }
    return LANE_MISS;
}

uint64_t front_lane_take_in(struct gpucache_allocator *allocator, struct front_cache *front,
                            gpucache_stream stream, size_t size)
{
    size_t rounded = allocator->rounds_plainly ? size_policy_round_plainly(size)
                                               : size_policy_round(allocator->config, size);
    enum pool_kind pool = size_policy_is_small(rounded) ? POOL_SMALL : POOL_LARGE;
    uint64_t address = LANE_MISS;
    front_lock(front);
    if (!front->used || front->stream != stream)
        goto done;
    /* Querying fences costs driver calls and needs the allocator's lock; a
     * hit does not need the blocks they free, so only every 8th hit asks,
     * or fewer (query_pace). */
    if (__atomic_load_n(&allocator->closed_epoch_count, __ATOMIC_RELAXED) != 0 &&
        (front->hits_since_query++ & query_pace(allocator)) == 0) {
        address = LANE_QUERY_DUE;
        goto done;
    }
    bool dry = true;
    address = lane_hit(allocator, front, stream, size, rounded, pool, &dry);
    if (address == LANE_MISS && dry && front->fenced_batches != 0) {
        /* The front's own batches need only its lock: a dry slot asks for
         * the oldest. A batch of several sizes may need another size's
         * slot merged back: the ordinary path asks for it then. If the
         * fence has not completed, the trees serve the miss
         * (malloc_beside_fronts), and the circulation grows until dry
         * slots, and so these queries, are rare. */
        if (!batch_has_slot(front, &front->fenced[front->fenced_oldest].batch))
            address = LANE_QUERY_DUE;
        else if (complete_oldest_fenced(allocator, front))
            address = lane_hit(allocator, front, stream, size, rounded, pool, &dry);
    }
done:
    front_unlock(front);
    return address;
}

bool front_lane_put_in(struct gpucache_allocator *allocator, struct front_cache *front,
                       uint64_t address, gpucache_stream stream)
{
    bool taken = false;
    front_lock(front);
    if (!front->used || front->stream != stream)
        goto done;
    struct handed_out_entry *entry = handed_out_find(front, address);
    if (entry == NULL)
        goto done;
    struct block *block = entry->block;
    struct front_slot *slot = slot_for(front, block->size | block->pool);
    if (slot == NULL || slot->count >= FRONT_DEPTH)
        goto done;
    handed_out_clear(front, entry);
    /* Reusable at once here; other streams need a fence recorded after this
     * free, and fences and synchronizations take a tick of their own first
     * (epochs_now, epoch_close), so the one after the tick read now is
     * above every fence recorded before and at or below every later one. */
    block->free_tick = __atomic_load_n(&allocator->tick, __ATOMIC_ACQUIRE) + 1;
    front_push(front, slot, block);
    front->lane_frees++;
    emit_free_at_once(allocator, block->address, block->requested_size, block->size,
                      block->stream);
    taken = true;
done:
    front_unlock(front);
    return taken;
}

/* The fence of a lane's batch that the front could not hold, out of line:
 * the lane's free then saves no registers for it. */
static __attribute__((noinline)) void fence_batch_locked(struct gpucache_allocator *allocator,
                                                         struct front_cache *front)
{
    allocator_lock(allocator);
    front_cache_fence_batch(allocator, front);
    pthread_mutex_unlock(&allocator->mutex);
}

/* A synchronous free whose pending values would pass the front's ceilings:
 * the room under the peaks is shared again, under the allocator's lock.
 * Returns with the front's lock held. Out of line, as above. */
static __attribute__((noinline)) void pending_room_locked(struct gpucache_allocator *allocator,
                                                          struct front_cache *front,
                                                          int64_t bytes)
{
    allocator_lock(allocator);
    const int64_t need[2] = {1, bytes};
    front_cache_pending_room(allocator, front, need);
    pthread_mutex_unlock(&allocator->mutex);
}

static inline bool over_pending_ceiling(const struct front_cache *front, int64_t bytes)
{
    return front->pending_waiting[0] + 1 > front->pending_ceiling[0] ||
           front->pending_waiting[1] + bytes > front->pending_ceiling[1];
}

bool front_lane_free_synchronously_in(struct gpucache_allocator *allocator,
                                      struct front_cache *front, uint64_t address)
{
    front_lock(front);
    struct handed_out_entry *entry = front->used ? handed_out_find(front, address) : NULL;
    if (entry != NULL && over_pending_ceiling(front, (int64_t)entry->block->size)) {
        int64_t bytes = (int64_t)entry->block->size;
        front_unlock(front);
        pending_room_locked(allocator, front, bytes);
        /* Another thread may have freed it or flushed the front meanwhile. */
        entry = front->used ? handed_out_find(front, address) : NULL;
        if (entry != NULL && over_pending_ceiling(front, (int64_t)entry->block->size))
            entry = NULL;
    }
    if (entry == NULL) {
        front_unlock(front);
        return false;
    }
    struct block *block = entry->block;
    handed_out_clear(front, entry);
    /* No longer allocated, though the statistics wait, as for a block in a
     * slot; it stays BLOCK_FRONT (a lane never writes a block's state) and
     * becomes pending when the front is flushed. */
    enum pool_kind pool = block->pool;
    counter_add(&front->allocated_blocks[pool], 1);
    counter_add(&front->allocated_bytes[pool], (int64_t)block->size);
    front->pending_waiting[0] += 1;
    front->pending_waiting[1] += (int64_t)block->size;
    block->list_next = NULL;
    if (front->unfenced.last != NULL)
        front->unfenced.last->list_next = block;
    else
        front->unfenced.first = block;
    front->unfenced.last = block;
    uint64_t key = block->size | pool;
    front->unfenced.key = front->unfenced.count == 0 || front->unfenced.key == key
                              ? key
                              : LANE_BATCH_MIXED;
    front->unfenced.count++;
    front->unfenced.bytes[pool] += block->size;
    front->unfenced.requested += (int64_t)block->requested_size;
    block->free_tick = 0; /* no same-stream free: its batch's fence clears it */
    front->lane_frees++;
    front->lane_synchronous_frees++;
    emit_block_event(allocator, GPUCACHE_EVENT_FREE_REQUESTED, block->address,
                     block->requested_size, block->size, block->stream);
    bool fence_due = front->unfenced.count >= EPOCH_CLOSE_FREES ||
                     front->unfenced.bytes[POOL_SMALL] + front->unfenced.bytes[POOL_LARGE] >=
                         EPOCH_CLOSE_BYTES;
    bool fenced = !fence_due || fence_in_front(allocator, front);
    front_unlock(front);
    if (!fenced)
        fence_batch_locked(allocator, front);
    return true;
}

void front_cache_fence_batch(struct gpucache_allocator *allocator, struct front_cache *front)
{
    front_lock(front);
    struct block *open = NULL;
    if (front->unfenced.first != NULL) {
        if (front->fenced_batches == FRONT_FENCED_BATCHES)
            open = settle_oldest_fenced(allocator, front);
        /* No fence now (a capture, a driver error): they wait in the open
         * epoch, as the ordinary path's synchronous frees do. */
        if (!fence_in_front(allocator, front))
            append_blocks(&open, settle_unfenced(allocator, front));
    }
    front_unlock(front);
    /* Outside the front's lock: the epochs may share the room again. */
    epochs_add_synchronous_frees(allocator, open);
}

void front_cache_fence_batches(struct gpucache_allocator *allocator)
{
    for (unsigned claimed = allocator->fronts_claimed; claimed != 0; claimed &= claimed - 1)
        front_cache_fence_batch(allocator, &allocator->fronts[__builtin_ctz(claimed)]);
}

void front_cache_complete_batches(struct gpucache_allocator *allocator, struct front_cache *front)
{
    front_lock(front);
    while (front->fenced_batches != 0 && complete_oldest_fenced(allocator, front))
        ;
    front_unlock(front);
}

bool front_cache_wait_batch(struct gpucache_allocator *allocator, struct front_cache *front)
{
    if (driver_capture_active(allocator))
        return false;
    front_lock(front);
    if (front->fenced_batches == 0) {
        front_unlock(front);
        return false;
    }
    /* Out of the front while the host waits, so that its lane goes on;
     * only the allocator's lock, held here, could flush it. */
    struct front_batch batch = pop_fenced(front);
    front_unlock(front);
    gpucache_result result;
    DRIVER_CALL(allocator, result, fence_wait, batch.fence);
    allocator->stats.num_fence_waits++;
    front_lock(front);
    struct block *open = NULL;
    if (result == GPUCACHE_SUCCESS) {
        driver_fence_release(allocator, batch.fence);
        if (batch.tick > front->completed_tick)
            front->completed_tick = batch.tick;
        batch_to_slots(allocator, front, &batch.batch);
    } else {
        open = settle_fenced(allocator, front, &batch);
    }
    front_unlock(front);
    epochs_add_synchronous_frees(allocator, open);
    return result == GPUCACHE_SUCCESS;
}

void front_cache_batches_done(struct gpucache_allocator *allocator, uint64_t frees)
{
    for (unsigned claimed = allocator->fronts_claimed; claimed != 0; claimed &= claimed - 1) {
        struct front_cache *front = &allocator->fronts[__builtin_ctz(claimed)];
        front_lock(front);
        while (front->fenced_batches != 0 &&
               front->fenced[front->fenced_oldest].last_free <= frees) {
            struct front_batch done = pop_fenced(front);
            driver_fence_release(allocator, done.fence);
            batch_to_slots(allocator, front, &done.batch);
        }
        front_unlock(front);
    }
}

/* The room under one pending peak, shared: `index` 0 blocks, 1 bytes; every
 * claimed front's lock held. Each front gets first what it held at most
 * at a fence (so that fronts freeing at a steady pace come back here only
 * when the peak rises), then an even share of what is left. */
static int64_t share_pending_room(struct gpucache_allocator *allocator, unsigned claimed,
                                  struct front_cache *needy, int index, int64_t need)
{
    struct gpucache_stat *stat =
        index == 0 ? &allocator->stats.pending_blocks : &allocator->stats.pending_bytes;
    int64_t reading = stat->current + need;
    int64_t wants = 0;
    for (unsigned rest = claimed; rest != 0; rest &= rest - 1) {
        const struct front_cache *front = &allocator->fronts[__builtin_ctz(rest)];
        int64_t held = front->pending_waiting[index] + (front == needy ? need : 0);
        reading += front->pending_waiting[index];
        if (front->pending_most[index] > held)
            wants += front->pending_most[index] - held;
    }
    if (reading > stat->peak)
        stat->peak = reading;
    int64_t room = stat->peak - reading;
    bool wanted = room >= wants;
    int64_t fronts = __builtin_popcount(claimed);
    int64_t spare = wanted ? room - wants : room;
    int64_t share = fronts != 0 ? spare / fronts : 0;
    int64_t ceilings = 0;
    for (unsigned rest = claimed; rest != 0; rest &= rest - 1) {
        struct front_cache *front = &allocator->fronts[__builtin_ctz(rest)];
        int64_t held = front->pending_waiting[index] + (front == needy ? need : 0);
        int64_t want = wanted && front->pending_most[index] > held
                           ? front->pending_most[index] - held
                           : 0;
        front->pending_ceiling[index] = held + want + share;
        front->synchronous = true;
        ceilings += front->pending_ceiling[index];
    }
    return ceilings;
}

void front_cache_pending_room(struct gpucache_allocator *allocator, struct front_cache *needy,
                              const int64_t need[2])
{
    unsigned claimed = allocator->fronts_claimed;
    lock_fronts(allocator, claimed, NULL);
    bool needy_claimed = needy != NULL && (claimed & 1u << needy->index) != 0;
    /* A front flushed meanwhile frees nothing more: its need is no rise. */
    bool counted = needy == NULL || needy_claimed;
    for (int i = 0; i < 2; i++)
        allocator->pending_ceilings[i] = share_pending_room(
            allocator, claimed, needy_claimed ? needy : NULL, i, counted ? need[i] : 0);
    unlock_fronts(allocator, claimed, needy_claimed ? needy : NULL);
    if (needy != NULL && !needy_claimed)
        front_lock(needy);
}

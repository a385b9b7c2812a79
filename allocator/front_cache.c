/* Front caches: a block freed stream-ordered on its own stream is reusable
 * at once on that stream (DESIGN.md, Reuse safety), so it may wait whole
 * for the next request of its size there, skipping the merge of the free
 * and the tree search and split of the hit. Nothing else may take it until
 * it is merged back, and everything else merges it back first: a block in a
 * front is never seen by another stream, a walk, a reader or the miss chain.
 *
 * The lanes (front_lane_take, front_lane_put) serve a stream's hits and
 * frees under its front's lock alone, so threads on different streams run
 * them side by side; every other function here runs under the allocator's
 * lock and takes a front's lock around what it changes in the front. */
#include <sched.h>

#include "allocator_internal.h"
#include "gpucache_allocator_testing.h"
#include "size_policy.h"

/* Counters a lane changes under its front's lock and the allocator's peaks
 * read without it: single writer, atomic stores and loads. */
static inline void counter_add(int64_t *counter, int64_t amount)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + amount,
                     __ATOMIC_RELAXED);
}

static inline int64_t counter_read(const int64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
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

/* Under the allocator's lock: only it claims and releases fronts. */
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

/* The free the block's front deferred, as gpucache_allocator_free applies
 * it, then the merge with its free neighbours. */
static void release_block(struct gpucache_allocator *allocator, struct front_cache *front,
                          struct block *block)
{
    struct gpucache_stats *stats = &allocator->stats;
    enum pool_kind pool = block->pool;
    block_map_remove(&allocator->allocated, block->address);
    front->blocks--;
    counter_add(&front->requested[pool], -(int64_t)block->requested_size);
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[pool], -1);
        counter_add(&front->allocated_bytes[pool], -(int64_t)block->size);
        stat_array_decrease(stats->allocation, pool, 1);
        stat_array_decrease(stats->allocated_bytes, pool, (int64_t)block->size);
    } else {
        __atomic_store_n(&front->after_fence_blocks, front->after_fence_blocks - 1,
                         __ATOMIC_RELAXED);
    }
    block->front_after_fence = false;
    /* Every free_tick stays at or below the tick: the checks for "nothing
     * freed since the last fence" compare them. */
    if (block->free_tick > allocator->tick)
        __atomic_store_n(&allocator->tick, block->free_tick, __ATOMIC_RELEASE);
    block->state = BLOCK_ALLOCATED;
    block_becomes_free(allocator, block);
}

static void release_slot(struct gpucache_allocator *allocator, struct front_cache *front,
                         struct front_slot *slot)
{
    while (slot->top != NULL) {
        struct block *block = slot->top;
        slot->top = block->list_next;
        block->list_next = NULL;
        release_block(allocator, front, block);
    }
    slot->count = 0;
    slot->key = 0;
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

/* Empties a front and gives it up; its lock held. */
static void release_front_locked(struct gpucache_allocator *allocator, struct front_cache *front)
{
    for (int i = 0; i < FRONT_SIZES; i++)
        release_slot(allocator, front, &front->slots[i]);
    return_handed_out(front);
    settle_pair_totals(allocator, front);
    __atomic_store_n(&front->used, false, __ATOMIC_RELAXED);
    front->next_victim = 0;
    front->hits_since_query = 0;
    allocator->fronts_claimed &= (uint8_t)~(1u << front->index);
    if (allocator->last_front == front)
        allocator->last_front = NULL;
}

static void release_front(struct gpucache_allocator *allocator, struct front_cache *front)
{
    front_lock(front);
    release_front_locked(allocator, front);
    front_unlock(front);
}

void front_cache_flush_slow(struct gpucache_allocator *allocator)
{
    while (allocator->fronts_claimed != 0)
        release_front(allocator, &allocator->fronts[__builtin_ctz(allocator->fronts_claimed)]);
    /* No front defers anything now: every current value is exact, and at
     * or below its peak. */
    __atomic_store_n(&allocator->peaks_unsettled, false, __ATOMIC_RELAXED);
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

void front_cache_flush_stream(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    struct front_cache *front = front_find(allocator, stream);
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
static void front_push(struct front_cache *front, struct front_slot *slot, struct block *block)
{
    block->list_next = slot->top;
    slot->top = block;
    slot->count++;
    front->blocks++;
    counter_add(&front->requested[block->pool], (int64_t)block->requested_size);
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[block->pool], 1);
        counter_add(&front->allocated_bytes[block->pool], (int64_t)block->size);
    } else {
        __atomic_store_n(&front->after_fence_blocks, front->after_fence_blocks + 1,
                         __ATOMIC_RELAXED);
    }
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
    front_lock(front);
    __atomic_store_n(&front->stream, stream, __ATOMIC_RELAXED);
    __atomic_store_n(&front->used, true, __ATOMIC_RELAXED);
    front_unlock(front);
    allocator->fronts_claimed |= (uint8_t)(1u << front->index);
    allocator->last_front = front;
    return front;
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

bool front_cache_put(struct gpucache_allocator *allocator, struct block *block)
{
    /* Oversize blocks change oversize_allocations and are few; blocks of a
     * pinned segment are retained, never reused. */
    if (block->size >= allocator->config->max_split_size || block->segment->pinned)
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

/* Raises the peaks of the `all` and `pool` slots of `array` to what they
 * would read without the deferred decreases of the fronts' blocks (the
 * front counters at `counters`). A value at or below its peak cannot pass
 * it without those decreases either: the fronts are read only when one is
 * above (in steady state, never). */
static __attribute__((noinline)) void raise_peaks_slowly(struct gpucache_allocator *allocator,
                                                         const struct front_cache *held,
                                                         struct gpucache_stat *array,
                                                         enum pool_kind pool, size_t counters)
{
    struct gpucache_stat *stats[2] = {&array[GPUCACHE_STAT_ALL], &array[stat_type_of(pool)]};
    /* A current value above its peak stays so while fronts defer
     * decreases: from now on the lanes leave their hits to this path. A
     * lane amid a hit finishes it before its front's lock is free, and the
     * deferred counts read below then include it; every later lane sees
     * the flag under that lock. */
    if (!allocator->peaks_unsettled) {
        __atomic_store_n(&allocator->peaks_unsettled, true, __ATOMIC_RELAXED);
        for (unsigned claimed = allocator->fronts_claimed; claimed != 0; claimed &= claimed - 1) {
            struct front_cache *front = &allocator->fronts[__builtin_ctz(claimed)];
            if (front == held)
                continue;
            front_lock(front);
            front_unlock(front);
        }
    }
    int64_t waiting[2];
    front_waiting(allocator, counters, pool, waiting);
    for (int i = 0; i < 2; i++)
        if (stats[i]->current - waiting[i] > stats[i]->peak)
            stats[i]->peak = stats[i]->current - waiting[i];
}

static inline void raise_peaks(struct gpucache_allocator *allocator,
                               const struct front_cache *held, struct gpucache_stat *array,
                               enum pool_kind pool, size_t counters)
{
    const struct gpucache_stat *all = &array[GPUCACHE_STAT_ALL];
    const struct gpucache_stat *own = &array[stat_type_of(pool)];
    if (all->current > all->peak || own->current > own->peak)
        raise_peaks_slowly(allocator, held, array, pool, counters);
}

/* A hit whose request differs from the block's last one changes
 * requested_bytes as the eager free and allocation would have. */
static void front_change_requested(struct gpucache_allocator *allocator,
                                   const struct front_cache *held, enum pool_kind pool,
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
    raise_peaks(allocator, held, array, pool, offsetof(struct front_cache, requested));
}

/* A hit of a block whose allocation statistics fell at its free: they rise
 * again. */
static void front_count_allocated(struct gpucache_allocator *allocator,
                                  const struct front_cache *held, enum pool_kind pool,
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
                offsetof(struct front_cache, allocated_blocks));
    raise_peaks(allocator, held, stats->allocated_bytes, pool,
                offsetof(struct front_cache, allocated_bytes));
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
    front->blocks--;
    int64_t size = (int64_t)block->size;
    counter_add(&front->requested[pool], -(int64_t)block->requested_size);
    struct front_pair_totals *pairs = &front->pairs[pool];
    pairs->active_count++;
    pairs->active_bytes += size;
    if (!block->front_after_fence) {
        counter_add(&front->allocated_blocks[pool], -1);
        counter_add(&front->allocated_bytes[pool], -size);
        pairs->allocation_count++;
        pairs->allocation_bytes += size;
    } else {
        __atomic_store_n(&front->after_fence_blocks, front->after_fence_blocks - 1,
                         __ATOMIC_RELAXED);
    }
    if (block->requested_size == requested)
        pairs->requested += (int64_t)requested;
    return block;
}

struct block *front_cache_take(struct gpucache_allocator *allocator, gpucache_stream stream,
                               uint64_t size, enum pool_kind pool, uint64_t requested)
{
    if (allocator->fronts_claimed == 0)
        return NULL;
    struct front_cache *front = front_find(allocator, stream);
    if (front == NULL)
        return NULL;
    front_lock(front);
    struct block *block = NULL;
    for (int i = 0; i < FRONT_SIZES && block == NULL; i++) {
        struct front_slot *slot = &front->slots[i];
        if (slot->key == (size | pool) && slot->top != NULL)
            block = pop_for_hit(front, slot, pool, requested);
    }
    if (block != NULL) {
        /* A block freed synchronously is most likely freed so again, which
         * the lane cannot serve: it is not handed out then. */
        bool hand_out = !block->front_after_fence;
        /* The hit ends deferred decreases; while the statistics are
         * unsettled, what they would read without the rest may pass a peak. */
        bool unsettled = allocator->peaks_unsettled;
        if (block->front_after_fence) {
            front_count_allocated(allocator, front, pool, (int64_t)block->size);
        } else if (unsettled) {
            raise_peaks(allocator, front, allocator->stats.allocation, pool,
                        offsetof(struct front_cache, allocated_blocks));
            raise_peaks(allocator, front, allocator->stats.allocated_bytes, pool,
                        offsetof(struct front_cache, allocated_bytes));
        }
        if (block->requested_size != requested)
            front_change_requested(allocator, front, pool, block->requested_size, requested);
        else if (unsettled)
            raise_peaks(allocator, front, allocator->stats.requested_bytes, pool,
                        offsetof(struct front_cache, requested));
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

/* ---- the lanes: the front's lock only */

__thread uint8_t front_lane_hint __attribute__((tls_model("initial-exec")));

struct front_cache *front_lane_find_other(struct gpucache_allocator *allocator,
                                          gpucache_stream stream)
{
    for (int i = 0; i < FRONT_STREAMS; i++) {
        struct front_cache *front = &allocator->fronts[i];
        if (__atomic_load_n(&front->stream, __ATOMIC_RELAXED) == stream &&
            __atomic_load_n(&front->used, __ATOMIC_RELAXED)) {
            front_lane_hint = (uint8_t)i;
            return front;
        }
    }
    return NULL;
}

uint64_t front_lane_take_in(struct gpucache_allocator *allocator, struct front_cache *front,
                            gpucache_stream stream, size_t size, bool *query_due)
{
    size_t rounded = allocator->rounds_plainly ? size_policy_round_plainly(size)
                                               : size_policy_round(allocator->config, size);
    enum pool_kind pool = size_policy_is_small(rounded) ? POOL_SMALL : POOL_LARGE;
    uint64_t address = 0;
    front_lock(front);
    /* Read under the front's lock: see raise_peaks_slowly. */
    if (!front->used || front->stream != stream ||
        __atomic_load_n(&allocator->peaks_unsettled, __ATOMIC_RELAXED))
        goto done;
    /* Querying fences costs driver calls and needs the allocator's lock; a
     * hit does not need the blocks they free, so only every 8th hit asks. */
    if (__atomic_load_n(&allocator->closed_epoch_count, __ATOMIC_RELAXED) != 0 &&
        (front->hits_since_query++ & 7) == 0) {
        *query_due = true;
        goto done;
    }
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
        if (block->requested_size != size || block->front_after_fence || entry == NULL)
            break;
        pop_for_hit(front, slot, pool, size);
        handed_out_fill(front, entry, block);
        front->lane_hits++;
        emit_block_event(allocator, GPUCACHE_EVENT_ALLOC, block->address, size, block->size,
                         stream);
        address = block->address;
        break;
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
    emit_block_event(allocator, GPUCACHE_EVENT_FREE_REQUESTED, block->address,
                     block->requested_size, block->size, block->stream);
    emit_event(allocator, GPUCACHE_EVENT_FREE_COMPLETED, block->address, block->requested_size,
               block->stream);
    taken = true;
done:
    front_unlock(front);
    return taken;
}

/* The allocator's private data model, shared by its source files: blocks,
 * segments, the two pools, the reuse-safety epochs and the allocator itself. */
#ifndef GPUCACHE_ALLOCATOR_INTERNAL_H
#define GPUCACHE_ALLOCATOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/tree.h>

#include "block_map.h"
#include "gpucache_allocator.h"
#include "gpucache_config.h"
#include "gpucache_driver.h"
#include "gpucache_stats.h"

enum pool_kind { POOL_SMALL = 0, POOL_LARGE = 1, POOL_COUNT = 2 };

/* Where a segment's memory came from. The expandable kind is one virtual
 * address reservation whose pages are mapped on demand (vmm/). */
enum segment_kind { SEGMENT_PLAIN = 0, SEGMENT_EXPANDABLE = 1 };

enum block_state {
    BLOCK_FREE = 0,   /* in its pool's free tree, reusable */
    BLOCK_ALLOCATED,  /* handed out, in the address map */
    BLOCK_PENDING,    /* free requested; waits for an epoch's fence */
    BLOCK_UNMAPPED,   /* expandable address range without physical pages */
    BLOCK_RETAINED,   /* freed in a segment pinned for IPC: never reused */
    BLOCK_FRONT,      /* freed on its own stream, waiting unmerged in a front cache */
    BLOCK_STATE_COUNT
};

/* The key of a pool's free tree for blocks of streams that were destroyed:
 * they are reused by any stream once the destroyed stream's fence completes,
 * and never matched by a live stream's own lookup. */
#define STREAM_RETIRED ((gpucache_stream)UINTPTR_MAX)

struct segment {
    RB_ENTRY(segment) link; /* the allocator's segment tree, by base */
    uint64_t base;
    size_t size;
    enum segment_kind kind;
    enum pool_kind pool;
    gpucache_stream stream;
    void *expandable; /* vmm/'s object for SEGMENT_EXPANDABLE, NULL for plain */
    /* Exported through legacy IPC: another process may map it, so it is never
     * reused or returned to the driver while this process lives. */
    bool pinned;
};

/* One piece of a segment. At most 128 bytes (two cache lines): metadata
 * stays a quarter of the smallest block (512 B) at worst. */
struct block {
    RB_ENTRY(block) tree_link;  /* free tree of its pool */
    uint64_t address;
    uint64_t size;
    uint64_t requested_size;    /* the caller's unrounded size */
    gpucache_stream stream;     /* key: the stream that may reuse it at once */
    struct block *prev;         /* address-order neighbours in the segment */
    struct block *next;
    struct segment *segment;
    struct block *list_next;    /* epoch list, or the block store's free list */
    /* Value of the allocator tick when it was freed stream-ordered on its own
     * stream: another stream may take it once that stream's fences reach this
     * tick. 0 when no GPU work can still use it. */
    uint64_t free_tick;
    uint64_t gc_count_base;     /* pool clock when it became free (GC age) */
    uint8_t state;              /* enum block_state */
    uint8_t pool;               /* enum pool_kind */
    bool mapped;                /* false only for unmapped expandable ranges */
    /* In a front after a fence completed its free (synchronous or on another
     * stream): its allocation statistics fell when the free was requested,
     * only the active ones wait for the flush. */
    bool front_after_fence;
};
_Static_assert(sizeof(struct block) <= 128, "block metadata must stay within 128 bytes");

/* Whether a free block counts in the inactive_split statistics. A plain
 * block does when it has a neighbour; in an expandable segment unmapped
 * neighbours do not count (they are not memory), so the statistic still
 * measures free bytes stranded between live blocks. The plain test is
 * inline (it runs on every hit and free), the expandable one out of line:
 * inlined, it made the hit path's code longer. */
bool expandable_block_is_split(const struct block *block); /* expandable_lifecycle.c */
static inline bool block_is_split(const struct block *block)
{
    if (block->segment->kind == SEGMENT_PLAIN)
        return block->prev != NULL || block->next != NULL;
    return expandable_block_is_split(block);
}

RB_HEAD(free_tree, block);
RB_PROTOTYPE(free_tree, block, tree_link, free_tree_compare)
RB_HEAD(segment_tree, segment);
RB_PROTOTYPE(segment_tree, segment, link, segment_tree_compare)

struct pool {
    struct free_tree free_blocks; /* ordered by (stream, size, address) */
    /* Counts get_free_block calls while GC is on: the age of a free block is
     * the number of lookups since it became free. */
    uint64_t gc_clock;
};

/* A batch of frees that become reusable together once `fence` completes. */
struct epoch {
    struct gpucache_fence *fence;
    uint64_t tick;          /* allocator tick when the fence was recorded */
    uint64_t last_free;     /* free_sequence of its newest block */
    struct block *first;    /* pending blocks, linked by list_next */
    struct block *last;
    size_t block_count;
    size_t bytes[POOL_COUNT];
    struct epoch *next;     /* next younger epoch of the same stream state */
};

/* Reuse-safety bookkeeping for one stream, or (all_streams) for synchronous
 * frees whose epochs are fenced on every stream at once. */
struct stream_state {
    gpucache_stream stream;
    bool all_streams;
    struct epoch open;      /* frees since the last fence (fence NULL) */
    struct epoch *oldest;   /* closed epochs, oldest first */
    struct epoch *newest;
    uint64_t completed_tick; /* tick of the newest completed fence */
    uint64_t fenced_tick;    /* tick of the newest recorded fence */
};

/* Synchronous frees are fenced in batches: a fence costs one event record
 * per live stream (about a microsecond each), so 64 frees make it cost
 * tens of nanoseconds per free, while 64 MiB bounds how much memory waits
 * unfenced between allocations that would otherwise have found it ready.
 * An allocation that misses closes the open batch at once anyway. */
#define EPOCH_CLOSE_FREES 64
#define EPOCH_CLOSE_BYTES ((size_t)64 << 20)

/* How far a cross-stream lookup walks a stream's free blocks looking for
 * one whose stream's fence has completed: bounds the cost of a miss. */
#define CROSS_STREAM_SCAN_LIMIT 32

/* The front cache: blocks freed stream-ordered on their own stream (and
 * blocks whose fence cleared them for every stream) wait, unsplit and
 * unmerged and still in the address map, for a request of the same size on
 * that stream, which takes them without a tree search, a split or most
 * statistics updates. Any other path first merges them back
 * (front_cache_flush), so everything that walks blocks, reports statistics,
 * grows or gives memory back sees them as ordinary free blocks. A few
 * streams and sizes cover the repeated shapes of a training step; a slot
 * holds a whole epoch of synchronous frees (64); the rest takes the
 * ordinary path. */
#define FRONT_STREAMS 8
#define FRONT_SIZES 4
#define FRONT_DEPTH 64

struct front_slot {
    /* Block size | pool of the blocks it holds (sizes are multiples of 512,
     * so one compare matches both); 0: unused. */
    uint64_t key;
    struct block *top;  /* most recently freed first, linked by list_next */
    uint32_t count;
};

struct front_cache {
    gpucache_stream stream;
    bool used;
    uint8_t next_victim; /* slot replaced when a new size needs one */
    struct front_slot slots[FRONT_SIZES];
};

/* What the front's pairs (a free into the front, then a hit) owe the
 * cumulative statistics: a pair leaves every current value and peak where
 * it was, so only the `allocated` and `freed` totals move, summed here and
 * added at the next flush. */
struct front_pair_totals {
    int64_t allocation_count; /* allocation: +count to both totals */
    int64_t allocation_bytes; /* allocated_bytes */
    int64_t active_count;     /* active */
    int64_t active_bytes;     /* active_bytes */
    int64_t requested;        /* requested_bytes, for pairs with equal requests */
};

struct block_store {
    struct block *free_list;
    void **slabs;
    size_t slab_count;
    size_t slab_capacity;
    size_t total_blocks;
};

struct gpucache_allocator {
    pthread_mutex_t mutex;
    const struct gpucache_config *config;
    const struct gpucache_driver *driver;
    int device;

    struct pool pools[POOL_COUNT];
    struct segment_tree segments;
    struct block *retained; /* freed blocks of pinned segments, by list_next */
    struct block_map allocated; /* block start -> allocated block */
    struct block_store store;

    /* Reuse safety. */
    uint64_t tick;
    /* Counts frees that wait in epochs, so that a synchronize the program
     * made while other threads freed completes only the frees before it. */
    uint64_t free_sequence;
    uint64_t all_completed_tick; /* every stream's work before it is done */
    struct stream_state all_streams;
    struct stream_state **streams; /* per-stream states, incl. STREAM_RETIRED */
    size_t stream_count;
    size_t stream_capacity;
    size_t closed_epoch_count;
    unsigned mallocs_since_query; /* paces fence queries on the hit path */
    size_t synchronous_closed_bytes[POOL_COUNT]; /* in closed epochs of synchronous frees */
    struct epoch *spare_epochs;

    /* Limits resolved at the first growth (resolve_memory_limits in
     * allocator.c), when the device's context can be asked its size. */
    uint64_t allowed_memory_maximum; /* UINT64_MAX: no per-process fraction */
    bool gc_enabled;
    bool memory_limits_known;
    bool capacity_error_reported;

    /* Devices that enabled peer access to this one: expandable segments
     * grant them access to every page they map (expandable_growth.c). */
    int peers[GPUCACHE_ALLOCATOR_MAX_PEERS];
    size_t peer_count;

    struct gpucache_stats stats;

    /* Front caches (front_cache.c). While blocks wait in them, the
     * statistics still count them as allocated: their frees are applied at
     * the flush, which every reader and every other path runs first. */
    struct front_cache fronts[FRONT_STREAMS];
    struct front_cache *last_front; /* the front the latest lookup found */
    uint8_t next_front_victim;
    /* Set only while the hit path queries fences: blocks their completions
     * free wait in fronts then. Anywhere else (the miss chain above all)
     * they must go to the free trees, where the caller looks next. */
    bool completions_to_front;
    bool rounds_plainly; /* size_policy_rounds_plainly, asked once */
    size_t front_blocks;
    int64_t front_requested[POOL_COUNT]; /* requested bytes of blocks in fronts */
    /* Blocks in fronts whose allocation statistics wait (freed on their own
     * stream), and their bytes. */
    int64_t front_allocated_blocks[POOL_COUNT];
    int64_t front_allocated_bytes[POOL_COUNT];
    struct front_pair_totals front_pairs[POOL_COUNT];

    /* Event observer (gpucache_allocator_set_observer); NULL: none. */
    gpucache_event_observer *observer;
    void *observer_context;
};

/* Builds the event and calls the observer: out of line, so that a hit
 * without an observer pays only the test in emit_block_event. */
void observe_event(struct gpucache_allocator *allocator, enum gpucache_event_action action,
                   uint64_t address, uint64_t size, uint64_t block_size, gpucache_stream stream);

/* Reports one event to the observer, if any; `block_size` for the events
 * that change allocated_bytes (alloc, free_requested). */
static inline void emit_block_event(struct gpucache_allocator *allocator,
                                    enum gpucache_event_action action, uint64_t address,
                                    uint64_t size, uint64_t block_size, gpucache_stream stream)
{
    if (__builtin_expect(allocator->observer != NULL, 0))
        observe_event(allocator, action, address, size, block_size, stream);
}

static inline void emit_event(struct gpucache_allocator *allocator,
                              enum gpucache_event_action action, uint64_t address, uint64_t size,
                              gpucache_stream stream)
{
    emit_block_event(allocator, action, address, size, 0, stream);
}

/* Reports every block of every segment freed and every segment's memory
 * gone (for an allocator that forgets its segments). */
void allocator_report_forgotten(struct gpucache_allocator *allocator);

/* Statistics: PyTorch's Stat rules. Inline: they run several times on
 * every cache hit. */
static inline void stat_increase(struct gpucache_stat *stat, int64_t amount)
{
    stat->current += amount;
    if (stat->current > stat->peak)
        stat->peak = stat->current;
    stat->allocated += amount;
}

static inline void stat_decrease(struct gpucache_stat *stat, int64_t amount)
{
    stat->current -= amount;
    stat->freed += amount;
}

static inline void stat_change(struct gpucache_stat *stat, int64_t delta)
{
    if (delta > 0)
        stat_increase(stat, delta);
    else if (delta < 0)
        stat_decrease(stat, -delta);
}

static inline enum gpucache_stat_type stat_type_of(enum pool_kind pool)
{
    return pool == POOL_SMALL ? GPUCACHE_STAT_SMALL_POOL : GPUCACHE_STAT_LARGE_POOL;
}

/* Applies an amount to the `all` slot and the slot of `pool`. */
static inline void stat_array_increase(struct gpucache_stat array[GPUCACHE_STAT_TYPE_COUNT],
                                       enum pool_kind pool, int64_t amount)
{
    stat_increase(&array[GPUCACHE_STAT_ALL], amount);
    stat_increase(&array[stat_type_of(pool)], amount);
}

static inline void stat_array_decrease(struct gpucache_stat array[GPUCACHE_STAT_TYPE_COUNT],
                                       enum pool_kind pool, int64_t amount)
{
    stat_decrease(&array[GPUCACHE_STAT_ALL], amount);
    stat_decrease(&array[stat_type_of(pool)], amount);
}

static inline void stat_array_change(struct gpucache_stat array[GPUCACHE_STAT_TYPE_COUNT],
                                     enum pool_kind pool, int64_t delta)
{
    stat_change(&array[GPUCACHE_STAT_ALL], delta);
    stat_change(&array[stat_type_of(pool)], delta);
}

/* The driver-call timer: every driver call, made directly or through vmm/,
 * is timed by it so that driver_nanoseconds is honest. One pair of clock
 * readings may cover a run of cheap calls (a capture check, then fence
 * queries or a fence record): the readings cost more than such calls, and
 * the epoch bookkeeping makes them on the hot path. */
int64_t monotonic_nanoseconds(void);
static inline int64_t driver_timer_start(void)
{
    return monotonic_nanoseconds();
}
static inline void driver_timer_stop(struct gpucache_allocator *allocator, int64_t start)
{
    allocator->stats.driver_nanoseconds += monotonic_nanoseconds() - start;
}
/* Runs `statement` (one driver or vmm/ call, with its assignment) timed. */
#define DRIVER_TIMED(allocator, statement)                                              \
    do {                                                                                \
        int64_t driver_timer_ = driver_timer_start();                                   \
        statement;                                                                      \
        driver_timer_stop((allocator), driver_timer_);                                  \
    } while (0)
/* `result` = the driver interface's `operation`(context, ...), timed. */
#define DRIVER_CALL(allocator, result, operation, ...)                                  \
    DRIVER_TIMED(allocator, (result) = (allocator)->driver->operation(                  \
                                (allocator)->driver->context, __VA_ARGS__))
void driver_fence_release(struct gpucache_allocator *allocator, struct gpucache_fence *fence);
bool driver_capture_active(struct gpucache_allocator *allocator);
/* A fence after the work issued so far that may touch blocks of `stream`:
 * that stream's, or every stream's for GPUCACHE_STREAM_SYNCHRONOUS. Untimed:
 * callers time it with their other calls. */
gpucache_result driver_fence_stream(struct gpucache_allocator *allocator, gpucache_stream stream,
                                    struct gpucache_fence **fence);

/* Block structs (block_store.c). */
struct block *block_store_take(struct gpucache_allocator *allocator);
void block_store_give(struct gpucache_allocator *allocator, struct block *block);
void block_store_destroy(struct block_store *store);

/* Free trees (free_blocks.c). */
void free_blocks_insert(struct gpucache_allocator *allocator, struct block *block);
void free_blocks_remove(struct gpucache_allocator *allocator, struct block *block);
/* Gives a free block in its tree a new extent (after a split or a merge).
 * Its key is changed in place when its neighbours in the tree keep their
 * order, which saves a removal and an insertion on the hot path. */
void free_blocks_resize(struct gpucache_allocator *allocator, struct block *block,
                      uint64_t address, uint64_t size);
/* free_blocks_resize for a block that shrinks from the front, when it is the
 * first block of its stream in the tree of at least `bound` bytes (a best
 * fit for `bound`): while the new size is still `bound` or more, the tree
 * order holds without looking at a neighbour. */
void free_blocks_cut_lower_bound(struct gpucache_allocator *allocator, struct block *block,
                               uint64_t address, uint64_t size, uint64_t bound);
/* The smallest acceptable free block of `pool` for (stream, size), lowest
 * address on ties, or NULL; max_split_size rules applied. Not removed; a
 * lookup never maps or allocates memory. */
struct block *free_blocks_best_fit(struct gpucache_allocator *allocator, enum pool_kind pool,
                                 gpucache_stream stream, size_t size);
/* free_blocks_best_fit that also accepts a block of the other expandable size
 * class: for the miss chain once growing the request's class failed. */
struct block *free_blocks_best_fit_other_class(struct gpucache_allocator *allocator,
                                             enum pool_kind pool, gpucache_stream stream,
                                             size_t size);
/* The first free block of `stream` in `pool` of at least `size`, or NULL. */
struct block *free_blocks_lower_bound(struct gpucache_allocator *allocator, enum pool_kind pool,
                                    gpucache_stream stream, size_t size);
/* The best block of another stream that no GPU work can still be using. */
struct block *free_blocks_cross_stream_fit(struct gpucache_allocator *allocator,
                                         enum pool_kind pool, gpucache_stream stream,
                                         size_t size);

/* Reuse safety (reuse_epochs.c). */
struct stream_state *stream_state_find(struct gpucache_allocator *allocator,
                                       gpucache_stream stream, bool create);
uint64_t stream_state_cleared_tick(const struct gpucache_allocator *allocator,
                                   const struct stream_state *state);
/* The one answer to "may a stream other than the one it is keyed to take
 * the free block `block` now" (DESIGN.md, Reuse safety: "once cleared"):
 * yes when no GPU work can still use it (free_tick 0), or when its stream's
 * fences or a synchronize have reached its free_tick. `state` is the state
 * of block->stream; without one (its creation failed for lack of host
 * memory) nothing proves the stream's work done, so the answer is no.
 * Every decision to hand a free block to a stream, or to merge blocks of
 * different streams, asks these three. Inline: a free asks block_reusable_by
 * for both neighbours. */
static inline bool block_cleared_in(const struct gpucache_allocator *allocator,
                                    const struct stream_state *state, const struct block *block)
{
    if (block->free_tick == 0)
        return true;
    return state != NULL && block->free_tick <= stream_state_cleared_tick(allocator, state);
}
/* block_cleared_in with the state of the block's stream looked up. */
static inline bool block_cleared(const struct gpucache_allocator *allocator,
                                 const struct block *block)
{
    if (block->free_tick == 0)
        return true;
    return block_cleared_in(allocator,
                            stream_state_find((struct gpucache_allocator *)allocator,
                                              block->stream, false),
                            block);
}
/* Whether `stream` may take the free block `block` now: at once on the
 * stream it is keyed to (its frees there were ordered before the stream's
 * later work), otherwise once it is cleared. */
static inline bool block_reusable_by(const struct gpucache_allocator *allocator,
                                     const struct block *block, gpucache_stream stream)
{
    return block->stream == stream || block_cleared(allocator, block);
}
/* Adds a freed block to `state`'s open epoch; closes it when it is full. */
void epoch_add_pending(struct gpucache_allocator *allocator, struct stream_state *state,
                       struct block *block);
/* Records the fence that closes `state`'s open epoch (also when it is empty,
 * to clear the stream's free blocks for other streams). */
void epoch_close(struct gpucache_allocator *allocator, struct stream_state *state);
void epochs_close_all_open(struct gpucache_allocator *allocator);
/* Frees the blocks of every epoch whose fence has completed. */
void epochs_process_completed(struct gpucache_allocator *allocator);
/* Waits for the oldest closed epoch of synchronous frees holding bytes of
 * `pool`; false if there is none or the wait failed. */
bool epochs_wait_oldest(struct gpucache_allocator *allocator, enum pool_kind pool);
/* Before the last retry: fences every stream with pending or uncleared
 * blocks and waits for all of them. True when every block is then free and
 * cleared for every stream; false when only a device synchronize can say so. */
bool epochs_wait_all(struct gpucache_allocator *allocator);
/* The clock now, for a synchronize made under the allocator's lock. */
static inline struct gpucache_sync_point epochs_now(const struct gpucache_allocator *allocator)
{
    return (struct gpucache_sync_point){allocator->tick, allocator->free_sequence};
}
/* Everything issued before `since` is known complete: every block freed
 * before it is freed and cleared for every stream. */
void epochs_all_work_done(struct gpucache_allocator *allocator, struct gpucache_sync_point since);
/* The same for what was freed on `stream` only. */
void epochs_stream_work_done(struct gpucache_allocator *allocator, gpucache_stream stream,
                             struct gpucache_sync_point since);
/* Asks for fences that will clear other streams' free blocks for `stream`. */
void epochs_request_cross_stream_clearing(struct gpucache_allocator *allocator,
                                          enum pool_kind pool, gpucache_stream stream,
                                          size_t size);
void epochs_retire_stream(struct gpucache_allocator *allocator, gpucache_stream stream);
/* Drops every epoch and stream state without waiting; their fences are
 * released through the driver unless its context is gone (abandon): then
 * only their host memory goes back (fence_forget). */
void epochs_discard(struct gpucache_allocator *allocator, bool release_fences);
bool synchronize_device_for_reuse(struct gpucache_allocator *allocator);

/* Block life cycle (allocator.c). */
/* A block whose free completed becomes reusable: merged with free
 * neighbours of its segment and inserted into its pool's free tree. */
void block_free_completed(struct gpucache_allocator *allocator, struct block *block);

/* block_free_completed without its event (the caller reported it). */
void block_becomes_free(struct gpucache_allocator *allocator, struct block *block);

/* Front caches (front_cache.c). */
/* Frees and merges back every block waiting in a front and settles the
 * statistics they owe; nothing to do is one test. */
void front_cache_flush_slow(struct gpucache_allocator *allocator);
static inline void front_cache_flush(struct gpucache_allocator *allocator)
{
    if (allocator->front_blocks != 0 || allocator->front_pairs[POOL_SMALL].active_count != 0 ||
        allocator->front_pairs[POOL_LARGE].active_count != 0)
        front_cache_flush_slow(allocator);
}
/* A block whose fence completed (free_tick 0: reusable by every stream)
 * waits in the front of the stream it was allocated on; false (nothing done)
 * when the front cannot take it. The caller reported its free_completed. */
bool front_cache_put_after_fence(struct gpucache_allocator *allocator, struct block *block);
/* Frees and merges back the front of `stream` (destroyed: its token may
 * come back for a new stream). */
void front_cache_flush_stream(struct gpucache_allocator *allocator, gpucache_stream stream);

/* Puts a block in a slot of its stream's front (front_cache.c's helpers
 * and the inline puts below). */
static inline void front_push(struct gpucache_allocator *allocator, struct front_slot *slot,
                              struct block *block)
{
    block->state = BLOCK_FRONT;
    block->list_next = slot->top;
    slot->top = block;
    slot->count++;
    allocator->front_blocks++;
    allocator->front_requested[block->pool] += (int64_t)block->requested_size;
    if (!block->front_after_fence) {
        block->free_tick = ++allocator->tick;
        allocator->front_allocated_blocks[block->pool]++;
        allocator->front_allocated_bytes[block->pool] += (int64_t)block->size;
    }
}

/* A front or slot to claim (perhaps merging another back first), then the
 * push; false when the slot is full. */
bool front_put_claiming(struct gpucache_allocator *allocator, struct block *block);

/* Into the front of the block's stream, the latest front first. */
static inline bool front_put_in_front(struct gpucache_allocator *allocator, struct block *block)
{
    struct front_cache *front = allocator->last_front;
    if (front != NULL && front->stream == block->stream) {
        uint64_t key = block->size | block->pool;
        for (int i = 0; i < FRONT_SIZES; i++) {
            struct front_slot *slot = &front->slots[i];
            if (slot->key == key && slot->count < FRONT_DEPTH) {
                front_push(allocator, slot, block);
                return true;
            }
        }
    }
    return front_put_claiming(allocator, block);
}

/* Keeps `block`, freed stream-ordered on its own stream, in that stream's
 * front; false (nothing done) when the front cannot take it. Inline: it is
 * the whole of such a free. */
static inline bool front_cache_put(struct gpucache_allocator *allocator, struct block *block)
{
    /* Oversize blocks change oversize_allocations and are few; blocks of a
     * pinned segment are retained, never reused. */
    if (block->size >= allocator->config->max_split_size || block->segment->pinned)
        return false;
    return front_put_in_front(allocator, block);
}

/* The front_cache_take helpers of front_cache.c: the front of `stream` when
 * it is not the latest one; a hit whose request differs from the block's
 * last; a hit of a block whose allocation statistics fell at its free. */
struct front_cache *front_find_other(struct gpucache_allocator *allocator,
                                     gpucache_stream stream);
void front_change_requested(struct gpucache_allocator *allocator, enum pool_kind pool,
                            uint64_t old, uint64_t requested);
void front_count_allocated(struct gpucache_allocator *allocator, enum pool_kind pool,
                           int64_t bytes);

/* A block of `size` bytes of `pool` that `stream` freed on itself (or that
 * a fence cleared), taken out of its front and counted allocated for a
 * request of `requested` bytes; NULL when the front holds none. Inline: it
 * is the whole of a hit. */
static inline struct block *front_cache_take(struct gpucache_allocator *allocator, gpucache_stream stream,
                               uint64_t size, enum pool_kind pool, uint64_t requested)
{
    if (allocator->front_blocks == 0)
        return NULL;
    struct front_cache *front = allocator->last_front;
    if (front == NULL || front->stream != stream)
        front = front_find_other(allocator, stream);
    if (front == NULL)
        return NULL;
    struct front_slot *slot = NULL;
    for (int i = 0; i < FRONT_SIZES; i++) {
        struct front_slot *candidate = &front->slots[i];
        if (candidate->key == (size | pool) && candidate->top != NULL) {
            slot = candidate;
            break;
        }
    }
    if (slot == NULL)
        return NULL;
    struct block *block = slot->top;
    slot->top = block->list_next;
    slot->count--;
    block->list_next = NULL;
    allocator->front_blocks--;
    uint64_t old = block->requested_size;
    allocator->front_requested[pool] -= (int64_t)old;
    struct front_pair_totals *pairs = &allocator->front_pairs[pool];
    pairs->active_count++;
    pairs->active_bytes += (int64_t)size;
    if (block->front_after_fence) {
        front_count_allocated(allocator, pool, (int64_t)size);
        block->front_after_fence = false;
    } else {
        allocator->front_allocated_blocks[pool]--;
        allocator->front_allocated_bytes[pool] -= (int64_t)size;
        pairs->allocation_count++;
        pairs->allocation_bytes += (int64_t)size;
    }
    if (old == requested)
        pairs->requested += (int64_t)old;
    else
        front_change_requested(allocator, pool, old, requested);
    block->state = BLOCK_ALLOCATED;
    block->requested_size = requested;
    block->free_tick = 0;
    return block;
}

/* Merges free neighbours that blocks of different streams kept apart, once
 * no GPU work can use them; run before giving memory back. */
void coalesce_free_blocks(struct gpucache_allocator *allocator);

/* Resolves the per_process_memory_fraction cap before the first growth;
 * false (with *result out of memory) while the device cannot say its size
 * (memory_limits.c). */
bool resolve_memory_limits(struct gpucache_allocator *allocator, gpucache_result *result);

/* Memory given back (memory_release.c). */
void garbage_collect_cached_blocks(struct gpucache_allocator *allocator);
bool release_available_cached_blocks(struct gpucache_allocator *allocator,
                                     enum pool_kind pool, gpucache_stream stream,
                                     size_t size);
/* Gives every wholly free segment of both pools back to the driver. */
void release_cached_blocks(struct gpucache_allocator *allocator);

#endif

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
 * stays a quarter of the smallest block (512 B) at worst. Aligned to a
 * cache line, so that blocks that threads on different streams use side by
 * side never share one. */
struct block {
    _Alignas(64)
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
    uint8_t front; /* index of its front while BLOCK_FRONT */
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

/* Synchronous frees a front's lane served (struct front_cache), linked by
 * list_next. */
struct lane_batch {
    struct block *first;
    struct block *last;
    uint32_t count;
    uint64_t bytes[POOL_COUNT];
    uint64_t key;      /* size | pool of every block; LANE_BATCH_MIXED: several */
    int64_t requested; /* their requested bytes */
};
#define LANE_BATCH_MIXED UINT64_MAX

/* A lane's batch fenced on every stream by the lane itself, waiting in its
 * front: the front's lane or a program's synchronize completes it into the
 * front's slots, a flush makes it an ordinary epoch (front_cache.c). */
struct front_batch {
    struct lane_batch batch;
    struct gpucache_fence *fence;
    uint64_t tick;      /* the allocator's tick, taken before the record */
    uint64_t last_free; /* free_sequence, taken after its last free */
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
 * ordinary path.
 *
 * Each front has a lock of its own, so that threads on different streams
 * do not share one: a hit, and the free of a block a front handed out, take
 * only the front's lock (front_lane_take, front_lane_put); everything else
 * holds the allocator's lock and takes a front's lock to change what the
 * front holds. A block a front handed out keeps the state BLOCK_FRONT and
 * its entry in the front's handed_out map until it comes back or the front
 * is flushed, so that its free finds it without the allocator's address
 * map; only the allocator's lock changes a block's state. */
#define FRONT_STREAMS 8
#define FRONT_SIZES 4
#define FRONT_DEPTH 64
/* Where a front keeps the blocks it handed out: two ways for each of 64
 * sets of addresses, so a lookup is two compares; a hit whose address finds
 * both ways taken is served by the ordinary path. */
#define FRONT_HANDED_OUT_SETS 64
/* A lane's batches waiting for their fences in its front: enough to cover
 * a fence's delay at the rate a thread frees; with every one waiting, the
 * oldest becomes an ordinary epoch. */
#define FRONT_FENCED_BATCHES 8

struct handed_out_entry {
    uint64_t address; /* 0: empty */
    struct block *block;
};

struct front_slot {
    /* Block size | pool of the blocks it holds (sizes are multiples of 512,
     * so one compare matches both); 0: unused. */
    uint64_t key;
    struct block *top;  /* most recently freed first, linked by list_next */
    uint32_t count;
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

struct front_cache {
    /* 0 free, 1 held (front_lock). First, and the front aligned to a cache
     * line: two streams' fronts never share one. */
    _Alignas(64) int lock;
    /* Written under the allocator's lock and the front's; read without
     * either by front_lane_find (atomically). */
    bool used;
    gpucache_stream stream;
    uint8_t next_victim; /* slot replaced when a new size needs one */
    uint8_t index;       /* its place in the allocator's fronts */
    uint32_t hits_since_query; /* paces fence queries on the lane's hits */
    /* What its lanes served (gpucache_allocator_lane_counts). */
    uint64_t lane_hits;
    uint64_t lane_frees;
    uint64_t lane_synchronous_frees; /* of lane_frees */
    struct front_slot slots[FRONT_SIZES];
    /* The statistics its blocks owe follow: counts its lock guards, which
     * the peaks read with every front's lock held (raise_peaks_slowly). A
     * block whose free completed through a fence (front_after_fence) owes
     * none of the allocation statistics: its hit raises them, and peaks,
     * which only the allocator's lock may, so the lane leaves that block
     * to the ordinary path. */
    /* Each deferred count is followed by its floor: the least the lane's
     * hits may bring it to (FRONT_FLOOR). 0 while the statistics' current
     * values are at or below their peaks, where no hit can pass one; set
     * under both locks when a hit under the allocator's leaves a value
     * above its peak (raise_peaks_slowly). */
    int64_t requested[POOL_COUNT];          /* their requested bytes */
    int64_t requested_floor[POOL_COUNT];
    /* Blocks whose allocation statistics wait (freed on their own stream,
     * or synchronously by the lane), and their bytes. */
    int64_t allocated_blocks[POOL_COUNT];
    int64_t allocated_blocks_floor[POOL_COUNT];
    int64_t allocated_bytes[POOL_COUNT];
    int64_t allocated_bytes_floor[POOL_COUNT];
    /* The blocks in its slots and their bytes, whose active statistics
     * wait for their merge back. */
    int64_t active_blocks[POOL_COUNT];
    int64_t active_blocks_floor[POOL_COUNT];
    int64_t active_bytes[POOL_COUNT];
    int64_t active_bytes_floor[POOL_COUNT];
    bool floored; /* some floor was set since the front was claimed */
    struct front_pair_totals pairs[POOL_COUNT];
    /* Synchronous frees its lane served since its last batch was fenced
     * (linked by list_next): BLOCK_FRONT, their allocation statistics
     * deferred like a slot's blocks', not yet counted pending. */
    struct lane_batch unfenced;
    /* Its lane's batches waiting for their fences, oldest first from
     * fenced[fenced_oldest]: their blocks stay BLOCK_FRONT and in the
     * address map. fenced_batches is read without the lock by misses. */
    struct front_batch fenced[FRONT_FENCED_BATCHES];
    uint32_t fenced_oldest;
    uint32_t fenced_batches;
    /* The pending statistics of its unfenced and fenced batches ([0]
     * blocks, [1] bytes), which the statistics read only after a flush.
     * Each may rise to its ceiling without the allocator's lock: the
     * ceilings of all fronts and the pending values add up to at most the
     * peaks, so no rise passes a peak unseen (front_cache_pending_room),
     * and a completion may lower them anywhere. pending_most is the most it
     * held at a fence, what a new sharing gives it first. */
    int64_t pending_waiting[2];
    int64_t pending_ceiling[2];
    int64_t pending_most[2];
    int64_t pending_completed[2]; /* completed here: pending's totals, at the flush */
    bool synchronous; /* given a ceiling since claimed: the flush settles the above */
    /* What its lane's fences owe the statistics and the clearing of every
     * stream (the newest tick a completed batch proves), at the flush. */
    uint64_t epochs_closed;
    int64_t driver_nanoseconds;
    uint64_t completed_tick;
    /* The blocks it handed out, still allocated: address -> block. */
    struct handed_out_entry handed_out[FRONT_HANDED_OUT_SETS][2];
    uint32_t handed_out_count;
};

struct block_store {
    struct block *free_list;
    void **slabs;
    size_t slab_count;
    size_t slab_capacity;
    size_t total_blocks;
};

struct gpucache_allocator {
    /* Read by every lane call and written only at creation or by calls
     * that change the configuration: a cache line of their own, so that
     * writes under the lock do not take it from the cores of the lanes'
     * threads. */
    _Alignas(64) bool gc_enabled;
    bool rounds_plainly; /* size_policy_rounds_plainly, asked once */
    /* The lanes serve synchronous frees: reuse fenced in epochs (neither
     * conservative nor relaxed). */
    bool lanes_free_synchronously;
    /* Event observer (gpucache_allocator_set_observer); NULL: none. */
    gpucache_event_observer *observer;
    void *observer_context;

    /* Read by every lane call, written under the lock at the ordinary
     * path's fences, completions and queries: a line of their own too. */
    _Alignas(64) size_t closed_epoch_count;
    /* Widens the hit path's query pace while queries find nothing
     * completed (query_pace). */
    unsigned query_backoff;

    /* Taken by every fence, the lanes' too, which read the tick at their
     * same-stream frees: apart from the lines above, so that one thread's
     * fence does not take them from the others' cores. */
    _Alignas(64) uint64_t tick;
    /* Counts frees that wait in epochs, so that a synchronize the program
     * made while other threads freed completes only the frees before it. */
    uint64_t free_sequence;

    _Alignas(64) pthread_mutex_t mutex;
    const struct gpucache_config *config;
    const struct gpucache_driver *driver;
    int device;

    struct pool pools[POOL_COUNT];
    struct segment_tree segments;
    struct block *retained; /* freed blocks of pinned segments, by list_next */
    struct block_map allocated; /* block start -> allocated block */
    struct block_store store;

    /* Reuse safety. */
    unsigned mallocs_since_query; /* paces fence queries on the hit path */
    uint64_t all_completed_tick; /* every stream's work before it is done */
    struct stream_state all_streams;
    struct stream_state **streams; /* per-stream states, incl. STREAM_RETIRED */
    size_t stream_count;
    size_t stream_capacity;
    size_t synchronous_closed_bytes[POOL_COUNT]; /* in closed epochs of synchronous frees */
    struct epoch *spare_epochs;
    /* The fronts' pending ceilings summed ([0] blocks, [1] bytes): a
     * pending rise under the lock stays within the peaks with them
     * (pending_increase). */
    int64_t pending_ceilings[2];

    /* Limits resolved at the first growth (resolve_memory_limits in
     * allocator.c), when the device's context can be asked its size. */
    uint64_t allowed_memory_maximum; /* UINT64_MAX: no per-process fraction */
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
    uint8_t fronts_claimed; /* bit i: fronts[i] is claimed by a stream */
    /* Set only while the hit path queries fences: blocks their completions
     * free wait in fronts then. Anywhere else (the miss chain above all)
     * they must go to the free trees, where the caller looks next. */
    bool completions_to_front;
};

/* The allocator's lock where the lanes' threads take it (their misses,
 * fences and queries): held for a few hundred nanoseconds, so a waiter
 * spins first; one that sleeps in the kernel at once costs microseconds
 * (4,282 context switches in a run of two threads' cuMemFree pairs, 231
 * spinning). A plain mutex still, so that its unlock stays the cheapest. */
void allocator_lock_slowly(struct gpucache_allocator *allocator);
static inline void allocator_lock(struct gpucache_allocator *allocator)
{
    if (__builtin_expect(pthread_mutex_trylock(&allocator->mutex) != 0, 0))
        allocator_lock_slowly(allocator);
}

/* The mask of the hit path's fence queries: one allocation in (mask + 1)
 * asks; every 8th, widening to every 64th while the fences run late. */
static inline unsigned query_pace(const struct gpucache_allocator *allocator)
{
    return 7u | __atomic_load_n(&allocator->query_backoff, __ATOMIC_RELAXED);
}

/* The allocator's tick (reuse_epochs.c): the lanes read it and take one
 * for their fences without the allocator's lock, so every access is
 * atomic. */
static inline uint64_t allocator_next_tick(struct gpucache_allocator *allocator)
{
    return __atomic_add_fetch(&allocator->tick, 1, __ATOMIC_ACQ_REL);
}

static inline uint64_t allocator_tick(const struct gpucache_allocator *allocator)
{
    return __atomic_load_n(&allocator->tick, __ATOMIC_ACQUIRE);
}

/* The free sequence (struct epoch's last_free), taken by the lanes' fences
 * too. */
static inline uint64_t allocator_next_free(struct gpucache_allocator *allocator)
{
    return __atomic_add_fetch(&allocator->free_sequence, 1, __ATOMIC_ACQ_REL);
}

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

/* Both events of a free that completes at once (free_requested, then
 * free_completed), in one call. */
void observe_free_at_once(struct gpucache_allocator *allocator, uint64_t address, uint64_t size,
                          uint64_t block_size, gpucache_stream stream);

static inline void emit_free_at_once(struct gpucache_allocator *allocator, uint64_t address,
                                     uint64_t size, uint64_t block_size, gpucache_stream stream)
{
    if (__builtin_expect(allocator->observer != NULL, 0))
        observe_free_at_once(allocator, address, size, block_size, stream);
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
/* Appends the blocks of `list` (freed synchronously, linked by list_next)
 * to the open epoch of every stream, without closing it. */
void epochs_add_synchronous_frees(struct gpucache_allocator *allocator, struct block *list);
/* A lane's batch (its blocks settled: pending, out of the address map)
 * becomes a closed epoch of every stream with its fence; false (nothing
 * done) when no epoch could be had. */
bool epochs_add_fenced_batch(struct gpucache_allocator *allocator, const struct front_batch *batch);
/* Raises the pending statistics, keeping them within their peaks with the
 * fronts' ceilings (front_cache_pending_room). No front's lock held. */
void pending_increase(struct gpucache_allocator *allocator, int64_t blocks, int64_t bytes);
/* Frees the blocks of every epoch whose fence has completed. */
void epochs_process_completed(struct gpucache_allocator *allocator);
/* Waits for the oldest closed epoch of synchronous frees holding bytes of
 * `pool` (and the older ones); false if there is none or the wait failed. */
bool epochs_wait_oldest(struct gpucache_allocator *allocator, enum pool_kind pool);
/* Before the last retry: fences every stream with pending or uncleared
 * blocks and waits for all of them. True when every block is then free and
 * cleared for every stream; false when only a device synchronize can say so. */
bool epochs_wait_all(struct gpucache_allocator *allocator);
/* The clock now, read before a synchronize or a fence that proves what came
 * before it done. */
static inline struct gpucache_sync_point epochs_now(struct gpucache_allocator *allocator)
{
    /* A tick of its own: a lane's free stamps the tick after the one it
     * reads, so every free the lanes made before this point is at or
     * below it, and none made after. */
    return (struct gpucache_sync_point){
        allocator_next_tick(allocator),
        __atomic_load_n(&allocator->free_sequence, __ATOMIC_ACQUIRE)};
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
/* Frees and merges back every block waiting in a front, gives the blocks
 * the fronts handed out their ordinary state and settles the statistics the
 * fronts owe; under the allocator's lock. */
void front_cache_flush_slow(struct gpucache_allocator *allocator);
static inline void front_cache_flush(struct gpucache_allocator *allocator)
{
    if (allocator->fronts_claimed != 0)
        front_cache_flush_slow(allocator);
}
/* Sets up the fronts of a new allocator. */
void front_cache_init(struct gpucache_allocator *allocator);
/* Keeps `block`, whose free (synchronous, or on another stream) completed,
 * waiting in the front of the stream it was allocated on; false (nothing
 * done) when the front cannot take it. The caller reported its
 * free_completed. */
bool front_cache_put_after_fence(struct gpucache_allocator *allocator, struct block *block);
/* Frees and merges back the front of `stream` (destroyed: its token may
 * name another stream next). */
void front_cache_flush_stream(struct gpucache_allocator *allocator, gpucache_stream stream);
/* Keeps the ALLOCATED `block`, freed stream-ordered on its own stream, in
 * that stream's front; false (nothing done) when the front cannot take it. */
bool front_cache_put(struct gpucache_allocator *allocator, struct block *block);
/* A block of `size` bytes of `pool` that `stream` freed on itself (or that
 * a fence cleared), taken out of its front and counted allocated for a
 * request of `requested` bytes; NULL when the front holds none. */
struct block *front_cache_take(struct gpucache_allocator *allocator, gpucache_stream stream,
                               uint64_t size, enum pool_kind pool, uint64_t requested);
/* For a BLOCK_FRONT block found in the address map: true when its front
 * handed it out (it is allocated), and then, with `reclaim`, it leaves the
 * front and becomes BLOCK_ALLOCATED; false when it waits in a slot (it was
 * freed already). */
bool front_cache_handed_out(struct gpucache_allocator *allocator, struct block *block,
                            bool reclaim);

/* The lanes: a hit and a same-stream free served by the front of the
 * stream under its own lock, without the allocator's. The hit returns the
 * block's address, or LANE_MISS when the ordinary path must serve the
 * request, LANE_QUERY_DUE when it should query fences first. The free
 * returns false when the ordinary path must take it. The checks that need
 * no lock are inline; the rest of each lane is out of line. */
#define LANE_MISS 0
#define LANE_QUERY_DUE 1 /* never an address: blocks start at multiples of 512 */
uint64_t front_lane_take_in(struct gpucache_allocator *allocator, struct front_cache *front,
                            gpucache_stream stream, size_t size);
bool front_lane_put_in(struct gpucache_allocator *allocator, struct front_cache *front,
                       uint64_t address, gpucache_stream stream);
/* The front `stream` claimed, looked up without a lock (the claim is
 * checked again under the front's): this thread's latest front first. */
extern __thread uint8_t front_lane_hint __attribute__((tls_model("initial-exec")));
struct front_cache *front_lane_find_other(struct gpucache_allocator *allocator,
                                          gpucache_stream stream);
static inline struct front_cache *front_lane_find(struct gpucache_allocator *allocator,
                                                  gpucache_stream stream)
{
    struct front_cache *front = &allocator->fronts[front_lane_hint % FRONT_STREAMS];
    if (__atomic_load_n(&front->stream, __ATOMIC_RELAXED) == stream &&
        __atomic_load_n(&front->used, __ATOMIC_RELAXED))
        return front;
    return front_lane_find_other(allocator, stream);
}

static inline uint64_t front_lane_take(struct gpucache_allocator *allocator,
                                       gpucache_stream stream, size_t size)
{
    /* A lookup of a pool under garbage collection ages its blocks: the
     * ordinary path counts them. */
    if (__atomic_load_n(&allocator->gc_enabled, __ATOMIC_RELAXED))
        return LANE_MISS;
    struct front_cache *front = front_lane_find(allocator, stream);
    if (front == NULL)
        return LANE_MISS;
    return front_lane_take_in(allocator, front, stream, size);
}

static inline bool front_lane_put(struct gpucache_allocator *allocator, uint64_t address,
                                  gpucache_stream stream)
{
    struct front_cache *front = front_lane_find(allocator, stream);
    return front != NULL && front_lane_put_in(allocator, front, address, stream);
}

bool front_lane_free_synchronously_in(struct gpucache_allocator *allocator,
                                      struct front_cache *front, uint64_t address);
/* A synchronous free served by the front that handed the block out (this
 * thread's latest front), under its lock alone; false when the ordinary
 * path must take it. Every 64th fences the front's batch, under the
 * allocator's lock. */
static inline bool front_lane_free_synchronously(struct gpucache_allocator *allocator,
                                                 uint64_t address)
{
    return allocator->lanes_free_synchronously &&
           front_lane_free_synchronously_in(
               allocator, &allocator->fronts[front_lane_hint % FRONT_STREAMS], address);
}
/* The front `stream` claimed, or NULL. Under the allocator's lock. */
struct front_cache *front_cache_of_stream_slowly(struct gpucache_allocator *allocator,
                                                 gpucache_stream stream);
static inline struct front_cache *front_cache_of_stream(struct gpucache_allocator *allocator,
                                                        gpucache_stream stream)
{
    /* last_front is NULL or a front in use. */
    struct front_cache *last = allocator->last_front;
    if (last != NULL && last->stream == stream)
        return last;
    return allocator->fronts_claimed != 0 ? front_cache_of_stream_slowly(allocator, stream)
                                          : NULL;
}
/* Whether `front` has a slot for `key` (size | pool). Under the allocator's
 * lock. */
bool front_cache_keeps(struct front_cache *front, uint64_t key);
/* Whether the BLOCK_FRONT `block` waits in a slot of its front (free under
 * merge-at-free), not handed out nor waiting for a fence, and is not
 * cleared for every stream; read under its front's lock, since its lane
 * writes the block. Walks the slot: for misses only. Under the allocator's
 * lock. */
bool front_cache_slot_holds_uncleared(struct gpucache_allocator *allocator,
                                      const struct block *block);
/* Merges back the blocks waiting in `front`'s slots; the front stays
 * claimed, with its sizes, its handed-out blocks and its batches. Under the
 * allocator's lock. */
void front_cache_empty_slots(struct gpucache_allocator *allocator, struct front_cache *front);
/* The peaks of the statistics the fronts defer decreases of, saved before
 * an allocation that does not flush the fronts raises them as if none were
 * deferred (front_cache_allocated_beside puts them right). */
#define FRONT_DEFERRED_STATS 5
struct front_peaks {
    /* allocation, allocated_bytes, requested_bytes, active, active_bytes:
     * all, the pool */
    int64_t peaks[FRONT_DEFERRED_STATS][2];
};
void front_cache_save_peaks(struct gpucache_allocator *allocator, enum pool_kind pool,
                            struct front_peaks *saved);
/* The ALLOCATED `block` came from the trees while fronts defer decreases:
 * the peaks `saved` before its allocation are raised to what the
 * statistics read without those, and `front` (the stream's own, or NULL)
 * hands it out where its map has room and a slot could hold it (see
 * malloc_past_front). Under the allocator's lock. */
void front_cache_allocated_beside(struct gpucache_allocator *allocator, struct front_cache *front,
                                  struct block *block, const struct front_peaks *saved);
/* Fences the synchronous frees `front`'s lane served since its last
 * batch, as a batch of the front (or, with every batch there waiting, the
 * oldest made an ordinary epoch first; with no fence, they wait in the
 * open epoch); under the allocator's lock. */
void front_cache_fence_batch(struct gpucache_allocator *allocator, struct front_cache *front);
/* front_cache_fence_batch for every front. */
void front_cache_fence_batches(struct gpucache_allocator *allocator);
/* Completes `front`'s batches whose fences have completed, into its slots;
 * under the allocator's lock. */
void front_cache_complete_batches(struct gpucache_allocator *allocator, struct front_cache *front);
/* Waits for `front`'s oldest batch and completes it; false when none
 * waits or the wait failed. Under the allocator's lock. */
bool front_cache_wait_batch(struct gpucache_allocator *allocator, struct front_cache *front);
/* A synchronize proved done every free up to `frees` (free_sequence): the
 * fronts' batches up to it complete. Under the allocator's lock. */
void front_cache_batches_done(struct gpucache_allocator *allocator, uint64_t frees);
/* Shares the room under the pending peaks among the fronts' ceilings,
 * after raising the peaks to what the statistics would read with `need`
 * ([0] blocks, [1] bytes) more: `needy`'s ceiling covers `need` (NULL: the
 * rise is the caller's, under the allocator's lock). Under the allocator's
 * lock, no front's held. */
void front_cache_pending_room(struct gpucache_allocator *allocator, struct front_cache *needy,
                              const int64_t need[2]);

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

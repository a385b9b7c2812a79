/* gpucache_allocator_check: every structural invariant, and every current
 * statistic recomputed from the blocks. For tests; O(blocks + segments). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "expandable_segments.h"
#include "gpucache_allocator_testing.h"
#include "segment_source.h"

struct recount {
    int64_t allocation[POOL_COUNT];
    int64_t allocated_bytes[POOL_COUNT];
    int64_t active[POOL_COUNT];
    int64_t active_bytes[POOL_COUNT];
    int64_t requested_bytes[POOL_COUNT];
    int64_t inactive_split[POOL_COUNT];
    int64_t inactive_split_bytes[POOL_COUNT];
    int64_t segment[POOL_COUNT];
    int64_t reserved_bytes[POOL_COUNT];
    int64_t oversize_allocations;
    int64_t oversize_segments;
    int64_t pending_blocks;
    int64_t pending_bytes;
    int64_t blocks_by_state[BLOCK_STATE_COUNT];
    int64_t chained_by_state[BLOCK_STATE_COUNT]; /* reached by walking segment chains */
    int64_t heads;
};

static bool fail(char *why, size_t why_size, const char *format, ...)
{
    if (why != NULL && why_size > 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(why, why_size, format, arguments);
        va_end(arguments);
    }
    return false;
}

/* The free trees' order: (stream, size, address), strictly increasing. */
static bool key_before(const struct block *a, const struct block *b)
{
    if (a->stream != b->stream)
        return a->stream < b->stream;
    if (a->size != b->size)
        return a->size < b->size;
    return a->address < b->address;
}

static bool check_block_shape(const struct block *block, char *why, size_t why_size)
{
    if (block->size == 0 || block->size % 512 != 0 || block->address % 512 != 0)
        return fail(why, why_size, "block 0x%llx has size %llu: not a positive 512 multiple",
                    (unsigned long long)block->address, (unsigned long long)block->size);
    if (block->segment == NULL || block->pool != block->segment->pool)
        return fail(why, why_size, "block 0x%llx is not in the pool of its segment",
                    (unsigned long long)block->address);
    return true;
}

/* Walks the chain that starts at a segment's first block: its blocks must
 * tile the segment exactly. */
static bool walk_segment(struct gpucache_allocator *allocator, const struct block *head,
                         struct recount *recount, char *why, size_t why_size)
{
    const struct segment *segment = head->segment;
    if (head->address != segment->base ||
        segment_source_find(allocator, segment->base) != segment)
        return fail(why, why_size, "block 0x%llx starts a chain but not a known segment",
                    (unsigned long long)head->address);
    recount->heads++;
    uint64_t expected = segment->base;
    for (const struct block *block = head; block != NULL; block = block->next) {
        if (block->segment != segment || block->address != expected)
            return fail(why, why_size, "segment 0x%llx: block at 0x%llx, expected 0x%llx",
                        (unsigned long long)segment->base, (unsigned long long)block->address,
                        (unsigned long long)expected);
        if (block->next != NULL && block->next->prev != block)
            return fail(why, why_size, "block 0x%llx: broken neighbour links",
                        (unsigned long long)block->address);
        if (block->state >= BLOCK_STATE_COUNT)
            return fail(why, why_size, "block 0x%llx has no valid state",
                        (unsigned long long)block->address);
        recount->chained_by_state[block->state]++;
        expected += block->size;
    }
    if (expected != segment->base + segment->size)
        return fail(why, why_size, "segment 0x%llx of %llu bytes: its blocks end at 0x%llx",
                    (unsigned long long)segment->base, (unsigned long long)segment->size,
                    (unsigned long long)expected);
    return true;
}

static bool visit_block(struct gpucache_allocator *allocator, const struct block *block,
                        struct recount *recount, char *why, size_t why_size)
{
    if (!check_block_shape(block, why, why_size))
        return false;
    return block->prev != NULL || walk_segment(allocator, block, recount, why, why_size);
}

static bool count_pending_list(struct gpucache_allocator *allocator, struct recount *recount, const struct block *list,
                               size_t expected_blocks, char *why, size_t why_size)
{
    size_t blocks = 0;
    for (const struct block *block = list; block != NULL; block = block->list_next, blocks++) {
        if (block->state != BLOCK_PENDING)
            return fail(why, why_size, "block 0x%llx in an epoch is not pending",
                        (unsigned long long)block->address);
        if (!visit_block(allocator, block, recount, why, why_size))
            return false;
        recount->active[block->pool]++;
        recount->active_bytes[block->pool] += (int64_t)block->size;
        recount->requested_bytes[block->pool] += (int64_t)block->requested_size;
        recount->pending_blocks++;
        recount->pending_bytes += (int64_t)block->size;
        recount->blocks_by_state[BLOCK_PENDING]++;
    }
    if (blocks != expected_blocks)
        return fail(why, why_size, "an epoch counts %zu blocks but lists %zu", expected_blocks,
                    blocks);
    return true;
}

static bool count_stream_state(struct gpucache_allocator *allocator,
                               const struct stream_state *state, struct recount *recount,
                               size_t *closed_epochs, size_t closed_bytes[POOL_COUNT],
                               char *why, size_t why_size)
{
    if (!count_pending_list(allocator, recount, state->open.first, state->open.block_count, why, why_size))
        return false;
    for (const struct epoch *epoch = state->oldest; epoch != NULL; epoch = epoch->next) {
        if (!count_pending_list(allocator, recount, epoch->first, epoch->block_count, why, why_size))
            return false;
        (*closed_epochs)++;
        for (int pool = 0; pool < POOL_COUNT && state->all_streams; pool++)
            closed_bytes[pool] += epoch->bytes[pool];
    }
    return true;
}

static bool count_blocks(struct gpucache_allocator *allocator, struct recount *recount,
                         char *why, size_t why_size)
{
    const uint64_t max_split = allocator->config->max_split_size;
    const struct block_map *map = &allocator->allocated;
    size_t mapped_entries = 0;
    for (size_t i = 0; i < map->capacity; i++) {
        const struct block *block = map->slots[i].block;
        if (map->slots[i].address == 0)
            continue;
        mapped_entries++;
        if (block->address != map->slots[i].address || block->state != BLOCK_ALLOCATED)
            return fail(why, why_size, "address map entry 0x%llx is not an allocated block there",
                        (unsigned long long)map->slots[i].address);
        if (!visit_block(allocator, block, recount, why, why_size))
            return false;
        int pool = block->pool;
        recount->allocation[pool]++;
        recount->allocated_bytes[pool] += (int64_t)block->size;
        recount->active[pool]++;
        recount->active_bytes[pool] += (int64_t)block->size;
        recount->requested_bytes[pool] += (int64_t)block->requested_size;
        if (block->size >= max_split)
            recount->oversize_allocations++;
        recount->blocks_by_state[BLOCK_ALLOCATED]++;
    }
    if (mapped_entries != map->count)
        return fail(why, why_size, "address map counts %zu entries but holds %zu", map->count,
                    mapped_entries);

    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block;
        const struct block *previous = NULL;
        RB_FOREACH(block, free_tree, &allocator->pools[pool].free_blocks) {
            if (previous != NULL && !key_before(previous, block))
                return fail(why, why_size, "free tree of pool %d out of order at 0x%llx", pool,
                            (unsigned long long)block->address);
            previous = block;
            if (block->state != BLOCK_FREE || block->pool != pool)
                return fail(why, why_size, "block 0x%llx in the free tree of pool %d is not free there",
                            (unsigned long long)block->address, pool);
            if (!visit_block(allocator, block, recount, why, why_size))
                return false;
            if (block_is_split(block)) {
                recount->inactive_split[pool]++;
                recount->inactive_split_bytes[pool] += (int64_t)block->size;
            }
            recount->blocks_by_state[BLOCK_FREE]++;
        }
    }

    for (struct block *block = allocator->retained; block != NULL; block = block->list_next) {
        if (block->state != BLOCK_RETAINED || !block->segment->pinned)
            return fail(why, why_size, "retained block 0x%llx is not in a pinned segment",
                        (unsigned long long)block->address);
        if (!visit_block(allocator, block, recount, why, why_size))
            return false;
        recount->blocks_by_state[BLOCK_RETAINED]++;
    }

    struct segment *segment;
    RB_FOREACH(segment, segment_tree, &allocator->segments)
        for (struct block *block = expandable_first_unmapped(segment); block != NULL;
             block = expandable_next_unmapped(block)) {
            if (!visit_block(allocator, block, recount, why, why_size))
                return false;
            recount->blocks_by_state[BLOCK_UNMAPPED]++;
        }

    size_t closed_epochs = 0;
    size_t closed_bytes[POOL_COUNT] = {0};
    if (!count_stream_state(allocator, &allocator->all_streams, recount, &closed_epochs,
                            closed_bytes, why, why_size))
        return false;
    for (size_t i = 0; i < allocator->stream_count; i++)
        if (!count_stream_state(allocator, allocator->streams[i], recount, &closed_epochs,
                                closed_bytes, why, why_size))
            return false;
    for (int pool = 0; pool < POOL_COUNT; pool++)
        if (closed_bytes[pool] != allocator->synchronous_closed_bytes[pool])
            return fail(why, why_size, "pool %d: %zu bytes counted in closed epochs of synchronous frees, %zu listed",
                        pool, allocator->synchronous_closed_bytes[pool], closed_bytes[pool]);
    if (closed_epochs != allocator->closed_epoch_count)
        return fail(why, why_size, "%zu closed epochs counted, %zu listed",
                    allocator->closed_epoch_count, closed_epochs);
    return true;
}

static bool check_segments(struct gpucache_allocator *allocator, struct recount *recount,
                           char *why, size_t why_size)
{
    uint64_t previous_end = 0;
    int64_t segments = 0;
    struct segment *segment;
    RB_FOREACH(segment, segment_tree, &allocator->segments) {
        if (segment->base < previous_end)
            return fail(why, why_size, "segment 0x%llx overlaps the one before it",
                        (unsigned long long)segment->base);
        previous_end = segment->base + segment->size;
        segments++;
        if (segment->kind == SEGMENT_EXPANDABLE) {
            size_t mapped = 0;
            if (!expandable_check_segment(segment, &mapped, why, why_size))
                return false;
            recount->reserved_bytes[segment->pool] += (int64_t)mapped;
            continue;
        }
        recount->segment[segment->pool]++;
        recount->reserved_bytes[segment->pool] += (int64_t)segment->size;
        if (segment->size >= allocator->config->max_split_size)
            recount->oversize_segments++;
    }
    if (recount->heads != segments)
        return fail(why, why_size, "%lld segments but %lld chains start at a segment base",
                    (long long)segments, (long long)recount->heads);
    for (int state = 0; state < BLOCK_STATE_COUNT; state++)
        if (recount->chained_by_state[state] != recount->blocks_by_state[state])
            return fail(why, why_size,
                        "%lld blocks in state %d are listed but %lld are in segment chains",
                        (long long)recount->blocks_by_state[state], state,
                        (long long)recount->chained_by_state[state]);
    return true;
}

static bool check_stat(const char *name, const struct gpucache_stat *stat, int64_t expected,
                       char *why, size_t why_size)
{
    if (stat->current != expected)
        return fail(why, why_size, "%s.current is %lld, recomputed %lld", name,
                    (long long)stat->current, (long long)expected);
    if (stat->peak < stat->current || stat->allocated - stat->freed != stat->current)
        return fail(why, why_size, "%s: peak %lld, allocated %lld, freed %lld disagree with current %lld",
                    name, (long long)stat->peak, (long long)stat->allocated,
                    (long long)stat->freed, (long long)stat->current);
    return true;
}

static bool check_stat_array(const char *name, const struct gpucache_stat *array,
                             const int64_t per_pool[POOL_COUNT], char *why, size_t why_size)
{
    char label[64];
    snprintf(label, sizeof label, "%s.all", name);
    if (!check_stat(label, &array[GPUCACHE_STAT_ALL], per_pool[POOL_SMALL] + per_pool[POOL_LARGE],
                    why, why_size))
        return false;
    snprintf(label, sizeof label, "%s.small_pool", name);
    if (!check_stat(label, &array[GPUCACHE_STAT_SMALL_POOL], per_pool[POOL_SMALL], why, why_size))
        return false;
    snprintf(label, sizeof label, "%s.large_pool", name);
    return check_stat(label, &array[GPUCACHE_STAT_LARGE_POOL], per_pool[POOL_LARGE], why,
                      why_size);
}

static bool check_stats(const struct gpucache_stats *stats, const struct recount *recount,
                        char *why, size_t why_size)
{
    return check_stat_array("allocation", stats->allocation, recount->allocation, why, why_size) &&
           check_stat_array("allocated_bytes", stats->allocated_bytes, recount->allocated_bytes,
                            why, why_size) &&
           check_stat_array("active", stats->active, recount->active, why, why_size) &&
           check_stat_array("active_bytes", stats->active_bytes, recount->active_bytes, why,
                            why_size) &&
           check_stat_array("requested_bytes", stats->requested_bytes, recount->requested_bytes,
                            why, why_size) &&
           check_stat_array("inactive_split", stats->inactive_split, recount->inactive_split,
                            why, why_size) &&
           check_stat_array("inactive_split_bytes", stats->inactive_split_bytes,
                            recount->inactive_split_bytes, why, why_size) &&
           check_stat_array("segment", stats->segment, recount->segment, why, why_size) &&
           check_stat_array("reserved_bytes", stats->reserved_bytes, recount->reserved_bytes,
                            why, why_size) &&
           check_stat("oversize_allocations", &stats->oversize_allocations,
                      recount->oversize_allocations, why, why_size) &&
           check_stat("oversize_segments", &stats->oversize_segments,
                      recount->oversize_segments, why, why_size) &&
           check_stat("gpucache.pending_blocks", &stats->pending_blocks, recount->pending_blocks,
                      why, why_size) &&
           check_stat("gpucache.pending_bytes", &stats->pending_bytes, recount->pending_bytes,
                      why, why_size);
}

/* After a flush no front defers anything: every count it keeps for the
 * statistics is back at zero (a count left over would skew the peaks its
 * front's next blocks are read against). Only the allocator's lock claims a
 * front, and a lane writes nothing in a front it finds unclaimed, so these
 * need no front's lock. */
static bool check_fronts_settled(struct gpucache_allocator *allocator, char *why,
                                 size_t why_size)
{
    for (int i = 0; i < FRONT_STREAMS; i++) {
        struct front_cache *front = &allocator->fronts[i];
        if ((allocator->fronts_claimed >> i) & 1u)
            continue;
        bool settled = front->handed_out_count == 0 && front->unfenced.count == 0;
        for (int pool = 0; pool < POOL_COUNT; pool++)
            settled = settled && front->requested[pool] == 0 &&
                      front->allocated_blocks[pool] == 0 && front->allocated_bytes[pool] == 0 &&
                      front->active_blocks[pool] == 0 && front->active_bytes[pool] == 0;
        if (!settled)
            return fail(why, why_size, "front %d defers statistics after its flush: %lld blocks, "
                        "%lld bytes, %lld requested bytes (small pool)", i,
                        (long long)front->allocated_blocks[POOL_SMALL],
                        (long long)front->allocated_bytes[POOL_SMALL],
                        (long long)front->requested[POOL_SMALL]);
        if (front->fenced_batches != 0 || front->pending_waiting[0] != 0 ||
            front->pending_waiting[1] != 0 || front->pending_ceiling[0] != 0 ||
            front->pending_ceiling[1] != 0)
            return fail(why, why_size, "front %d holds pending values after its flush: %u "
                        "batches, %lld blocks and %lld bytes waiting, ceilings %lld and %lld", i,
                        front->fenced_batches, (long long)front->pending_waiting[0],
                        (long long)front->pending_waiting[1], (long long)front->pending_ceiling[0],
                        (long long)front->pending_ceiling[1]);
    }
    if (allocator->pending_ceilings[0] != 0 || allocator->pending_ceilings[1] != 0)
        return fail(why, why_size, "pending ceilings of %lld blocks and %lld bytes after the flush",
                    (long long)allocator->pending_ceilings[0],
                    (long long)allocator->pending_ceilings[1]);
    return true;
}

bool gpucache_allocator_check(struct gpucache_allocator *allocator, char *why, size_t why_size)
{
    struct recount recount;
    memset(&recount, 0, sizeof recount);
    pthread_mutex_lock(&allocator->mutex);
    front_cache_flush(allocator);
    bool ok = check_fronts_settled(allocator, why, why_size) &&
              count_blocks(allocator, &recount, why, why_size) &&
              check_segments(allocator, &recount, why, why_size) &&
              check_stats(&allocator->stats, &recount, why, why_size);
    pthread_mutex_unlock(&allocator->mutex);
    if (ok && why != NULL && why_size > 0)
        why[0] = '\0';
    return ok;
}

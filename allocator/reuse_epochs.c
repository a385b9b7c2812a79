/* Reuse safety: freed blocks wait in epochs until a fence recorded after
 * their free completes. Synchronous frees are fenced on all streams at once;
 * stream-ordered frees on a foreign stream are fenced on that stream; an
 * empty epoch on a stream clears that stream's free blocks for the others. */
#include <stdlib.h>
#include <string.h>

#include "allocator_internal.h"

static uint64_t max_tick(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

struct stream_state *stream_state_find(struct gpucache_allocator *allocator,
                                       gpucache_stream stream, bool create)
{
    for (size_t i = 0; i < allocator->stream_count; i++)
        if (allocator->streams[i]->stream == stream)
            return allocator->streams[i];
    if (!create)
        return NULL;
    if (allocator->stream_count == allocator->stream_capacity) {
        size_t capacity = allocator->stream_capacity ? allocator->stream_capacity * 2 : 8;
        struct stream_state **streams =
            realloc(allocator->streams, capacity * sizeof *streams);
        if (streams == NULL)
            return NULL;
        allocator->streams = streams;
        allocator->stream_capacity = capacity;
    }
    struct stream_state *state = calloc(1, sizeof *state);
    if (state == NULL)
        return NULL;
    state->stream = stream;
    allocator->streams[allocator->stream_count++] = state;
    return state;
}

uint64_t stream_state_cleared_tick(const struct gpucache_allocator *allocator,
                                   const struct stream_state *state)
{
    return max_tick(state->completed_tick, allocator->all_completed_tick);
}

static size_t epoch_bytes(const struct epoch *epoch)
{
    return epoch->bytes[POOL_SMALL] + epoch->bytes[POOL_LARGE];
}

static void append_pending(struct gpucache_allocator *allocator, struct stream_state *state,
                           struct block *block)
{
    struct epoch *open = &state->open;
    block->state = BLOCK_PENDING;
    block->list_next = NULL;
    if (open->last != NULL)
        open->last->list_next = block;
    else
        open->first = block;
    open->last = block;
    open->block_count++;
    open->bytes[block->pool] += block->size;
    open->last_free = allocator_next_free(allocator);
    pending_increase(allocator, 1, (int64_t)block->size);
}

void pending_increase(struct gpucache_allocator *allocator, int64_t blocks, int64_t bytes)
{
    struct gpucache_stats *stats = &allocator->stats;
    /* With every ceiling 0 no front holds pending blocks, and the values
     * read here are what the statistics read. */
    if ((allocator->pending_ceilings[0] != 0 || allocator->pending_ceilings[1] != 0) &&
        (stats->pending_blocks.current + blocks + allocator->pending_ceilings[0] >
             stats->pending_blocks.peak ||
         stats->pending_bytes.current + bytes + allocator->pending_ceilings[1] >
             stats->pending_bytes.peak)) {
        const int64_t need[2] = {blocks, bytes};
        front_cache_pending_room(allocator, NULL, need);
    }
    stat_increase(&stats->pending_blocks, blocks);
    stat_increase(&stats->pending_bytes, bytes);
}

void epoch_add_pending(struct gpucache_allocator *allocator, struct stream_state *state,
                       struct block *block)
{
    append_pending(allocator, state, block);
    struct epoch *open = &state->open;
    if (open->block_count >= EPOCH_CLOSE_FREES || epoch_bytes(open) >= EPOCH_CLOSE_BYTES)
        epoch_close(allocator, state);
}

void epochs_add_synchronous_frees(struct gpucache_allocator *allocator, struct block *list)
{
    while (list != NULL) {
        struct block *block = list;
        list = block->list_next;
        append_pending(allocator, &allocator->all_streams, block);
    }
}

/* The blocks of `list` are safe for every stream now. The pending
 * statistics fall once for the whole list: no rise passed their peaks
 * unseen (pending_increase), so a fall needs no reading first. */
static void free_pending_list(struct gpucache_allocator *allocator, struct block *list)
{
    int64_t blocks = 0;
    int64_t bytes = 0;
    while (list != NULL) {
        struct block *block = list;
        list = block->list_next;
        block->list_next = NULL;
        block->free_tick = 0;
        blocks++;
        bytes += (int64_t)block->size;
        emit_event(allocator, GPUCACHE_EVENT_FREE_COMPLETED, block->address,
                   block->requested_size, block->stream);
        /* Cleared for every stream now: its own stream's next request of its
         * size takes it from the front. */
        if (!front_cache_put_after_fence(allocator, block))
            block_becomes_free(allocator, block);
    }
    stat_decrease(&allocator->stats.pending_blocks, blocks);
    stat_decrease(&allocator->stats.pending_bytes, bytes);
}

static void complete_open_epoch(struct gpucache_allocator *allocator, struct stream_state *state)
{
    struct block *list = state->open.first;
    memset(&state->open, 0, sizeof state->open);
    free_pending_list(allocator, list);
}

/* Completes the closed epochs of `state` up to and including `through`
 * (fences of one stream complete in order, so the older ones are done too).
 * Same-stream frees up to each epoch's tick, but never past `cleared_limit`,
 * are then cleared too. */
static void complete_epochs_until(struct gpucache_allocator *allocator,
                                  struct stream_state *state, const struct epoch *through,
                                  uint64_t cleared_limit)
{
    for (;;) {
        struct epoch *epoch = state->oldest;
        state->oldest = epoch->next;
        if (state->oldest == NULL)
            state->newest = NULL;
        __atomic_store_n(&allocator->closed_epoch_count, allocator->closed_epoch_count - 1,
                         __ATOMIC_RELAXED);
        for (int pool = 0; pool < POOL_COUNT && state->all_streams; pool++)
            allocator->synchronous_closed_bytes[pool] -= epoch->bytes[pool];
        uint64_t cleared = epoch->tick < cleared_limit ? epoch->tick : cleared_limit;
        state->completed_tick = max_tick(state->completed_tick, cleared);
        if (state->all_streams)
            allocator->all_completed_tick = max_tick(allocator->all_completed_tick, cleared);
        if (epoch->fence != NULL) /* NULL: released when its query answered */
            driver_fence_release(allocator, epoch->fence);
        struct epoch done = *epoch;
        bool last = epoch == through;
        memset(epoch, 0, sizeof *epoch);
        epoch->next = allocator->spare_epochs;
        allocator->spare_epochs = epoch;
        free_pending_list(allocator, done.first);
        if (last)
            return;
    }
}

/* A completed fence clears everything before it was recorded. */
static void complete_epochs_through(struct gpucache_allocator *allocator,
                                    struct stream_state *state, const struct epoch *through)
{
    complete_epochs_until(allocator, state, through, UINT64_MAX);
}

bool synchronize_device_for_reuse(struct gpucache_allocator *allocator)
{
    if (driver_capture_active(allocator))
        return false;
    /* Read before the synchronize: the lanes free without the lock, so a
     * free may come while it runs. */
    struct gpucache_sync_point since = epochs_now(allocator);
    gpucache_result result;
    DRIVER_CALL(allocator, result, synchronize_device, allocator->device);
    allocator->stats.num_device_synchronizations++;
    if (result != GPUCACHE_SUCCESS)
        return false;
    epochs_all_work_done(allocator, since);
    return true;
}

static void append_closed(struct gpucache_allocator *allocator, struct stream_state *state,
                          struct epoch *epoch);

/* An epoch struct, spare or new; NULL without memory. */
static struct epoch *take_epoch(struct gpucache_allocator *allocator)
{
    struct epoch *epoch = allocator->spare_epochs;
    if (epoch != NULL)
        allocator->spare_epochs = epoch->next;
    else
        epoch = calloc(1, sizeof *epoch);
    return epoch;
}

/* An epoch, spare or new, with a fence recorded for `state` (every stream
 * for all_streams) and the tick taken before the record; NULL when no fence
 * could be recorded (a capture, a driver error, no memory). */
static struct epoch *fenced_epoch(struct gpucache_allocator *allocator,
                                  const struct stream_state *state)
{
    struct epoch *epoch = take_epoch(allocator);
    if (epoch == NULL)
        return NULL;
    const struct gpucache_driver *driver = allocator->driver;
    gpucache_result result = GPUCACHE_ERROR_NOT_READY;
    /* Taken before the fence is recorded: a lane's free that read the
     * older tick came before the record, so the fence covers it. */
    uint64_t tick = allocator_next_tick(allocator);
    int64_t timer = driver_timer_start();
    /* No events during capture: the blocks stay pending. */
    if (!driver->capture_active(driver->context, allocator->device))
        result = state->all_streams
                     ? driver->fence_all_streams(driver->context, allocator->device,
                                                 &epoch->fence)
                     : driver_fence_stream(allocator, state->stream, &epoch->fence);
    driver_timer_stop(allocator, timer);
    if (result != GPUCACHE_SUCCESS) {
        epoch->next = allocator->spare_epochs;
        allocator->spare_epochs = epoch;
        return NULL;
    }
    epoch->tick = tick;
    return epoch;
}

void epoch_close(struct gpucache_allocator *allocator, struct stream_state *state)
{
    if (allocator->config->reuse == GPUCACHE_REUSE_CONSERVATIVE) {
        synchronize_device_for_reuse(allocator);
        return;
    }
    struct epoch *epoch = fenced_epoch(allocator, state);
    if (epoch == NULL)
        return;
    struct epoch fenced = *epoch;
    *epoch = state->open;
    epoch->fence = fenced.fence;
    epoch->tick = fenced.tick;
    memset(&state->open, 0, sizeof state->open);
    append_closed(allocator, state, epoch);
}

static void list_closed(struct gpucache_allocator *allocator, struct stream_state *state,
                        struct epoch *epoch);

bool epochs_add_fenced_batch(struct gpucache_allocator *allocator, const struct front_batch *batch)
{
    struct epoch *epoch = take_epoch(allocator);
    if (epoch == NULL)
        return false;
    epoch->fence = batch->fence;
    epoch->tick = batch->tick;
    epoch->last_free = batch->last_free;
    epoch->first = batch->batch.first;
    epoch->last = batch->batch.last;
    epoch->block_count = batch->batch.count;
    for (int pool = 0; pool < POOL_COUNT; pool++)
        epoch->bytes[pool] = batch->batch.bytes[pool];
    /* The front's ceilings fell by as much first (front_cache.c): within
     * the peaks, with a front's lock held, so no new sharing. */
    stat_increase(&allocator->stats.pending_blocks, (int64_t)batch->batch.count);
    stat_increase(&allocator->stats.pending_bytes, (int64_t)epoch_bytes(epoch));
    /* Its lane counted the fence. Recorded without the allocator's lock, it
     * may be older than the newest epoch listed: the list's order is then
     * not the order of the records, which wait_for_epoch allows for. */
    list_closed(allocator, &allocator->all_streams, epoch);
    return true;
}

/* Lists a closed epoch as the newest of `state`. */
static void list_closed(struct gpucache_allocator *allocator, struct stream_state *state,
                        struct epoch *epoch)
{
    epoch->next = NULL;
    if (state->newest != NULL)
        state->newest->next = epoch;
    else
        state->oldest = epoch;
    state->newest = epoch;
    state->fenced_tick = max_tick(state->fenced_tick, epoch->tick);
    __atomic_store_n(&allocator->closed_epoch_count, allocator->closed_epoch_count + 1,
                     __ATOMIC_RELAXED);
    for (int pool = 0; pool < POOL_COUNT && state->all_streams; pool++)
        allocator->synchronous_closed_bytes[pool] += epoch->bytes[pool];
}

static void append_closed(struct gpucache_allocator *allocator, struct stream_state *state,
                          struct epoch *epoch)
{
    list_closed(allocator, state, epoch);
    allocator->stats.num_epochs_closed++;
}

void epochs_close_all_open(struct gpucache_allocator *allocator)
{
    if (allocator->all_streams.open.block_count != 0)
        epoch_close(allocator, &allocator->all_streams);
    for (size_t i = 0; i < allocator->stream_count; i++) {
        struct stream_state *state = allocator->streams[i];
        if (state->open.block_count != 0 && state->stream != STREAM_RETIRED)
            epoch_close(allocator, state);
    }
}

/* The newest closed epoch of `state` whose fence has completed, or NULL.
 * Fences of one state complete in the order they were recorded, so the
 * queries stop at the first one not ready (or failing: asked again later).
 * A completed fence is released at once, inside the caller's timing. */
static struct epoch *query_completed(struct gpucache_allocator *allocator,
                                     struct stream_state *state)
{
    const struct gpucache_driver *driver = allocator->driver;
    struct epoch *completed = NULL;
    for (struct epoch *epoch = state->oldest; epoch != NULL; epoch = epoch->next) {
        if (driver->fence_query(driver->context, epoch->fence) != GPUCACHE_SUCCESS)
            break;
        driver->fence_release(driver->context, epoch->fence);
        epoch->fence = NULL;
        completed = epoch;
    }
    return completed;
}

/* One timing for the capture check and every query: on a cache hit the
 * clock readings would cost more than the calls. */
void epochs_process_completed(struct gpucache_allocator *allocator)
{
    if (allocator->closed_epoch_count == 0)
        return;
    const struct gpucache_driver *driver = allocator->driver;
    int64_t timer = driver_timer_start();
    bool capturing = driver->capture_active(driver->context, allocator->device);
    struct epoch *completed = NULL;
    if (!capturing)
        completed = query_completed(allocator, &allocator->all_streams);
    driver_timer_stop(allocator, timer);
    if (capturing)
        return;
    if (completed != NULL)
        complete_epochs_through(allocator, &allocator->all_streams, completed);
    for (size_t i = 0; i < allocator->stream_count; i++) {
        struct stream_state *state = allocator->streams[i];
        if (state->oldest == NULL)
            continue;
        timer = driver_timer_start();
        completed = query_completed(allocator, state);
        driver_timer_stop(allocator, timer);
        if (completed != NULL)
            complete_epochs_through(allocator, state, completed);
    }
}

/* Blocks the host until `epoch`'s fence completes, then frees its blocks
 * and those of the older epochs of `state`. False when the wait failed. */
static bool wait_for_epoch(struct gpucache_allocator *allocator, struct stream_state *state,
                           struct epoch *epoch)
{
    /* Every older one too: a lane's batch that a flush listed may have
     * been recorded after an epoch listed before it (epochs_add_fenced_batch),
     * so one fence's completion does not prove an older one's. A completed
     * fence's wait returns at once. */
    allocator->stats.num_fence_waits++;
    for (struct epoch *older = state->oldest;; older = older->next) {
        gpucache_result result = GPUCACHE_SUCCESS;
        if (older->fence != NULL)
            DRIVER_CALL(allocator, result, fence_wait, older->fence);
        if (result != GPUCACHE_SUCCESS)
            return false;
        if (older == epoch)
            break;
    }
    complete_epochs_through(allocator, state, epoch);
    return true;
}

static struct epoch *first_epoch_holding(struct stream_state *state, enum pool_kind pool)
{
    for (struct epoch *epoch = state->oldest; epoch != NULL; epoch = epoch->next)
        if (epoch->bytes[pool] != 0)
            return epoch;
    return NULL;
}

bool epochs_wait_oldest(struct gpucache_allocator *allocator, enum pool_kind pool)
{
    /* Only epochs of synchronous frees: the program would have waited for
     * those in cuMemFree itself. A stream-ordered free never made it wait. */
    struct stream_state *state = &allocator->all_streams;
    if (allocator->synchronous_closed_bytes[pool] == 0 || driver_capture_active(allocator))
        return false;
    struct epoch *oldest = first_epoch_holding(state, pool);
    return oldest != NULL && wait_for_epoch(allocator, state, oldest);
}

/* The work of `state`'s stream issued before `since` is complete: the
 * epochs whose frees all came before it, and same-stream frees before it. */
static void state_work_done(struct gpucache_allocator *allocator, struct stream_state *state,
                            struct gpucache_sync_point since)
{
    struct epoch *through = NULL;
    for (struct epoch *epoch = state->oldest; epoch != NULL && epoch->last_free <= since.frees;
         epoch = epoch->next)
        through = epoch;
    if (through != NULL)
        complete_epochs_until(allocator, state, through, since.tick);
    if (state->oldest == NULL && state->open.block_count != 0 &&
        state->open.last_free <= since.frees)
        complete_open_epoch(allocator, state);
    state->completed_tick = max_tick(state->completed_tick, since.tick);
}

void epochs_all_work_done(struct gpucache_allocator *allocator, struct gpucache_sync_point since)
{
    state_work_done(allocator, &allocator->all_streams, since);
    for (size_t i = 0; i < allocator->stream_count; i++)
        state_work_done(allocator, allocator->streams[i], since);
    front_cache_batches_done(allocator, since.frees);
    allocator->all_completed_tick = max_tick(allocator->all_completed_tick, since.tick);
}

void epochs_stream_work_done(struct gpucache_allocator *allocator, gpucache_stream stream,
                             struct gpucache_sync_point since)
{
    struct stream_state *state = stream_state_find(allocator, stream, false);
    if (state != NULL)
        state_work_done(allocator, state, since);
}

void epochs_request_cross_stream_clearing(struct gpucache_allocator *allocator,
                                          enum pool_kind pool, gpucache_stream stream,
                                          size_t size)
{
    for (size_t i = 0; i < allocator->stream_count; i++) {
        struct stream_state *state = allocator->streams[i];
        /* One clearing fence in flight per stream is enough; a retired
         * stream cannot take new fences. */
        if (state->stream == stream || state->stream == STREAM_RETIRED ||
            state->oldest != NULL || state->fenced_tick == allocator_tick(allocator))
            continue;
        struct block *fitting = free_blocks_lower_bound(allocator, pool, state->stream, size);
        if (fitting != NULL && !block_cleared_in(allocator, state, fitting))
            epoch_close(allocator, state);
    }
}

/* Whether `state`'s stream may still be using some of its free blocks
 * (some stream-ordered free on it came after its last completed fence). */
static bool stream_has_uncleared_blocks(struct gpucache_allocator *allocator,
                                        const struct stream_state *state)
{
    if (stream_state_cleared_tick(allocator, state) >= allocator_tick(allocator))
        return false;
    return free_blocks_lower_bound(allocator, POOL_SMALL, state->stream, 0) != NULL ||
           free_blocks_lower_bound(allocator, POOL_LARGE, state->stream, 0) != NULL;
}

/* Waits for the newest closed epoch of `state` and so for all of them.
 * False when the wait failed. */
static bool wait_newest_epoch(struct gpucache_allocator *allocator, struct stream_state *state)
{
    return state->newest == NULL || wait_for_epoch(allocator, state, state->newest);
}

bool epochs_wait_all(struct gpucache_allocator *allocator)
{
    if (driver_capture_active(allocator))
        return false;
    epochs_close_all_open(allocator);
    /* A clearing fence for each stream whose free blocks other streams may
     * not take yet. */
    for (size_t i = 0; i < allocator->stream_count; i++) {
        struct stream_state *state = allocator->streams[i];
        if (state->stream != STREAM_RETIRED && state->fenced_tick < allocator_tick(allocator) &&
            stream_has_uncleared_blocks(allocator, state))
            epoch_close(allocator, state);
    }
    bool all_done = wait_newest_epoch(allocator, &allocator->all_streams);
    for (size_t i = 0; i < allocator->stream_count; i++)
        all_done = wait_newest_epoch(allocator, allocator->streams[i]) && all_done;
    /* Blocks still pending (their fence could not be recorded), or free
     * blocks of a stream that could not be fenced, need more. */
    if (allocator->stats.pending_blocks.current != 0)
        all_done = false;
    for (size_t i = 0; i < allocator->stream_count && all_done; i++) {
        const struct stream_state *state = allocator->streams[i];
        if (stream_has_uncleared_blocks(allocator, state))
            all_done = false;
    }
    return all_done;
}

static void rekey_list(struct block *list, gpucache_stream from, gpucache_stream to)
{
    for (struct block *block = list; block != NULL; block = block->list_next)
        if (block->stream == from)
            block->stream = to;
}

static void rekey_epochs(struct stream_state *state, gpucache_stream from, gpucache_stream to)
{
    rekey_list(state->open.first, from, to);
    for (struct epoch *epoch = state->oldest; epoch != NULL; epoch = epoch->next)
        rekey_list(epoch->first, from, to);
}

static void rekey_free_blocks(struct gpucache_allocator *allocator, gpucache_stream from,
                              uint64_t free_tick)
{
    for (int pool = 0; pool < POOL_COUNT; pool++) {
        struct block *block = free_blocks_lower_bound(allocator, pool, from, 0);
        while (block != NULL && block->stream == from) {
            struct block *next = RB_NEXT(free_tree, &allocator->pools[pool].free_blocks, block);
            free_blocks_remove(allocator, block);
            block->stream = STREAM_RETIRED;
            if (block->free_tick != 0)
                block->free_tick = free_tick;
            uint64_t gc_count_base = block->gc_count_base;
            free_blocks_insert(allocator, block);
            block->gc_count_base = gc_count_base;
            block = next;
        }
    }
}

static void append_list(struct epoch *to, struct epoch *from)
{
    if (from->first == NULL)
        return;
    if (to->last != NULL)
        to->last->list_next = from->first;
    else
        to->first = from->first;
    to->last = from->last;
    to->block_count += from->block_count;
    to->last_free = max_tick(to->last_free, from->last_free);
    for (int pool = 0; pool < POOL_COUNT; pool++)
        to->bytes[pool] += from->bytes[pool];
}

/* Hands the epochs of a destroyed stream to the retired state. Their ticks
 * are at most the current tick, so the retired state's FIFO still completes
 * a block's fence no earlier than its own. */
static void move_epochs_to_retired(struct stream_state *state, struct stream_state *retired)
{
    append_list(&retired->open, &state->open);
    if (state->oldest != NULL) {
        if (retired->newest != NULL)
            retired->newest->next = state->oldest;
        else
            retired->oldest = state->oldest;
        retired->newest = state->newest;
    }
    retired->fenced_tick = max_tick(retired->fenced_tick, state->fenced_tick);
}

static void remove_stream_state(struct gpucache_allocator *allocator, struct stream_state *state)
{
    for (size_t i = 0; i < allocator->stream_count; i++) {
        if (allocator->streams[i] == state) {
            allocator->streams[i] = allocator->streams[--allocator->stream_count];
            break;
        }
    }
    free(state);
}

void epochs_retire_stream(struct gpucache_allocator *allocator, gpucache_stream stream)
{
    if (stream == STREAM_RETIRED)
        return;
    struct stream_state *retired = stream_state_find(allocator, STREAM_RETIRED, true);
    if (retired == NULL)
        return; /* host memory exhausted: the blocks keep their key, still safe */
    struct stream_state *state = stream_state_find(allocator, stream, false);
    /* The fence after the stream's last work clears everything it touched. */
    if (state != NULL)
        epoch_close(allocator, state);
    rekey_free_blocks(allocator, stream, allocator_tick(allocator));
    const struct block_map *map = &allocator->allocated;
    for (size_t i = 0; i < map->capacity; i++)
        if (map->slots[i].address != 0 && map->slots[i].block->stream == stream)
            map->slots[i].block->stream = STREAM_RETIRED;
    rekey_epochs(&allocator->all_streams, stream, STREAM_RETIRED);
    for (size_t i = 0; i < allocator->stream_count; i++)
        rekey_epochs(allocator->streams[i], stream, STREAM_RETIRED);
    if (state != NULL) {
        move_epochs_to_retired(state, retired);
        remove_stream_state(allocator, state);
    }
}

static void discard_state(struct gpucache_allocator *allocator, struct stream_state *state,
                          bool release_fences)
{
    while (state->oldest != NULL) {
        struct epoch *epoch = state->oldest;
        state->oldest = epoch->next;
        if (release_fences)
            driver_fence_release(allocator, epoch->fence);
        else if (allocator->driver->fence_forget != NULL && epoch->fence != NULL)
            allocator->driver->fence_forget(allocator->driver->context, epoch->fence);
        free(epoch);
    }
    state->newest = NULL;
    memset(&state->open, 0, sizeof state->open);
}

void epochs_discard(struct gpucache_allocator *allocator, bool release_fences)
{
    discard_state(allocator, &allocator->all_streams, release_fences);
    for (size_t i = 0; i < allocator->stream_count; i++) {
        discard_state(allocator, allocator->streams[i], release_fences);
        free(allocator->streams[i]);
    }
    free(allocator->streams);
    allocator->streams = NULL;
    allocator->stream_count = allocator->stream_capacity = 0;
    while (allocator->spare_epochs != NULL) {
        struct epoch *epoch = allocator->spare_epochs;
        allocator->spare_epochs = epoch->next;
        free(epoch);
    }
    __atomic_store_n(&allocator->closed_epoch_count, 0, __ATOMIC_RELAXED);
    allocator->synchronous_closed_bytes[POOL_SMALL] = allocator->synchronous_closed_bytes[POOL_LARGE] = 0;
}

/* ---- what the program's synchronizations and stream destructions prove */

struct gpucache_sync_point gpucache_allocator_sync_point(struct gpucache_allocator *allocator)
{
    pthread_mutex_lock(&allocator->mutex);
    /* The synchronous frees the lanes served so far get their free
     * sequence now, so that a synchronize of the device covers them. */
    front_cache_fence_batches(allocator);
    struct gpucache_sync_point point = epochs_now(allocator);
    pthread_mutex_unlock(&allocator->mutex);
    return point;
}

/* Under the allocator's lock. */
static void work_done_since(struct gpucache_allocator *allocator, bool whole_device,
                            gpucache_stream stream, struct gpucache_sync_point since)
{
    if (whole_device)
        epochs_all_work_done(allocator, since);
    else
        epochs_stream_work_done(allocator, stream, since);
}

void gpucache_allocator_synchronized_since(struct gpucache_allocator *allocator,
                                           bool whole_device, gpucache_stream stream,
                                           struct gpucache_sync_point since)
{
    pthread_mutex_lock(&allocator->mutex);
    work_done_since(allocator, whole_device, stream, since);
    pthread_mutex_unlock(&allocator->mutex);
}

void gpucache_allocator_synchronized(struct gpucache_allocator *allocator, bool whole_device,
                                     gpucache_stream stream)
{
    pthread_mutex_lock(&allocator->mutex);
    if (whole_device)
        front_cache_fence_batches(allocator);
    work_done_since(allocator, whole_device, stream, epochs_now(allocator));
    pthread_mutex_unlock(&allocator->mutex);
}

void gpucache_allocator_stream_destroyed(struct gpucache_allocator *allocator,
                                         gpucache_stream stream)
{
    pthread_mutex_lock(&allocator->mutex);
    /* The token may name a new stream next: nothing of the old one may
     * wait for it in a front. */
    front_cache_flush_stream(allocator, stream);
    epochs_retire_stream(allocator, stream);
    pthread_mutex_unlock(&allocator->mutex);
}

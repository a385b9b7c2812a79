/* The event log: per-thread chunks of events, merged by sequence number when
 * read.
 *
 * An append is on the allocator's hot path and usually happens under the
 * allocator's own lock, so a second lock there only costs. Each thread writes
 * into a chunk of its own, reached through an initial-exec thread-local
 * cache, and publishes each entry with a release store of the chunk's fill
 * count; readers take the log's lock and read up to an acquire load of it.
 * The log's lock is taken by a writer only to swap a full chunk for an empty
 * one (once per chunk) or the first time a thread meets a log.
 *
 * The global order is one relaxed atomic counter: events recorded under one
 * allocator lock take their numbers in the lock's order, so sorting by number
 * at read time gives exactly the order the lock gave, and events of threads
 * that do not synchronize are ordered as their increments happened.
 *
 * Events from the allocator carry ticks of gpucache_event_clock (the TSC
 * where the kernel keeps time by it: no call, no vDSO) and are converted to
 * wall time when copied out, against CLOCK_MONOTONIC and CLOCK_REALTIME
 * read when the first log was created and again at the copy. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpucache_event_log.h"

/* 2048 entries of 64 bytes: 128 KiB per thread that records, few chunks
 * for long runs, and the lock taken once per 2048 events. */
#define EVENTS_PER_CHUNK 2048

struct entry {
    uint64_t sequence;
    struct gpucache_event event;
};

/* The entries first: an entry's address is then the chunk's plus a shift. */
struct chunk {
    struct entry entries[EVENTS_PER_CHUNK];
    size_t used; /* atomic: written by the owning thread only, read by readers */
    struct chunk *next;
};

/* One thread's place in one log. `current` changes only under the log's
 * lock, by the owner; an exited thread's buffer is adopted by the next
 * thread that meets the log, so thread churn does not grow the log. */
struct thread_buffer {
    struct thread_buffer *next;
    struct chunk *current; /* NULL until the first event */
    pthread_t owner;
    bool orphaned;
};

struct gpucache_event_log {
    /* Alone on its line: every append of every thread increments it. */
    _Alignas(64) uint64_t next_sequence;
    _Alignas(64) uint64_t id; /* unique per log, so a reused address is not mistaken */
    pthread_mutex_t lock;
    struct chunk *full_head, *full_tail; /* published chunks, in publishing order */
    size_t full_events;                  /* entries in published chunks */
    struct chunk *spare;                 /* cleared chunks kept for reuse */
    struct thread_buffer *buffers;
    size_t max_events; /* 0: unlimited */
    uint64_t dropped;
    /* Entries numbered below this are gone: by the limit (a suffix of the
     * history is kept, so older entries of other threads go too) or by a
     * clear. */
    uint64_t dropped_below;
    uint64_t cleared_below;
    struct gpucache_event_log *next_live;
};

/* The thread's last log: the fast path is a compare of two words. `chunk`
 * is buffer->current, kept here to spare a load per event. */
struct thread_cache {
    struct gpucache_event_log *log;
    uint64_t id;
    struct chunk *chunk;
    struct thread_buffer *buffer;
};
static _Thread_local __attribute__((tls_model("initial-exec"))) struct thread_cache cached;

/* Live logs, so a thread's exit never touches a destroyed one. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpucache_event_log *live_logs;
static uint64_t next_log_id = 1;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static const char *const action_names[GPUCACHE_EVENT_ACTION_COUNT] = {
    [GPUCACHE_EVENT_ALLOC] = "alloc",
    [GPUCACHE_EVENT_FREE_REQUESTED] = "free_requested",
    [GPUCACHE_EVENT_FREE_COMPLETED] = "free_completed",
    [GPUCACHE_EVENT_SEGMENT_ALLOC] = "segment_alloc",
    [GPUCACHE_EVENT_SEGMENT_FREE] = "segment_free",
    [GPUCACHE_EVENT_SEGMENT_MAP] = "segment_map",
    [GPUCACHE_EVENT_SEGMENT_UNMAP] = "segment_unmap",
    [GPUCACHE_EVENT_OOM] = "oom",
    [GPUCACHE_EVENT_SNAPSHOT] = "snapshot",
};

const char *gpucache_event_action_name(enum gpucache_event_action action)
{
    return (unsigned)action < GPUCACHE_EVENT_ACTION_COUNT ? action_names[action] : "?";
}

/* At thread exit: the buffer's events stay in the log, and the buffer is
 * free for another thread to write after them. */
static void thread_exited(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&live_lock);
    for (struct gpucache_event_log *log = live_logs; log; log = log->next_live) {
        if (log == cached.log && log->id == cached.id) {
            pthread_mutex_lock(&log->lock);
            cached.buffer->orphaned = true;
            pthread_mutex_unlock(&log->lock);
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    cached = (struct thread_cache){0};
}

static void create_exit_key(void)
{
    pthread_key_create(&exit_key, thread_exited);
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* The ticks' origin, taken once per process before any event. */
static struct {
    uint64_t ticks;
    int64_t monotonic_ns;
    int64_t wall_minus_monotonic_ns;
} clock_origin;
static pthread_once_t clock_origin_once = PTHREAD_ONCE_INIT;

static void take_clock_origin(void)
{
    gpucache_event_clock_init();
    clock_origin.wall_minus_monotonic_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
    clock_origin.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
    clock_origin.ticks = gpucache_event_clock();
}

/* Wall time of ticks: `ns_per_tick` measured over the whole run so far. */
struct tick_conversion {
    double ns_per_tick;
};

/* A rate measured over at least this long is good to a few parts in 10^4
 * for the shortest runs, and better the longer the run. */
#define CALIBRATION_NS 20000000

static struct tick_conversion tick_conversion_now(void)
{
    if (!gpucache_event_clock_is_tsc)
        return (struct tick_conversion){1.0};
    int64_t elapsed = clock_ns(CLOCK_MONOTONIC) - clock_origin.monotonic_ns;
    if (elapsed < CALIBRATION_NS) {
        int64_t wait = CALIBRATION_NS - elapsed;
        nanosleep(&(struct timespec){wait / 1000000000, wait % 1000000000}, NULL);
    }
    /* The two reads as close together as possible. */
    uint64_t ticks = gpucache_event_clock();
    int64_t monotonic = clock_ns(CLOCK_MONOTONIC);
    return (struct tick_conversion){(double)(monotonic - clock_origin.monotonic_ns) /
                                    (double)(ticks - clock_origin.ticks)};
}

static uint64_t wall_time(const struct tick_conversion *conversion, uint64_t ticks)
{
    int64_t since = (int64_t)(ticks - clock_origin.ticks);
    return (uint64_t)(clock_origin.wall_minus_monotonic_ns + clock_origin.monotonic_ns +
                      (int64_t)((double)since * conversion->ns_per_tick));
}

struct gpucache_event_log *gpucache_event_log_create(size_t max_events)
{
    pthread_once(&exit_key_once, create_exit_key);
    pthread_once(&clock_origin_once, take_clock_origin);
    struct gpucache_event_log *log = aligned_alloc(64, sizeof *log);
    if (!log)
        return NULL;
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->lock, NULL);
    log->max_events = max_events;
    pthread_mutex_lock(&live_lock);
    log->id = next_log_id++;
    log->next_live = live_logs;
    live_logs = log;
    pthread_mutex_unlock(&live_lock);
    return log;
}

static void free_chunks(struct chunk *chunk)
{
    while (chunk) {
        struct chunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
}

void gpucache_event_log_destroy(struct gpucache_event_log *log)
{
    if (!log)
        return;
    pthread_mutex_lock(&live_lock);
    for (struct gpucache_event_log **link = &live_logs; *link; link = &(*link)->next_live) {
        if (*link == log) {
            *link = log->next_live;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    free_chunks(log->full_head);
    free_chunks(log->spare);
    struct thread_buffer *buffer = log->buffers;
    while (buffer) {
        struct thread_buffer *next = buffer->next;
        free(buffer->current);
        free(buffer);
        buffer = next;
    }
    if (cached.log == log)
        cached = (struct thread_cache){0};
    pthread_mutex_destroy(&log->lock);
    free(log);
}

/* The calling thread's buffer in `log`: its own, an exited thread's, or a
 * new one (NULL when out of memory). Called with the lock held. */
static struct thread_buffer *buffer_of_thread(struct gpucache_event_log *log)
{
    pthread_t self = pthread_self();
    struct thread_buffer *orphan = NULL;
    for (struct thread_buffer *buffer = log->buffers; buffer; buffer = buffer->next) {
        if (!buffer->orphaned && pthread_equal(buffer->owner, self))
            return buffer;
        if (buffer->orphaned && !orphan)
            orphan = buffer;
    }
    if (orphan) {
        orphan->orphaned = false;
        orphan->owner = self;
        return orphan;
    }
    struct thread_buffer *buffer = calloc(1, sizeof *buffer);
    if (!buffer)
        return NULL;
    buffer->owner = self;
    buffer->next = log->buffers;
    log->buffers = buffer;
    return buffer;
}

/* The last entry's number of a published chunk. */
static uint64_t last_sequence(const struct chunk *chunk)
{
    return chunk->entries[chunk->used - 1].sequence;
}

/* An empty chunk: a spare, the oldest published one when the limit is
 * reached, or a new one. Called with the lock held. */
static struct chunk *empty_chunk(struct gpucache_event_log *log)
{
    struct chunk *chunk = log->spare;
    if (chunk) {
        log->spare = chunk->next;
    } else if (log->max_events && log->full_head &&
               log->full_events - log->full_head->used >= log->max_events) {
        chunk = log->full_head;
        log->full_head = chunk->next;
        if (!log->full_head)
            log->full_tail = NULL;
        log->full_events -= chunk->used;
        log->dropped += chunk->used;
        uint64_t below = last_sequence(chunk) + 1;
        if (below > log->dropped_below)
            log->dropped_below = below;
    } else {
        chunk = malloc(sizeof *chunk);
        if (!chunk)
            return NULL;
    }
    chunk->next = NULL;
    __atomic_store_n(&chunk->used, 0, __ATOMIC_RELAXED);
    return chunk;
}

/* Moves the buffer's full chunk to the published list and gives it an
 * empty one; false when none can be had. Called with the lock held. */
static bool replace_chunk(struct gpucache_event_log *log, struct thread_buffer *buffer)
{
    struct chunk *full = buffer->current;
    if (full && full->used < EVENTS_PER_CHUNK)
        return true;
    /* Published first, so that the limit counts it when the empty chunk is
     * chosen (the oldest may be recycled, never this one: it is the newest). */
    if (full) {
        if (log->full_tail)
            log->full_tail->next = full;
        else
            log->full_head = full;
        log->full_tail = full;
        log->full_events += full->used;
    }
    buffer->current = empty_chunk(log);
    return buffer->current != NULL;
}

/* Writes one entry into the buffer's chunk, which has room. */
static inline void put(struct gpucache_event_log *log, struct chunk *chunk, size_t used,
                       const struct gpucache_event *event)
{
    struct entry *entry = &chunk->entries[used];
    entry->sequence = __atomic_fetch_add(&log->next_sequence, 1, __ATOMIC_RELAXED);
    entry->event = *event;
    __atomic_store_n(&chunk->used, used + 1, __ATOMIC_RELEASE);
}

/* The first event of a thread in this log, or one that fills its chunk. */
static __attribute__((noinline)) void append_slowly(struct gpucache_event_log *log,
                                                    const struct gpucache_event *event)
{
    pthread_mutex_lock(&log->lock);
    struct thread_buffer *buffer = buffer_of_thread(log);
    if (!buffer || !replace_chunk(log, buffer)) {
        log->dropped++;
        pthread_mutex_unlock(&log->lock);
        /* The cached chunk may be published and recycled by now. */
        if (cached.log == log)
            cached.log = NULL;
        return;
    }
    pthread_mutex_unlock(&log->lock);
    if (cached.log == NULL)
        pthread_setspecific(exit_key, &cached);
    struct chunk *chunk = buffer->current;
    cached = (struct thread_cache){log, log->id, chunk, buffer};
    put(log, chunk, chunk->used, event);
}

/* Inline in both entry points: the observer is called per event, and a
 * jump from one to the other is an instruction of the ~60 an event costs. */
static inline __attribute__((always_inline)) void append(struct gpucache_event_log *log,
                                                         const struct gpucache_event *event)
{
    if (__builtin_expect(cached.log == log && cached.id == log->id, 1)) {
        struct chunk *chunk = cached.chunk;
        size_t used = chunk->used; /* only this thread writes it */
        if (__builtin_expect(used < EVENTS_PER_CHUNK, 1)) {
            put(log, chunk, used, event);
            return;
        }
    }
    append_slowly(log, event);
}

void gpucache_event_log_append(struct gpucache_event_log *log, const struct gpucache_event *event)
{
    append(log, event);
}

void gpucache_event_log_observe(void *log, const struct gpucache_event *event)
{
    append(log, event);
}

void gpucache_event_log_record(struct gpucache_event_log *log, enum gpucache_event_action action,
                               int device, uint64_t address, uint64_t size, uint64_t stream)
{
    struct gpucache_event event = {
        .time_ns = gpucache_event_clock(),
        .address = address,
        .size = size,
        .stream = stream,
        .thread = gpucache_event_thread_id(),
        .device = (int16_t)device,
        .action = (uint8_t)action,
        .reserved = GPUCACHE_EVENT_TICKS,
    };
    gpucache_event_log_append(log, &event);
}

/* Calls `visit` on every entry kept (not dropped, not cleared), in no
 * particular order. Called with the lock held. */
static void for_each_entry(struct gpucache_event_log *log,
                           void (*visit)(void *context, const struct entry *entry), void *context)
{
    uint64_t below = log->dropped_below > log->cleared_below ? log->dropped_below
                                                             : log->cleared_below;
    for (struct chunk *chunk = log->full_head; chunk; chunk = chunk->next)
        for (size_t index = 0; index < chunk->used; index++)
            if (chunk->entries[index].sequence >= below)
                visit(context, &chunk->entries[index]);
    for (struct thread_buffer *buffer = log->buffers; buffer; buffer = buffer->next) {
        struct chunk *chunk = buffer->current;
        if (!chunk)
            continue;
        size_t used = __atomic_load_n(&chunk->used, __ATOMIC_ACQUIRE);
        for (size_t index = 0; index < used; index++)
            if (chunk->entries[index].sequence >= below)
                visit(context, &chunk->entries[index]);
    }
}

static void count_entry(void *context, const struct entry *entry)
{
    (void)entry;
    ++*(size_t *)context;
}

/* Entries numbered below `dropped_below` but not cleared: other threads'
 * entries older than a dropped chunk's, gone with it. */
struct older_count {
    uint64_t below;
    uint64_t count;
};

static void count_older(void *context, const struct entry *entry)
{
    struct older_count *older = context;
    older->count += entry->sequence < older->below;
}

size_t gpucache_event_log_count(struct gpucache_event_log *log)
{
    size_t count = 0;
    pthread_mutex_lock(&log->lock);
    for_each_entry(log, count_entry, &count);
    pthread_mutex_unlock(&log->lock);
    return count;
}

uint64_t gpucache_event_log_dropped(struct gpucache_event_log *log)
{
    pthread_mutex_lock(&log->lock);
    struct older_count older = {log->dropped_below, 0};
    uint64_t saved = log->dropped_below;
    /* Walk what survives the clear only, counting what the limit hides. */
    log->dropped_below = 0;
    for_each_entry(log, count_older, &older);
    log->dropped_below = saved;
    uint64_t dropped = log->dropped + older.count;
    pthread_mutex_unlock(&log->lock);
    return dropped;
}

struct copy_target {
    struct entry *entries;
    size_t count, capacity;
    int device;
};

static void copy_entry(void *context, const struct entry *entry)
{
    struct copy_target *target = context;
    if ((target->device < 0 || entry->event.device == target->device) &&
        target->count < target->capacity)
        target->entries[target->count++] = *entry;
}

static int compare_sequences(const void *a, const void *b)
{
    uint64_t x = ((const struct entry *)a)->sequence, y = ((const struct entry *)b)->sequence;
    return (x > y) - (x < y);
}

struct gpucache_event *gpucache_event_log_copy(struct gpucache_event_log *log, int device,
                                               size_t *count)
{
    *count = 0;
    pthread_mutex_lock(&log->lock);
    size_t capacity = 0;
    for_each_entry(log, count_entry, &capacity);
    struct copy_target target = {capacity ? malloc(capacity * sizeof *target.entries) : NULL, 0,
                                 capacity, device};
    if (target.entries)
        for_each_entry(log, copy_entry, &target);
    pthread_mutex_unlock(&log->lock);
    if (!target.entries || target.count == 0) {
        free(target.entries);
        return NULL;
    }
    /* Each chunk is in order already; the merge is over a handful of runs,
     * and this runs when a report is written, not per event. */
    qsort(target.entries, target.count, sizeof *target.entries, compare_sequences);
    struct gpucache_event *copy = malloc(target.count * sizeof *copy);
    if (copy) {
        struct tick_conversion conversion = tick_conversion_now();
        for (size_t index = 0; index < target.count; index++) {
            copy[index] = target.entries[index].event;
            if (copy[index].reserved & GPUCACHE_EVENT_TICKS) {
                copy[index].time_ns = wall_time(&conversion, copy[index].time_ns);
                copy[index].reserved &= (uint8_t)~GPUCACHE_EVENT_TICKS;
            }
        }
        *count = target.count;
    }
    free(target.entries);
    return copy;
}

void gpucache_event_log_clear(struct gpucache_event_log *log)
{
    pthread_mutex_lock(&log->lock);
    if (log->full_tail) {
        log->full_tail->next = log->spare;
        log->spare = log->full_head;
    }
    log->full_head = log->full_tail = NULL;
    log->full_events = 0;
    log->cleared_below = __atomic_load_n(&log->next_sequence, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&log->lock);
}

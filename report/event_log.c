/* The event log: a FIFO of fixed-size chunks. Appends fill the newest chunk;
 * a full log (max_events reached) recycles its oldest chunk as the newest, so
 * steady state allocates nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gpucache_event_log.h"

/* 2048 events of 56 bytes: 112 KiB, few enough chunks for long runs while a
 * short run does not pay for a large first allocation. */
#define EVENTS_PER_CHUNK 2048

struct chunk {
    STAILQ_ENTRY(chunk) link;
    size_t used;
    struct gpucache_event events[EVENTS_PER_CHUNK];
};

STAILQ_HEAD(chunk_list, chunk);

struct gpucache_event_log {
    pthread_mutex_t lock;
    struct chunk_list chunks; /* oldest first */
    struct chunk_list spare;  /* cleared chunks kept for reuse */
    size_t chunk_count;       /* in `chunks` */
    size_t count;
    size_t max_chunks;        /* 0: unlimited */
    uint64_t dropped;
};

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

struct gpucache_event_log *gpucache_event_log_create(size_t max_events)
{
    struct gpucache_event_log *log = calloc(1, sizeof *log);
    if (!log)
        return NULL;
    pthread_mutex_init(&log->lock, NULL);
    STAILQ_INIT(&log->chunks);
    STAILQ_INIT(&log->spare);
    /* One chunk more than the limit needs: when the oldest is recycled,
     * at least `max_events` remain. */
    if (max_events)
        log->max_chunks = (max_events + EVENTS_PER_CHUNK - 1) / EVENTS_PER_CHUNK + 1;
    return log;
}

static void free_chunks(struct chunk_list *list)
{
    struct chunk *chunk;
    while ((chunk = STAILQ_FIRST(list))) {
        STAILQ_REMOVE_HEAD(list, link);
        free(chunk);
    }
}

void gpucache_event_log_destroy(struct gpucache_event_log *log)
{
    if (!log)
        return;
    free_chunks(&log->chunks);
    free_chunks(&log->spare);
    pthread_mutex_destroy(&log->lock);
    free(log);
}

/* A chunk with room at the tail, or NULL. Called with the lock held. */
static struct chunk *writable_chunk(struct gpucache_event_log *log)
{
    struct chunk *last = STAILQ_LAST(&log->chunks, chunk, link);
    if (last && last->used < EVENTS_PER_CHUNK)
        return last;
    struct chunk *chunk = STAILQ_FIRST(&log->spare);
    if (chunk) {
        STAILQ_REMOVE_HEAD(&log->spare, link);
    } else if (log->max_chunks && log->chunk_count >= log->max_chunks) {
        chunk = STAILQ_FIRST(&log->chunks);
        STAILQ_REMOVE_HEAD(&log->chunks, link);
        log->chunk_count--;
        log->count -= chunk->used;
        log->dropped += chunk->used;
    } else {
        chunk = malloc(sizeof *chunk);
        if (!chunk)
            return NULL;
    }
    chunk->used = 0;
    STAILQ_INSERT_TAIL(&log->chunks, chunk, link);
    log->chunk_count++;
    return chunk;
}

void gpucache_event_log_append(struct gpucache_event_log *log, const struct gpucache_event *event)
{
    pthread_mutex_lock(&log->lock);
    struct chunk *chunk = writable_chunk(log);
    if (chunk) {
        chunk->events[chunk->used++] = *event;
        log->count++;
    } else {
        log->dropped++;
    }
    pthread_mutex_unlock(&log->lock);
}

void gpucache_event_log_observe(void *log, const struct gpucache_event *event)
{
    gpucache_event_log_append(log, event);
}

void gpucache_event_log_record(struct gpucache_event_log *log, enum gpucache_event_action action,
                               int device, uint64_t address, uint64_t size, uint64_t stream)
{
    struct gpucache_event event = {
        .time_ns = gpucache_event_now(),
        .address = address,
        .size = size,
        .stream = stream,
        .thread = gpucache_event_thread_id(),
        .device = (int16_t)device,
        .action = (uint8_t)action,
    };
    gpucache_event_log_append(log, &event);
}

size_t gpucache_event_log_count(struct gpucache_event_log *log)
{
    pthread_mutex_lock(&log->lock);
    size_t count = log->count;
    pthread_mutex_unlock(&log->lock);
    return count;
}

uint64_t gpucache_event_log_dropped(struct gpucache_event_log *log)
{
    pthread_mutex_lock(&log->lock);
    uint64_t dropped = log->dropped;
    pthread_mutex_unlock(&log->lock);
    return dropped;
}

struct gpucache_event *gpucache_event_log_copy(struct gpucache_event_log *log, int device,
                                               size_t *count)
{
    *count = 0;
    pthread_mutex_lock(&log->lock);
    struct gpucache_event *copy = log->count ? malloc(log->count * sizeof *copy) : NULL;
    if (copy) {
        struct chunk *chunk;
        STAILQ_FOREACH(chunk, &log->chunks, link) {
            for (size_t index = 0; index < chunk->used; index++)
                if (device < 0 || chunk->events[index].device == device)
                    copy[(*count)++] = chunk->events[index];
        }
    }
    pthread_mutex_unlock(&log->lock);
    if (copy && *count == 0) {
        free(copy);
        copy = NULL;
    }
    return copy;
}

void gpucache_event_log_clear(struct gpucache_event_log *log)
{
    pthread_mutex_lock(&log->lock);
    STAILQ_CONCAT(&log->spare, &log->chunks);
    log->chunk_count = 0;
    log->count = 0;
    pthread_mutex_unlock(&log->lock);
}

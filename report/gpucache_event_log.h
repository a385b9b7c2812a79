/* The in-memory event log: the allocator's events (gpucache_events.h)
 * recorded for traces and snapshots. A log is appended to on the allocator's
 * hot path: each thread fills a chunk of its own without a lock (the log's
 * lock is taken once per chunk), chunks are reused (no host allocation per
 * event in steady state), and reads merge the threads' chunks back into the
 * order the events were appended in. */
#ifndef GPUCACHE_EVENT_LOG_H
#define GPUCACHE_EVENT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "gpucache_events.h"

/* PyTorch's name of an action ("alloc", "segment_map", ...); "?" when out of range. */
const char *gpucache_event_action_name(enum gpucache_event_action action);

struct gpucache_event_log;

/* A log that keeps the newest `max_events` events (0: unlimited), give or
 * take a chunk (2048 events) per recording thread; when full, the oldest
 * chunk is dropped and reused, as PyTorch's ring buffer drops its oldest
 * entries, and older events of other threads go with it so that what is
 * kept is a suffix of the history. Returns NULL when host memory is
 * exhausted. */
struct gpucache_event_log *gpucache_event_log_create(size_t max_events);

/* Frees the log and every chunk. */
void gpucache_event_log_destroy(struct gpucache_event_log *log);

/* Appends one event; its place in the order is the moment of the append.
 * Never fails the caller: when a new chunk cannot be allocated the event is
 * counted as dropped. Thread-safe; a thread's events outlive the thread. */
void gpucache_event_log_append(struct gpucache_event_log *log, const struct gpucache_event *event);

/* gpucache_event_log_append as a gpucache_event_observer: `log` is the
 * context (gpucache_allocator_set_observer(allocator,
 * gpucache_event_log_observe, log) records an allocator's events). */
void gpucache_event_log_observe(void *log, const struct gpucache_event *event);

/* Stamps time (gpucache_event_clock) and thread, then appends. */
void gpucache_event_log_record(struct gpucache_event_log *log, enum gpucache_event_action action,
                               int device, uint64_t address, uint64_t size, uint64_t stream);

/* Events held now, and events lost (dropped by the limit or for want of memory). */
size_t gpucache_event_log_count(struct gpucache_event_log *log);
uint64_t gpucache_event_log_dropped(struct gpucache_event_log *log);

/* A copy of the events in the order they were appended, into a new array
 * the caller frees (NULL with *count 0 when empty or out of memory), times
 * in wall time. Events of `device` only, or all when `device` is negative.
 * Every append that happened before the call is in it. */
struct gpucache_event *gpucache_event_log_copy(struct gpucache_event_log *log, int device,
                                               size_t *count);

/* Forgets every event, keeping the chunks for reuse. */
void gpucache_event_log_clear(struct gpucache_event_log *log);

#endif

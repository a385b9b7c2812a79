/* The trace a replay runs: allocations and frees in the order the program made
 * them, each free already paired with its allocation, and the allocations
 * that were alive before the recording began placed first. Every reader
 * (RMM CSV, PyTorch snapshot) produces this through a replay_trace_builder,
 * which also rejects traces that contradict themselves. */
#ifndef GPUCACHE_REPLAY_TRACE_H
#define GPUCACHE_REPLAY_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "address_map.h"
#include "read_error.h"

/* Where in the input an event came from. */
enum replay_origin {
    REPLAY_ORIGIN_CSV_LINE,    /* major: line number, from 1 */
    REPLAY_ORIGIN_TRACE_ENTRY, /* major: device, minor: index in device_traces[major] */
    REPLAY_ORIGIN_FINAL_BLOCK, /* major: index in segments, minor: index in its blocks */
};

struct replay_position {
    uint32_t major;
    uint32_t minor;
    uint8_t origin; /* enum replay_origin */
};

/* The position as a reader names it: "line 12", "device_traces[0][7]",
 * "segments[3].blocks[1]". Returns `buffer`. */
const char *replay_position_format(struct replay_position position, char *buffer, size_t size);

enum replay_action { REPLAY_ALLOC, REPLAY_FREE };

struct replay_event {
    uint64_t size;             /* bytes the program asked for */
    uint64_t original_address; /* the address in the recorded run */
    int64_t time_us;           /* as recorded; -1 when the input has none */
    uint32_t slot;             /* the allocation this event creates or ends */
    uint32_t stream_index;     /* into replay_trace.streams */
    uint32_t thread_index;     /* into replay_trace.threads */
    struct replay_position position;
    uint8_t action; /* enum replay_action */
    bool inferred;  /* alive before the recording began */
};

struct replay_trace {
    struct replay_event *events;
    size_t event_count;
    size_t event_capacity;
    uint64_t *streams; /* the recorded stream handle of each stream index */
    size_t stream_count;
    uint64_t *threads; /* the recorded thread id of each thread index */
    size_t thread_count;
    size_t slot_count;        /* allocations, recorded and inferred */
    size_t inferred_count;    /* the first events: pre-existing allocations */
    size_t alloc_count;       /* recorded allocations */
    size_t free_count;        /* recorded frees */
    size_t ignored_count;     /* input records that are not allocations or frees */
    uint64_t peak_live_bytes; /* most requested bytes alive at once */
    const char *format;       /* "RMM replay CSV" or "PyTorch snapshot" */
    int device;               /* the snapshot device replayed; 0 for CSV */
};

/* Frees everything the trace holds and zeroes it. */
void replay_trace_destroy(struct replay_trace *trace);

/* What the builder remembers of each allocation, for pairing and messages. */
struct replay_slot_record {
    struct replay_position allocated_at;
    struct replay_position freed_at; /* meaningful once !live */
    bool live;
};

/* Collects events in input order and pairs them; see replay_builder_add. */
struct replay_trace_builder {
    struct replay_trace *trace;
    struct address_map slot_of_address; /* latest slot at each address */
    struct address_map stream_index_of;
    struct address_map thread_index_of;
    size_t stream_capacity;
    size_t thread_capacity;
    struct replay_slot_record *slots;
    size_t slot_capacity;
    struct replay_event *inferred;
    size_t inferred_capacity;
    size_t inferred_count;
};

/* One allocation or free as a reader saw it. */
struct replay_record {
    enum replay_action action;
    uint64_t address;
    uint64_t size;
    uint64_t stream;
    uint64_t thread;
    int64_t time_us;
    struct replay_position position;
};

/* Starts filling `trace` (which it zeroes). */
void replay_builder_init(struct replay_trace_builder *builder, struct replay_trace *trace,
                         const char *format);

/* Makes room for `records` more records at once, so that a reader that knows
 * how many may come spares the arrays' growth by copying. False (with
 * `error` set) when memory ran out. */
bool replay_builder_expect(struct replay_trace_builder *builder, size_t records,
                           struct read_error *error);

/* Adds one record. An allocation at an address that is still live, and a free
 * of an address whose allocation was already freed, are errors; a free of an
 * address never seen before is an allocation made before the recording
 * began, and is inferred. */
bool replay_builder_add(struct replay_trace_builder *builder, const struct replay_record *record,
                        struct read_error *error);

/* Declares a block the final state shows as allocated. A block the trace left
 * live is explained; one it never saw was allocated before the recording and
 * is inferred; one the trace freed and never reallocated is a contradiction. */
bool replay_builder_final_block(struct replay_trace_builder *builder,
                                const struct replay_record *block, struct read_error *error);

/* Places the inferred allocations first (in address order, the order a fresh
 * segment hands addresses out) and completes the trace. The builder is
 * released either way; on failure the trace is destroyed. */
bool replay_builder_finish(struct replay_trace_builder *builder, struct read_error *error);

/* Releases the builder and destroys the partial trace (after a reader error). */
void replay_builder_abandon(struct replay_trace_builder *builder);

#endif

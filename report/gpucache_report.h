/* The reports gpucache writes: statistics as JSON, PyTorch's
 * memory_summary() table, the event trace (our compact format and RMM's
 * replay CSV), PyTorch-format snapshots (JSON and pickle) and SVG charts of
 * memory over time. Writers take plain data (stats, event arrays, a snapshot
 * description) so the library, the command and the tests share them. Every
 * writer writes to a file descriptor with write(2) and reports failure by its
 * return value only: a report must never disturb the program. */
#ifndef GPUCACHE_REPORT_H
#define GPUCACHE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_allocator.h"
#include "gpucache_event_log.h"
#include "gpucache_stacks.h"
#include "gpucache_stats.h"

struct gpucache_config;

/* ---- Files ------------------------------------------------------------- */

/* The one function that creates a file gpucache writes: O_CREAT|O_EXCL|
 * O_NOFOLLOW, so an existing file is never overwritten and a symlink as the
 * final component is never followed (O_EXCL refuses any existing name, a
 * dangling link too; directories above it are resolved as usual). On
 * failure writes one line "gpucache: cannot write the <what> to <path>:
 * <reason>" to stderr with write(2) and returns -1. */
int gpucache_output_create(const char *path, const char *what);

/* gpucache_output_create for `pattern` with "%p" expanded to `pid`;
 * "stderr" (when `stderr_allowed`) gives 2. */
int gpucache_report_open(const char *pattern, long pid, bool stderr_allowed, const char *what);

/* Whether gpucache_report_open(pattern, pid, ...) could create its file now
 * (the name is free, not a symlink, in a writable directory), so a command
 * refuses a bad output path before hours of work; otherwise says why in
 * gpucache_output_create's line and returns false. The open itself still
 * refuses a file created in between. */
bool gpucache_report_path_is_free(const char *pattern, long pid, const char *what);

/* Closes what gpucache_report_open returned (never closes stderr). */
void gpucache_report_close(int fd);

/* `path` with `tag` inserted before its extension ("snap.json", "-2" gives
 * "snap-2.json"; a name without extension gets the tag at the end), for
 * the several files one report setting names. Returns false when `out` is
 * too small. */
bool gpucache_report_tagged_path(const char *path, const char *tag, char *out, size_t size);

/* ---- Statistics report (JSON) ------------------------------------------ */

/* Why a call went to the driver untouched. */
enum gpucache_bypass_reason {
    GPUCACHE_BYPASS_CONFIGURED = 0,  /* passthrough:True */
    GPUCACHE_BYPASS_ASYNC_BACKEND,   /* backend:cudaMallocAsync */
    GPUCACHE_BYPASS_FOREIGN_POINTER, /* a free of memory the cache did not hand out */
    GPUCACHE_BYPASS_EXPLICIT_POOL,   /* an explicit or non-default memory pool */
    GPUCACHE_BYPASS_GRAPH_CAPTURE,   /* an allocation on a capturing stream */
    GPUCACHE_BYPASS_AFTER_FORK,      /* a child of a process that used CUDA */
    GPUCACHE_BYPASS_NO_ALLOCATOR,    /* no allocator for the device (no context, no memory) */
    GPUCACHE_BYPASS_REASON_COUNT
};

/* Counts of bypassed calls by reason; the interposer increments them
 * (atomically: they are read only at report time). */
struct gpucache_bypass_counts {
    uint64_t calls[GPUCACHE_BYPASS_REASON_COUNT];
};

/* The reason's name in the report ("foreign_pointer", ...). */
const char *gpucache_bypass_reason_name(enum gpucache_bypass_reason reason);

struct gpucache_device_report {
    int device;
    struct gpucache_stats stats;
    uint64_t events_recorded; /* trace events held for the device */
    uint64_t events_dropped;  /* lost to the event limit or for want of memory */
};

struct gpucache_report {
    long pid;
    const struct gpucache_config *config;               /* NULL: not written */
    const struct gpucache_bypass_counts *bypass_counts; /* NULL: all zero */
    const struct gpucache_device_report *devices;
    size_t device_count;
};

/* Writes {"pid", "configuration" (gpucache_config_to_json), "passthrough_calls":
 * {reason: count}, "devices": [{"device", "stats": {PyTorch names},
 * "events": {"recorded", "dropped"}}]} and a newline. Returns false on a
 * write error or when host memory is exhausted. */
bool gpucache_report_write_json(int fd, const struct gpucache_report *report);

/* Writes `stats` as one JSON object with PyTorch's flattened, sorted names
 * ("allocated_bytes.all.current", ...) and ours under "gpucache.". Writes at
 * most `capacity` bytes, NUL-terminated; returns the length it needed. */
size_t gpucache_stats_to_json(const struct gpucache_stats *stats, char *out, size_t capacity);

/* Writes the table torch.cuda.memory_summary(device, abbreviated) prints
 * for these statistics, character for character (75 columns between bars,
 * one line per row, each ending in a newline). Writes at most `capacity`
 * bytes, NUL-terminated; returns the length it needed. */
size_t gpucache_stats_to_summary(const struct gpucache_stats *stats, int device, bool abbreviated,
                                 char *out, size_t capacity);

/* ---- Traces ------------------------------------------------------------------ */

/* The compact trace (report/README.md): a header line, one line per event
 * with the time as a delta from the previous event, then the frames of
 * every stack the events name when `stacks` is given (NULL: none). */
bool gpucache_trace_write_compact(int fd, const struct gpucache_event *events, size_t count,
                                  struct gpucache_stack_table *stacks);

/* Reads a compact trace back (NUL-terminated `text`). Returns a new array
 * (caller frees; NULL with *count 0 when empty), or NULL with `error` (at
 * least 128 bytes) holding "line N: <problem>" when the text is not one. */
struct gpucache_event *gpucache_trace_read_compact(const char *text, size_t *count, char *error,
                                                   size_t error_size);

/* RMM's replay log: "Thread,Time,Action,Pointer,Size,Stream", one row per
 * allocation ("allocate"), free request ("free") and OOM ("allocate failure"). */
bool gpucache_trace_write_rmm_csv(int fd, const struct gpucache_event *events, size_t count);

/* ---- Snapshots ------------------------------------------------------------- */

struct gpucache_snapshot_block {
    uint64_t size;
    uint64_t requested_size; /* 0 for inactive blocks */
    uint8_t state;           /* enum gpucache_block_state (gpucache_allocator.h) */
};

/* A segment as PyTorch reports it: a driver allocation, or one contiguous
 * mapped range of an expandable segment. Blocks tile it in address order. */
struct gpucache_snapshot_segment {
    int device;
    uint64_t address;
    uint64_t total_size;
    uint64_t stream;
    bool is_expandable;
    bool large_pool;
    size_t block_count;
    size_t first_block; /* index into gpucache_snapshot.blocks */
};

struct gpucache_snapshot_trace {
    const struct gpucache_event *events; /* oldest first */
    size_t count;
};

struct gpucache_snapshot {
    const struct gpucache_snapshot_segment *segments; /* sorted by address */
    size_t segment_count;
    const struct gpucache_snapshot_block *blocks;
    size_t block_count;
    const struct gpucache_snapshot_trace *device_traces; /* index = device ordinal */
    size_t device_count;
    const struct gpucache_config *config; /* allocator_settings; NULL: omitted */
    const char *settings_text;            /* the configuration string as given, or "" */
    /* The stacks the events' ids name; NULL: every "frames" list is empty. */
    struct gpucache_stack_table *stacks;
};

/* Writes the snapshot as JSON (what current memory_viz reads first). */
bool gpucache_snapshot_write_json(int fd, const struct gpucache_snapshot *snapshot);

/* Writes the snapshot as a pickle of protocol 2 using only opcodes that
 * memory_viz's unpickler knows (no GLOBAL, REDUCE or other calls). */
bool gpucache_snapshot_write_pickle(int fd, const struct gpucache_snapshot *snapshot);

/* A growable snapshot under construction (the allocator's segment visitor
 * fills it). All arrays are owned and freed by gpucache_snapshot_builder_free. */
struct gpucache_snapshot_builder {
    struct gpucache_snapshot snapshot;
    struct gpucache_snapshot_segment *segments;
    size_t segment_capacity;
    struct gpucache_snapshot_block *blocks;
    size_t block_capacity;
    struct gpucache_snapshot_trace *traces;
    int visit_device; /* the device gpucache_snapshot_builder_visit records */
    bool failed;      /* host memory ran out: the snapshot is incomplete */
};

/* Starts an empty snapshot. */
void gpucache_snapshot_builder_init(struct gpucache_snapshot_builder *builder,
                                    const struct gpucache_config *config,
                                    const char *settings_text);

/* Opens a new segment; the blocks added next belong to it. */
void gpucache_snapshot_builder_segment(struct gpucache_snapshot_builder *builder, int device,
                                       uint64_t address, uint64_t stream, bool is_expandable,
                                       bool large_pool);

/* Appends a block to the open segment and grows its total_size. */
void gpucache_snapshot_builder_block(struct gpucache_snapshot_builder *builder, uint64_t size,
                                     uint64_t requested_size, enum gpucache_block_state state);

/* A gpucache_allocator_visit_segments visitor: adds the segment and its
 * blocks. `context` is the builder; the device is builder->visit_device. */
void gpucache_snapshot_builder_visit(void *context, const struct gpucache_segment_info *segment);

/* Sets the trace of `device` (the builder keeps the pointer, not a copy). */
void gpucache_snapshot_builder_trace(struct gpucache_snapshot_builder *builder, int device,
                                     const struct gpucache_event *events, size_t count);

/* Sorts the segments by address and returns the finished snapshot (owned by
 * the builder), or NULL when host memory ran out. */
const struct gpucache_snapshot *gpucache_snapshot_builder_finish(
    struct gpucache_snapshot_builder *builder);

/* Frees the builder's arrays (not the traces it was given). */
void gpucache_snapshot_builder_free(struct gpucache_snapshot_builder *builder);

/* How a snapshot file is encoded. */
enum gpucache_snapshot_encoding { GPUCACHE_SNAPSHOT_JSON, GPUCACHE_SNAPSHOT_PICKLE };

/* Pickle for paths ending in .pickle, .pkl or .pt (what PyTorch users name
 * _dump_snapshot's files), JSON otherwise. */
enum gpucache_snapshot_encoding gpucache_snapshot_encoding_for_path(const char *path);

/* What a snapshot of live allocators is taken from. */
struct gpucache_snapshot_source {
    struct gpucache_allocator *const *allocators; /* index = device; NULL: none */
    size_t device_count;
    struct gpucache_event_log *log; /* the allocators' observer; NULL: empty traces */
    const struct gpucache_config *config;
    const char *settings_text;
    struct gpucache_stack_table *stacks; /* the events' stacks; NULL: none */
};

/* Takes each allocator's segments and its device's events at one moment
 * (under the allocator's lock, so they agree) and writes the snapshot.
 * Returns false when host memory ran out or a write failed. */
bool gpucache_snapshot_write_allocators(int fd, enum gpucache_snapshot_encoding encoding,
                                        const struct gpucache_snapshot_source *source);

/* ---- SVG ------------------------------------------------------------------- */

/* One point of a memory curve. */
struct gpucache_memory_sample {
    double time; /* seconds from the start of the run (or event index) */
    uint64_t allocated;
    uint64_t reserved;
};

struct gpucache_memory_series {
    const char *label; /* the configuration */
    const struct gpucache_memory_sample *samples;
    size_t count;
    /* When not NULL, the run stopped early: a cross marks the place (at
     * `stop_time`, on the reserved curve) with "<label>: <stop_note>". */
    const char *stop_note;
    double stop_time;
};

/* `bytes` with a binary unit and two decimals ("128.00 MiB"; "512 B" below
 * 1 KiB), into `buffer`, which it returns. */
const char *gpucache_format_bytes(uint64_t bytes, char *buffer, size_t size);

/* What an out-of-memory line says. */
struct gpucache_oom_facts {
    uint64_t request; /* the bytes the program asked for */
    struct gpucache_memory_state state;
    const struct gpucache_config *config;
};

/* PyTorch's out-of-memory message as one line (no newline) with the advice
 * that fits the figures; returns the length it needed. */
size_t gpucache_oom_message(const struct gpucache_oom_facts *facts, char *out, size_t size);

/* Derives the allocated and reserved curve of one device's events:
 * allocated is allocated_bytes (the block sizes held, as the statistics
 * count them), moving at alloc and free_requested; reserved moves at segment
 * events. Returns a new array (caller frees) or NULL. Times are seconds from
 * the first event. */
struct gpucache_memory_sample *gpucache_memory_curve(const struct gpucache_event *events,
                                                     size_t count, size_t *sample_count);

/* Writes an SVG chart: reserved (solid) and allocated (dashed) curves of
 * every series on one time axis, with a title, labelled axes and a legend,
 * readable on its own; each curve's <title> is "<label>: reserved, peak
 * <bytes>". `time_label` names the x axis ("seconds", "events"). */
bool gpucache_svg_write(int fd, const char *title, const char *time_label,
                        const struct gpucache_memory_series *series, size_t series_count);

#endif

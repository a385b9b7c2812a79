/* The effective configuration: parsed once from GPUCACHE_ALLOC_CONF (or
 * PyTorch's variables) when the library loads, immutable afterwards. Every
 * other module reads this struct and never the environment. The keys, their
 * values and the errors are described in config/README.md. */
#ifndef GPUCACHE_CONFIG_H
#define GPUCACHE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PyTorch's kRoundUpPowerOfTwoIntervals: bucket i holds sizes in
 * [2^i MiB, 2^(i+1) MiB), sizes below 1 MiB use bucket 0. */
#define GPUCACHE_ROUNDUP_BUCKETS 16

enum gpucache_backend {
    GPUCACHE_BACKEND_NATIVE = 0,
    /* Allocations go to the driver's stream-ordered pool (cuMemAllocAsync). */
    GPUCACHE_BACKEND_CUDA_MALLOC_ASYNC,
};

/* How a block freed with a synchronous cuMemFree becomes reusable. */
enum gpucache_reuse_mode {
    /* Epochs fenced by events on the legacy and live non-blocking streams. */
    GPUCACHE_REUSE_ASYNC = 0,
    /* Every batch of frees is fenced with a context synchronize. */
    GPUCACHE_REUSE_CONSERVATIVE,
    /* Reusable at once: only correct for programs that use one stream. */
    GPUCACHE_REUSE_RELAXED,
};

/* What cuMemGetInfo reports as free. */
enum gpucache_meminfo_mode {
    GPUCACHE_MEMINFO_CACHE_AS_FREE = 0,
    GPUCACHE_MEMINFO_RAW,
};

/* How an expandable segment cuts the pages a growth maps into physical
 * handles: one per growth; doubling (the first as large as the least growth,
 * each next one as large as all before it together); one per page. */
enum gpucache_handle_plan {
    GPUCACHE_HANDLES_GROWTH = 0,
    GPUCACHE_HANDLES_DOUBLING,
    GPUCACHE_HANDLES_PAGE,
};

enum gpucache_reserve_kind {
    GPUCACHE_RESERVE_DEFAULT = 0, /* 9/8 of device memory */
    GPUCACHE_RESERVE_FRACTION,    /* fraction of device memory */
    GPUCACHE_RESERVE_BYTES,       /* absolute size */
};

struct gpucache_reserve {
    enum gpucache_reserve_kind kind;
    double fraction;
    uint64_t bytes;
};

#define GPUCACHE_MAX_RESERVE_CLASSES 16
#define GPUCACHE_RESERVE_CLASS_NAME_MAX 32

struct gpucache_reserve_class {
    char name[GPUCACHE_RESERVE_CLASS_NAME_MAX];
    struct gpucache_reserve reserve;
};

/* Every key, in the order `gpucache config` prints them: one per line of
 * config_keys.def. */
enum gpucache_config_key {
#define GPUCACHE_CONFIG_KEY(id, name, alias, expected, kind, reach, field, default, limits) \
    GPUCACHE_KEY_##id,
#include "config_keys.def"
#undef GPUCACHE_CONFIG_KEY
    GPUCACHE_KEY_COUNT
};

#define GPUCACHE_PATH_MAX 512

struct gpucache_config {
    /* PyTorch keys, sizes already converted to bytes. */
    bool expandable_segments;
    uint64_t max_split_size;          /* UINT64_MAX: unlimited */
    uint64_t max_non_split_rounding;  /* default: large_segment_size */
    uint32_t roundup_power2_divisions[GPUCACHE_ROUNDUP_BUCKETS];
    double garbage_collection_threshold; /* 0: off */
    uint64_t large_segment_size;      /* default 20 MiB */
    struct gpucache_reserve expandable_segments_reserve;
    size_t reserve_class_count;
    struct gpucache_reserve_class reserve_classes[GPUCACHE_MAX_RESERVE_CLASSES];
    double per_process_memory_fraction; /* default 1.0 */
    bool throw_on_cudamalloc_oom;
    bool release_lock_on_cudamalloc;
    enum gpucache_backend backend;
    bool graph_capture_record_stream_reuse;
    bool pinned_use_background_threads;
    bool pinned_use_cuda_host_register;
    uint32_t pinned_num_register_threads;
    uint64_t pinned_reserve_segment_size_mb;
    bool pinned_free_catch_all;

    /* gpucache keys. */
    enum gpucache_reuse_mode reuse;
    bool passthrough;
    enum gpucache_meminfo_mode meminfo;
    bool oom_message; /* one line on stderr for each out of memory; default on */
    /* Frames of the call stack kept per event of a snapshot or trace; 0: none. */
    uint32_t stack_frames;
    /* Large-pool requests of at least this many bytes grow expandable
     * segments of their own, apart from smaller ones; 0: one class. */
    uint64_t expandable_segments_size_class;
    /* A growth moves whole idle handles in before it creates new ones. */
    bool expandable_segments_stitch;
    enum gpucache_handle_plan expandable_segments_handles;
    /* Output paths; empty string = not written. "stderr" is accepted for
     * report and summary. */
    char report_path[GPUCACHE_PATH_MAX];
    char summary_path[GPUCACHE_PATH_MAX];
    char trace_path[GPUCACHE_PATH_MAX];
    char trace_csv_path[GPUCACHE_PATH_MAX];
    char snapshot_path[GPUCACHE_PATH_MAX];
    int snapshot_signal; /* 0: none */

    /* Bookkeeping for `gpucache config` and the report. */
    bool key_from_string[GPUCACHE_KEY_COUNT];
    /* Which variable was read: "GPUCACHE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF",
     * "PYTORCH_ALLOC_CONF", or NULL when none was set. */
    const char *source_variable;
};

/* A parse failure or a warning: the one line the library prints, without
 * the newline. Large enough for the longest "expected" list (every key). */
struct gpucache_config_error {
    char message[1280];
};

/* Fills `config` with the defaults PyTorch uses when no variable is set. */
void gpucache_config_defaults(struct gpucache_config *config);

/* Parses `text` (the variable's value, named `variable` in messages; NULL
 * means GPUCACHE_ALLOC_CONF) on top of the defaults, keeping `config`'s
 * source_variable. Returns 0, or -1 with `config` untouched and `error`
 * holding the full one-line message
 * `gpucache: <variable>: <what> in '<text>' (expected <accepted>)`. */
int gpucache_config_parse(const char *variable, const char *text,
                          struct gpucache_config *config,
                          struct gpucache_config_error *error);

/* Reads the environment in the library's precedence order and parses the
 * chosen variable. A warning about conflicting PyTorch variables goes to
 * `warning` (empty when none). Returns 0 or -1 like gpucache_config_parse. */
int gpucache_config_from_environment(struct gpucache_config *config,
                                     struct gpucache_config_error *error,
                                     struct gpucache_config_error *warning);

/* The process-wide configuration parsed at load; defaults if none was. */
const struct gpucache_config *gpucache_config_current(void);

/* Installs `config` as the process-wide configuration (the library's
 * constructor does this once; tests may too). */
void gpucache_config_set_current(const struct gpucache_config *config);

/* PyTorch's division count for a rounded request of `size` bytes. */
uint32_t gpucache_config_roundup_divisions(const struct gpucache_config *config,
                                           uint64_t size);

/* The key's name as written in the configuration string. */
const char *gpucache_config_key_name(enum gpucache_config_key key);

/* What the key's value may be, as messages say it after "expected". */
const char *gpucache_config_key_expected(enum gpucache_config_key key);

/* True for the keys that say where and when the library writes its files
 * (report, summary, trace, trace_csv, snapshot, snapshot_signal) rather
 * than how it allocates. */
bool gpucache_config_key_is_output(enum gpucache_config_key key);

/* True for keys that are accepted but have no effect in this build. */
bool gpucache_config_key_ignored(const struct gpucache_config *config,
                                 enum gpucache_config_key key);

/* Writes the effective configuration as a JSON object into `out` (at most
 * `capacity` bytes, NUL-terminated). Returns the length it needed. The object
 * is {"variable": name or null, "keys": {"<key>": {"value": ..., "source":
 * "string"|"default"}, ...}, "ignored": ["<key>", ...]}. */
size_t gpucache_config_to_json(const struct gpucache_config *config,
                               char *out, size_t capacity);

/* The library's load-time entry, called by the interposer's constructor:
 * reads the environment, installs the result as the current configuration
 * and returns 0. On a bad string it writes the one error line to stderr with
 * write(2) and calls _exit(2); warnings are written as one line each. Does
 * not allocate. */
int gpucache_config_load_or_exit(void);

/* A one-line warning naming the keys given in the string that have no effect
 * because of another key (backend:cudaMallocAsync, passthrough:True). Returns
 * true and fills `warning` when there is one. */
bool gpucache_config_conflict_warning(const struct gpucache_config *config,
                                      struct gpucache_config_error *warning);

/* Expands an output path pattern: "%p" becomes `pid`, "%%" a single '%'.
 * Writes at most `capacity` bytes (NUL-terminated) and returns the length it
 * needed, as snprintf does. Patterns were validated by the parser. */
size_t gpucache_config_expand_path(const char *pattern, long pid,
                                   char *out, size_t capacity);

/* The snapshot signal's name ("SIGUSR1") or its number for signals without
 * one, written into `out`; "" when `signal_number` is 0. */
void gpucache_config_signal_name(int signal_number, char *out, size_t capacity);

#endif

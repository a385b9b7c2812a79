/* Shared state and helpers of the simulated CUDA driver (libcuda.so.1).
 *
 * Every sim_*.c file includes this header first. It builds cuda.h the way the
 * real driver does (__CUDA_API_VERSION_INTERNAL), so every exported name, the
 * legacy v1 forms and the _ptds/_ptsz forms are declared with the exact
 * signatures of the CUDA 13 headers and a mismatch is a compile error.
 *
 * One header because every sim_*.c file shares the same structures and lock
 * order; split headers would each need the others. */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
/* libbsd's tree.h marks generated static functions __unused, which glibc's
 * cdefs does not define. */
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif
#include <sys/tree.h>

#include "gpusim.h"
#include "ptx/ptx.h"

#define SIM_EXPORT __attribute__((visibility("default")))

/* The driver version reported by cuDriverGetVersion and the ceiling for
 * cuGetProcAddress requests. */
#define SIM_DRIVER_VERSION 13000
#define SIM_MAX_DEVICES 16
/* The driver's large page: large cuMemAlloc regions are aligned to it and
 * charged in whole pages, and it is the default VMM granularity, as on
 * Hopper. */
#define SIM_LARGE_PAGE ((size_t)2 << 20)
/* cuMemAlloc guarantees at least this alignment for every allocation. */
#define SIM_SMALL_ALIGNMENT ((size_t)512)

/* ---- entry-point bookkeeping (sim_entry.c) ------------------------------ */

enum sim_entry_class {
    SIM_ENTRY_PLAIN,
    /* Allocation-type calls: the default target of an injected failure is
     * CUDA_ERROR_OUT_OF_MEMORY and `rate:` rules apply to them. */
    SIM_ENTRY_ALLOCATION,
};

/* One per exported function, created statically at its call site. */
struct sim_entry_point {
    const char *name;
    enum sim_entry_class entry_class;
    atomic_ullong calls;
    atomic_bool registered;
    struct sim_entry_point *next_registered;
};

/* The exported entry point the calling thread is in and where it was called
 * from, kept so that a race report can name the program's call site. */
struct sim_call_site {
    const char *entry_name;
    const void *return_address;
};
extern _Thread_local struct sim_call_site sim_call_site;

/* Counts the call, checks that cuInit ran and applies GPUSIM_FAIL;
 * `return_address` is the exported function's caller. */
CUresult sim_enter(struct sim_entry_point *entry, bool needs_init, const void *return_address);

#define SIM_ENTRY_(exported_name, entry_class_value, needs_init)                                    \
    do {                                                                                \
        static struct sim_entry_point entry_point_ = {.name = exported_name,            \
                                                      .entry_class = entry_class_value};            \
        CUresult entry_result_ =                                                        \
            sim_enter(&entry_point_, needs_init, __builtin_return_address(0));          \
        if (entry_result_ != CUDA_SUCCESS)                                              \
            return entry_result_;                                                       \
    } while (0)

/* Start of every exported function that requires cuInit. */
#define SIM_ENTER(name) SIM_ENTRY_(name, SIM_ENTRY_PLAIN, true)
#define SIM_ENTER_ALLOCATION(name) SIM_ENTRY_(name, SIM_ENTRY_ALLOCATION, true)
/* For the few entry points that work before cuInit. */
#define SIM_ENTER_BEFORE_INIT(name) SIM_ENTRY_(name, SIM_ENTRY_PLAIN, false)

/* Defines the exported entry point `exported_name` with `parameters` (in
 * parentheses) that enters as SIM_ENTER does and returns `call`. The
 * versioned (_v2, _v3) and per-thread-stream (_ptds, _ptsz) variants of an
 * entry point share one implementation and differ only in the arguments they
 * pass it; each still counts its calls and takes injected failures under its
 * own name. */
#define SIM_EXPORT_VARIANT(exported_name, parameters, call)                                    \
    SIM_EXPORT CUresult exported_name parameters                                               \
    {                                                                                          \
        SIM_ENTER(#exported_name);                                                             \
        return call;                                                                           \
    }
/* Two exported names of an entry point whose ABI did not change between
 * them (a _v2 kept for binary compatibility): same parameters, same call. */
#define SIM_EXPORT_SAME_VARIANTS(first_name, second_name, parameters, call)                    \
    SIM_EXPORT_VARIANT(first_name, parameters, call)                                           \
    SIM_EXPORT_VARIANT(second_name, parameters, call)
/* The same for an allocation-type entry point (see SIM_ENTER_ALLOCATION). */
#define SIM_EXPORT_ALLOCATION_VARIANT(exported_name, parameters, call)                         \
    SIM_EXPORT CUresult exported_name parameters                                               \
    {                                                                                          \
        SIM_ENTER_ALLOCATION(#exported_name);                                                  \
        return call;                                                                           \
    }

/* All entry points called so far (for the stats file). */
struct sim_entry_point *sim_registered_entry_points(void);

/* True when `name` is a base or exported name of an implemented entry
 * point (sim_proc_address.c). */
bool sim_is_entry_point_name(const char *name);

/* ---- environment (sim_environment.c) ------------------------------------ */

struct sim_fail_rule {
    char name[64];
    unsigned long long nth;
    bool and_later;
    CUresult error; /* 0: the entry's default */
    unsigned long long delay_microseconds; /* GPUSIM_DELAY rules only */
    atomic_ullong seen;
};

#define SIM_MAX_FAIL_RULES 32

enum sim_racecheck_mode {
    SIM_RACECHECK_OFF,
    SIM_RACECHECK_REPORT, /* report every race, exit with status 66 */
    SIM_RACECHECK_ABORT,  /* report the first race and abort() */
};

struct sim_settings {
    int device_count;
    size_t memory_per_device;
    size_t granularity; /* VMM allocation granularity */
    struct sim_fail_rule fail_rules[SIM_MAX_FAIL_RULES];
    int fail_rule_count;
    struct sim_fail_rule delay_rules[SIM_MAX_FAIL_RULES];
    int delay_rule_count;
    double fail_rate;
    unsigned long long fail_seed;
    char stats_path[4096];
    enum sim_racecheck_mode racecheck;
};

/* Parses GPUSIM_*; on a bad value prints one line and exits with status 2. */
void sim_read_environment(struct sim_settings *settings);

/* Error code for a GPUSIM_FAIL name ("oom", "invalid", 700, CUDA_ERROR_*). */
bool sim_parse_error_name(const char *text, CUresult *error);
/* The CUDA_ERROR_* name of `error`, for messages. */
const char *sim_error_name(CUresult error);

/* ---- core objects ------------------------------------------------------- */

/* A vector clock of the race detector: for each clock slot, the last
 * operation of the actor (the host or a stream) holding that slot known to
 * happen before. Missing or stale entries mean nothing known. */
struct sim_clock_entry;
struct sim_clock {
    struct sim_clock_entry *entries;
    unsigned length;
};

struct sim_context;
struct sim_stream;
struct sim_event;
struct sim_pool;
struct sim_capture;

struct sim_device {
    int ordinal;
    size_t capacity;
    size_t physical_bytes;      /* under sim.lock */
    size_t peak_physical_bytes; /* under sim.lock */
    struct sim_context *primary;
    /* One sparse memfd holds every non-exportable cuMemCreate allocation of
     * the device, each at its own offset, so thousands of pages do not need
     * thousands of descriptors. -1 until first used; under sim.lock. */
    int physical_file;
    unsigned long long physical_file_end;
    struct sim_pool *default_pool;
    struct sim_pool *current_pool;
};

enum sim_handle_kind {
    SIM_HANDLE_CONTEXT = 1,
    SIM_HANDLE_STREAM,
    SIM_HANDLE_EVENT,
    SIM_HANDLE_POOL,
    SIM_HANDLE_PHYSICAL,
    SIM_HANDLE_GRAPH,
    SIM_HANDLE_GRAPH_EXEC,
    SIM_HANDLE_MODULE,   /* CUmodule, and CUlibrary (a module with no context of its own) */
    SIM_HANDLE_FUNCTION, /* CUfunction, and CUkernel (the same object) */
    SIM_HANDLE_LINK,     /* CUlinkState */
};

/* Every live object handed out to the program is registered, so a stale or
 * foreign handle is reported (CUDA_ERROR_INVALID_HANDLE/CONTEXT) instead of
 * dereferenced. */
struct sim_handle {
    RB_ENTRY(sim_handle) link;
    enum sim_handle_kind kind;
};

void sim_handle_register(struct sim_handle *handle, enum sim_handle_kind kind);
void sim_handle_unregister(struct sim_handle *handle);
/* True when `pointer` is a live handle of `kind`; call under sim.lock. */
bool sim_handle_is_live(const void *pointer, enum sim_handle_kind kind);

struct sim_context {
    struct sim_handle handle; /* first member: CUcontext points here */
    struct sim_device *device;
    bool primary;
    bool active;
    unsigned retain_count; /* primary: cuDevicePrimaryCtxRetain references */
    unsigned flags;
    unsigned long long id;
    size_t limits[CU_LIMIT_MAX];
    CUfunc_cache cache_config;
    unsigned long long peer_devices; /* bit per device with peer access */
    struct sim_stream *legacy_stream;
    LIST_HEAD(, sim_stream) streams; /* streams with a worker, incl. legacy and per-thread */
    /* Taken while a work item is queued, so that the implicit waits between
     * the legacy stream and blocking streams see a consistent order. */
    pthread_mutex_t submit_lock;
    /* Race detector: the final clocks of the streams that have left
     * `streams`. Their blocking ones' work is still ordered before later
     * legacy-stream work, and a context synchronize still observes all. */
    struct sim_clock race_retired_blocking;
    struct sim_clock race_retired_all;
    /* The fault of a kernel (CUDA_ERROR_ILLEGAL_ADDRESS, ...) that every
     * later call in the context returns until it is reset; 0 when none. */
    atomic_int sticky_error;
};

struct sim_state {
    pthread_mutex_t lock;
    atomic_bool initialized;
    /* Set in the child of a fork taken after cuInit: the driver's threads
     * and state belong to the parent, so the child cannot use CUDA. */
    atomic_bool forked_after_init;
    struct sim_settings settings;
    int device_count;
    struct sim_device devices[SIM_MAX_DEVICES];
    atomic_ullong synchronizations;
    atomic_ullong next_id;
};

extern struct sim_state sim;

void sim_lock(void);
void sim_unlock(void);
unsigned long long sim_next_id(void);

/* ---- contexts (sim_context.c) ------------------------------------------- */

/* The calling thread's current context, or NULL. */
struct sim_context *sim_current_context(void);
/* Current context, or CUDA_ERROR_INVALID_CONTEXT. */
CUresult sim_require_context(struct sim_context **context);
/* Validates a device ordinal. */
CUresult sim_device_lookup(CUdevice ordinal, struct sim_device **device);
/* Waits until every stream of the context has drained. `host_observes`:
 * the wait is one CUDA defines (context synchronize, cuMemFree), so the
 * race detector orders later host submissions after that work. */
void sim_context_drain(struct sim_context *context, bool host_observes);

/* ---- device memory accounting (sim_memory.c) ---------------------------- */

/* Charges `bytes` of physical memory to the device; false when it would
 * exceed the capacity. Under sim.lock. */
bool sim_physical_charge(struct sim_device *device, size_t bytes);
void sim_physical_release(struct sim_device *device, size_t bytes);

enum sim_range_kind {
    SIM_RANGE_DEVICE,      /* cuMemAlloc, cuMemAllocPitch */
    SIM_RANGE_POOL,        /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    SIM_RANGE_HOST,        /* cuMemHostAlloc, cuMemAllocHost */
    SIM_RANGE_MANAGED,     /* cuMemAllocManaged */
    SIM_RANGE_RESERVATION, /* cuMemAddressReserve */
    SIM_RANGE_IPC_IMPORT,  /* cuIpcOpenMemHandle */
    SIM_RANGE_CAPTURED,    /* async allocation recorded into a graph */
};

struct sim_vmm_mapping;

/* An address range the driver handed out. */
struct sim_range {
    RB_ENTRY(sim_range) link;
    uintptr_t base;
    size_t size;
    void *mapping;       /* what munmap releases (includes guard pages) */
    size_t mapping_size;
    size_t physical;     /* bytes charged to the device */
    enum sim_range_kind kind;
    struct sim_device *device;
    struct sim_context *context;
    struct sim_pool *pool;
    struct sim_graph *graph; /* SIM_RANGE_CAPTURED: the graph that owns it */
    /* SIM_RANGE_CAPTURED: the instantiation whose memory backs it now;
     * NULL while it is only reserved. */
    struct sim_graph_exec *graph_exec;
    unsigned host_flags;
    unsigned long long buffer_id;
    int shared_fd;       /* memfd backing, for IPC export; -1 if anonymous */
    bool free_pending;   /* cuMemFreeAsync queued */
    unsigned ipc_open_count;
    LIST_HEAD(, sim_vmm_mapping) vmm_mappings; /* reservations only */
};

/* A zeroed range of `kind` owned by `context` (may be NULL) on `device`,
 * with a fresh buffer id and no memfd; NULL when out of memory. Not yet
 * registered. */
struct sim_range *sim_range_new(enum sim_range_kind kind, struct sim_context *context,
                                struct sim_device *device);

/* Registry of ranges; call under sim.lock. */
void sim_range_insert(struct sim_range *range);
/* The range containing `address`, or NULL. */
struct sim_range *sim_range_find(uintptr_t address);
/* Applies `visit` to every range (stops when it returns false). */
void sim_range_foreach(bool (*visit)(struct sim_range *, void *), void *argument);

/* Allocates device memory of the current kind and registers it; charges the
 * capacity. Under sim.lock. */
CUresult sim_device_allocate(struct sim_context *context, size_t size, enum sim_range_kind kind,
                             struct sim_range **out);
/* The range that starts at `address` and satisfies `accepts`, once the work
 * queued in its context (which may still use it) has finished. Returns it
 * with sim.lock held, or NULL without the lock when there is none. */
struct sim_range *sim_range_claim_idle(uintptr_t address, bool (*accepts)(const struct sim_range *));
/* Unregisters, unmaps and uncharges a range. Under sim.lock. */
void sim_range_destroy(struct sim_range *range);
/* Frees all device allocations that belong to a context. Under sim.lock. */
void sim_free_context_memory(struct sim_context *context);
/* Checks that [address, address+size) lies inside memory the driver knows
 * (device, host, managed or a mapped VMM range) and that the device of the
 * calling thread's current context may touch it: a VMM mapping grants
 * access per device, and a copy or memset issued in a device's context
 * without access fails with CUDA_ERROR_INVALID_VALUE where a GPU would
 * fault. */
bool sim_address_is_device_accessible(uintptr_t address, size_t size);

/* ---- VMM (sim_vmm.c) ---------------------------------------------------- */

/* The mapping of a reservation containing `address`; CUDA_ERROR_NOT_FOUND if
 * that part is not mapped. Under sim.lock. */
CUresult sim_vmm_mapping_range(struct sim_range *reservation, uintptr_t address, uintptr_t *base,
                               size_t *size);
/* True when [address, address+size) is mapped with access granted. Under
 * sim.lock. */
bool sim_vmm_is_accessible(uintptr_t address, size_t size, struct sim_device **device);
/* The same for the device with ordinal `accessor` (negative: any device):
 * every byte mapped with access granted to that device. Under sim.lock. */
bool sim_vmm_is_accessible_by(uintptr_t address, size_t size, int accessor,
                              struct sim_device **device);

/* ---- streams (sim_stream.c) --------------------------------------------- */

enum sim_work_kind {
    SIM_WORK_COPY,
    SIM_WORK_SET,
    SIM_WORK_HOST_FUNCTION,
    SIM_WORK_STREAM_CALLBACK,
    SIM_WORK_EVENT_RECORD,
    SIM_WORK_WAIT,
    SIM_WORK_FREE,
    SIM_WORK_MARKER,
    SIM_WORK_WAIT_VALUE,
    SIM_WORK_WRITE_VALUE,
    SIM_WORK_KERNEL,
};

struct sim_work {
    TAILQ_ENTRY(sim_work) link;
    enum sim_work_kind kind;
    unsigned long long sequence;
    union {
        struct {
            char *destination;
            const char *source;
            size_t bytes;              /* per row */
            size_t height;             /* rows */
            size_t destination_pitch;  /* bytes between rows */
            size_t source_pitch;
        } copy;
        struct {
            uintptr_t destination;
            unsigned value;
            unsigned element_size;
            size_t width;  /* elements per row */
            size_t height; /* rows */
            size_t pitch;  /* bytes between rows */
        } set;
        struct {
            CUhostFn function;
            void *user_data;
        } host;
        struct {
            CUstreamCallback function;
            void *user_data;
        } callback;
        struct {
            struct sim_event *event;
            unsigned long long generation;
        } record;
        struct {
            struct sim_stream *stream;
            unsigned long long sequence;
            /* cuStreamWaitEvent: the event's clock for the race detector;
             * NULL for the legacy stream's implicit waits. */
            const struct sim_clock *happens_after;
        } wait;
        struct {
            struct sim_range *range;
        } free;
        struct {
            uintptr_t address;
            uint64_t value;
            unsigned width; /* 4 or 8 bytes */
            unsigned flags; /* CU_STREAM_WAIT_VALUE_* for waits */
        } memory_value;
        struct {
            struct sim_kernel_launch *launch; /* owned by the item */
        } kernel;
    } u;
};

struct sim_stream {
    struct sim_handle handle; /* first member: CUstream points here */
    struct sim_context *context;
    unsigned flags;
    int priority;
    bool legacy;
    bool per_thread;
    bool closed; /* destroyed by the program; under sim.lock */
    unsigned long long id;
    unsigned race_actor; /* the race detector's stable index for it */
    atomic_int references;
    /* In the context's list until its worker has finished, so that context
     * synchronization also waits for destroyed streams' work. */
    LIST_ENTRY(sim_stream) context_link;

    pthread_mutex_t mutex;
    pthread_cond_t changed;
    TAILQ_HEAD(, sim_work) queue;
    unsigned long long submitted; /* sequence of the last queued item */
    unsigned long long completed; /* sequence of the last finished item */
    bool closing;

    struct sim_capture *capture; /* under sim.lock */
};

/* Resolves a CUstream argument (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
 * or a handle) for the current context. `per_thread_default` says whether NULL
 * means the per-thread stream (_ptsz/_ptds entry points). */
CUresult sim_stream_resolve(CUstream handle, bool per_thread_default, struct sim_stream **stream);
/* Creates a stream in a context; the legacy and per-thread streams too. */
CUresult sim_stream_create(struct sim_context *context, unsigned flags, int priority,
                           bool legacy, bool per_thread, struct sim_stream **out);
/* Queues a work item (copied) in stream order, adding the implicit waits of
 * the legacy default stream. Takes ownership of nothing. */
CUresult sim_stream_submit(struct sim_stream *stream, const struct sim_work *work,
                           unsigned long long *sequence);
/* sim_stream_submit that also copies the item's race-detector clock into
 * `observed` (when detecting), for a host that then waits for the item. */
CUresult sim_stream_submit_observed(struct sim_stream *stream, const struct sim_work *work,
                                    unsigned long long *sequence, struct sim_clock *observed);
/* Blocks until the stream has completed `sequence`. */
void sim_stream_wait_for(struct sim_stream *stream, unsigned long long sequence);
/* True when the stream has completed `sequence`. */
bool sim_stream_reached(struct sim_stream *stream, unsigned long long sequence);
/* Blocks until all work queued so far on the stream is done;
 * `host_observes` as for sim_context_drain. */
void sim_stream_drain(struct sim_stream *stream, bool host_observes);
void sim_stream_retain(struct sim_stream *stream);
void sim_stream_release(struct sim_stream *stream);
/* Closes a stream: queued work still runs, then its worker leaves the
 * context's list and it is freed. Under sim.lock. */
void sim_stream_close(struct sim_stream *stream);
/* Queues work and, for the synchronous forms, waits for it. */
CUresult sim_stream_run(CUstream handle, bool per_thread_default, const struct sim_work *work,
                        bool synchronous);

/* ---- stream memory operations (sim_stream_values.c) --------------------- */

/* Worker side of cuStreamWaitValue*: returns once the condition holds. */
void sim_wait_value(const struct sim_work *work);
/* Worker side of cuStreamWriteValue*. */
void sim_write_value(const struct sim_work *work);

/* ---- events (sim_event.c) ----------------------------------------------- */

struct sim_event {
    struct sim_handle handle;
    struct sim_context *context;
    unsigned flags;
    atomic_int references;
    pthread_mutex_t mutex;
    /* The last record: complete once `stream` reaches `sequence`. */
    struct sim_stream *stream;
    unsigned long long sequence;
    unsigned long long generation;
    struct timespec timestamp;
    bool timestamp_valid;
    /* Id of the capture sequence the last record went into; 0 when the
     * last record was a real one. */
    unsigned long long capture_id;
    /* The recording stream's clock at the last record (race detector). */
    struct sim_clock race_clock;
};

/* Worker side of an event record. */
void sim_event_complete(struct sim_event *event, unsigned long long generation);
void sim_event_release(struct sim_event *event);
/* Destroys every event of a context. Under sim.lock. */
void sim_events_teardown(struct sim_context *context);

/* ---- stream capture (sim_capture.c) ------------------------------------- */

struct sim_capture {
    unsigned long long id;
    CUstreamCaptureMode mode;
    CUstreamCaptureStatus status;
    struct sim_stream *origin;
    pthread_t thread;
    struct sim_graph *graph;
    LIST_ENTRY(sim_capture) link;
};

/* One recorded operation: a copy of the work item its stream was given.
 * A kernel node owns its launch, which each graph launch clones. */
struct sim_graph_node {
    struct sim_work work;
};

/* A captured graph: its nodes in capture order. Capture order is a
 * topological order of the real dependency graph, which is all a replay
 * needs. */
struct sim_graph {
    struct sim_handle handle;
    struct sim_graph_node **nodes;
    size_t node_count;
    size_t node_capacity;
    bool capturing;                    /* under sim.lock */
    struct sim_graph_exec *memory_exec; /* the one instantiation that maps its allocations */
};

/* An instantiated graph (CUgraphExec): its own copies of the nodes, so the
 * graph can change or go away while it stays launchable. */
struct sim_graph_exec {
    struct sim_handle handle;
    struct sim_context *context;
    struct sim_graph_node **nodes;
    size_t node_count;
    bool holds_memory;         /* maps captured allocations */
    struct sim_graph *graph;   /* holds_memory: their graph, NULL once destroyed */
};

/* Frees a graph, and the captured allocations no instantiation maps. Under
 * sim.lock. */
void sim_graph_destroy(struct sim_graph *graph);

/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the calling thread may not make a
 * potentially unsafe call now (and invalidates the capture that forbids it). */
CUresult sim_capture_check_unsafe_call(void);
/* Records an async allocation into the capture's graph. Under sim.lock. */
CUresult sim_capture_allocate(struct sim_stream *stream, size_t size, CUdeviceptr *address);
/* Invalidates the capture of a stream (an illegal call was made). */
void sim_capture_invalidate(struct sim_capture *capture);
/* Ends a capture without producing a graph (its stream is going away).
 * Under sim.lock. */
void sim_capture_abandon(struct sim_capture *capture);
/* Turns a work item submitted to a capturing stream into a node of the
 * capture's graph, taking over what it owns. Under sim.lock. */
CUresult sim_capture_record(struct sim_capture *capture, const struct sim_work *work);
/* True when a captured allocation may be named by work now: while its graph
 * is being captured, or while an instantiation maps its memory. Under
 * sim.lock. */
bool sim_captured_range_usable(const struct sim_range *range);
/* The active capture with this id, or NULL. Under sim.lock. */
struct sim_capture *sim_capture_find(unsigned long long id);
/* Ends every capture of a context (teardown). Under sim.lock. */
void sim_capture_teardown(struct sim_context *context);

/* ---- pools (sim_pool.c) ------------------------------------------------- */

struct sim_pool {
    struct sim_handle handle;
    struct sim_device *device;
    bool is_default;
    bool destroyed;       /* freed once its last allocation is */
    size_t allocation_count;
    int reuse_flags[3];   /* the three CU_MEMPOOL_ATTR_REUSE_* switches */
    CUmemAccess_flags access[SIM_MAX_DEVICES]; /* per device; owner is RW */
    size_t reserved_current, reserved_high;
    size_t used_current, used_high;
    unsigned long long release_threshold;
};

/* Creates the default pool of a device. */
struct sim_pool *sim_pool_create_default(struct sim_device *device);
/* Returns a pool allocation to the device (worker side of cuMemFreeAsync).
 * Under sim.lock. */
void sim_pool_free_now(struct sim_range *range);

/* ---- stream race detection (sim_racecheck.c) ---------------------------- */

/* GPUSIM_RACECHECK: happens-before race detection over device memory with
 * vector clocks, from CUDA's ordering rules only. Clocks advance when work
 * is queued, in host program order, never in the workers. All host threads
 * share one clock: the program's own host synchronization is invisible to
 * the device. Lock order: sim.lock, then the race lock, then stream
 * mutexes; the functions that do not say "under the race lock" take it. */

static inline bool sim_racecheck_enabled(void)
{
    return sim.settings.racecheck != SIM_RACECHECK_OFF;
}

enum sim_access_mode {
    SIM_ACCESS_READ,
    SIM_ACCESS_WRITE,
    /* Stream memory operations (cuStreamWaitValue/WriteValue) synchronize
     * through memory: like atomics, they do not race with each other. */
    SIM_ACCESS_SYNC_READ,
    SIM_ACCESS_SYNC_WRITE,
};

/* At the first cuInit, after the environment: the host actor and the exit
 * handler that turns races into exit status 66. */
void sim_racecheck_initialize(void);
void sim_racecheck_lock(void);
void sim_racecheck_unlock(void);
/* Gives a new stream its never-reused actor. Under sim.lock. */
void sim_racecheck_stream_created(struct sim_stream *stream);
/* A stream the program destroyed (or whose thread ended). Under sim.lock. */
void sim_racecheck_stream_closed(struct sim_stream *stream);
/* A closed stream's worker has left the context's list: its clock moves
 * into the context's retired clocks, so memory stays proportional to the
 * live streams. Under sim.lock. */
void sim_racecheck_stream_finished(struct sim_stream *stream);
/* The host has waited for all of the context's work: it learns the clocks
 * of the streams that have finished. */
void sim_racecheck_host_observes_retired(struct sim_context *context);
/* Under sim.lock and the race lock, before `work` is queued on `stream`:
 * advances the stream's clock, applies CUDA's ordering rules (host, legacy
 * stream, event waits) and records the item's device accesses. */
void sim_racecheck_order_submission(struct sim_stream *stream, const struct sim_work *work);
/* Records one access by the operation just ordered on `stream` (NULL: the
 * host) and reports a conflict with an unordered earlier access. Call it
 * from sim_racecheck_order_submission's item kinds (a kernel launch would
 * list its ranges there); under sim.lock and the race lock. Host memory is
 * ignored. */
void sim_racecheck_record_access(uintptr_t address, size_t bytes, enum sim_access_mode mode,
                                 struct sim_stream *stream, const char *operation,
                                 const void *return_address);
/* Copies the stream's current clock into `into`. Under the race lock. */
void sim_racecheck_copy_stream_clock(struct sim_stream *stream, struct sim_clock *into);
/* Copies the event's last-record clock into `into`. */
void sim_racecheck_copy_event_clock(struct sim_event *event, struct sim_clock *into);
/* The host has seen work complete whose clock is `observed`. */
void sim_racecheck_host_observes(const struct sim_clock *observed);
/* The same for everything queued on `stream`. Under the race lock. */
void sim_racecheck_host_observes_stream(struct sim_stream *stream);
/* Memory that starts fresh or stops existing: drops what was recorded. */
void sim_racecheck_forget(uintptr_t address, size_t bytes);
/* Memory the host is taking away (cuMemUnmap, cuMemAddressFree): reports an
 * access not yet ordered before the host ("unmapped while in use"), then
 * forgets the range. */
void sim_racecheck_release(uintptr_t address, size_t bytes);
/* The context's streams have all finished and its clocks go. Under
 * sim.lock. */
void sim_racecheck_context_reset(struct sim_context *context);
void sim_clock_free(struct sim_clock *clock);
/* Races reported so far. */
unsigned long long sim_racecheck_race_count(void);
/* A queued kernel in the detector: what it touches arrives while it runs. */
struct sim_race_operation;
/* The ptx_access_observer of a watched launch (`context` is its
 * sim_race_operation): notes one access of a running kernel. */
void sim_racecheck_kernel_access(void *context, unsigned worker, uintptr_t address, size_t size,
                                 enum ptx_access access);
/* The watched kernel has run (or never will): its accesses are checked and
 * recorded, with everything queued after it up to the next unfinished
 * kernel. Takes sim.lock and the race lock. */
void sim_racecheck_kernel_finished(struct sim_race_operation *operation);

/* ---- copies (sim_copy.c) ------------------------------------------------ */

/* ---- modules and kernels (sim_module.c, sim_launch.c) -------------------- */

struct ptx_module;
struct ptx_function;
struct sim_kernel_launch;
struct sim_function;

/* A loaded PTX module (CUmodule) or library (CUlibrary). */
struct sim_module {
    struct sim_handle handle;
    LIST_ENTRY(sim_module) link; /* all loaded modules, under sim.lock */
    struct sim_context *context;
    struct ptx_module *ptx;
    struct sim_function *functions; /* one per kernel */
    size_t function_count;
    struct sim_range **variables;   /* device memory of .global/.const variables */
    size_t variable_count;
    bool library;
};

/* A kernel of a module: CUfunction and CUkernel are both this object. */
struct sim_function {
    struct sim_handle handle;
    struct sim_module *module;
    const struct ptx_function *ptx;
    int max_dynamic_shared_bytes; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

struct ptx_source;

/* The PTX text an image holds for the device: the image itself (PTX), or
 * the fat binary entry module loading picks; *owned_text (free() it) is set
 * when the text was decompressed. Says on stderr (and in the JIT error log)
 * why an image holds no usable PTX. */
CUresult sim_image_ptx(const void *image, size_t image_size, unsigned int option_count, CUjit_option *options,
                       void **values, char **owned_text, const char **text, size_t *length);

/* Writes `message` to the CU_JIT_ERROR_LOG_BUFFER among `options`, if any. */
void sim_write_jit_error_log(unsigned int option_count, CUjit_option *options, void **values,
                             const char *message);

/* The result a failed ptx_module_link() is reported with, from its
 * enum ptx_link_failure and error line. */
CUresult sim_link_failure_result(int failure, const char *error);

/* Reads a whole file into a malloc'd NUL-terminated buffer. */
CUresult sim_read_file(const char *path, char **contents, size_t *size);

/* cuLinkComplete's image (sim_link.c): true when `image` is one. */
bool sim_link_image_is(const void *image);

/* The PTX texts of a cuLinkComplete image, pointing into it; *sources is
 * malloc'd. CUDA_ERROR_INVALID_IMAGE when the image is damaged. */
CUresult sim_link_image_sources(const void *image, size_t image_size, struct ptx_source **sources,
                                size_t *count);

/* Unloads every module of a context that is being destroyed or reset (its
 * work has drained): their variables went with the context's memory. */
void sim_modules_teardown(struct sim_context *context);

/* The live kernel behind a CUfunction or CUkernel, or NULL. Under sim.lock. */
struct sim_function *sim_function_lookup(const void *handle);

/* Worker side of a kernel launch: runs the grid, records a fault as the
 * context's sticky error, and frees the launch. */
void sim_kernel_run(struct sim_kernel_launch *launch);
/* Frees a launch that will not run (its stream was capturing), or has run;
 * tells the race detector it is over if it was watching. */
void sim_kernel_discard(struct sim_kernel_launch *launch);
/* An independent copy of a launch (its own parameter buffer, no race
 * observer), for graphs that launch one recorded kernel many times; NULL
 * when out of memory. */
struct sim_kernel_launch *sim_kernel_clone(const struct sim_kernel_launch *launch);
/* The kernel's name, for reports. */
const char *sim_kernel_name(const struct sim_kernel_launch *launch);
/* Reports the launch's global accesses to the race detector's `operation`.
 * Before it is queued. */
void sim_kernel_observe(struct sim_kernel_launch *launch, struct sim_race_operation *operation);

/* The context's sticky kernel fault, or `result` when there is none: for the
 * calls that wait for device work and must report what happened during it. */
CUresult sim_sticky_error_or(struct sim_context *context, CUresult result);
/* True once any kernel has faulted in this process (a cheap first test). */
extern atomic_bool sim_any_sticky_error;


#endif

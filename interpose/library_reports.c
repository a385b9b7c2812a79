/* Reports of libgpucache.so. Files are written at exit (from the destructor
 * in exit_reports.c; its only driver calls are the fences and queries that
 * settle pending frees, whose failure when the context is gone leaves them
 * pending), at an OOM and at the first hook after the snapshot signal. The
 * signal handler (signal_hooks.c) only sets a flag: writing a snapshot takes
 * locks and allocates. */
#include "library_reports.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_registry.h"
#include "gpucache_config.h"
#include "library_lifecycle.h"
#include "log.h"

/* At most this many OOM snapshots per process: a program that retries
 * allocations in a loop must not fill the disk. */
#define MAX_OOM_SNAPSHOTS 4
/* How long the exit reports wait for the work behind pending frees: long
 * enough for an idle stream to answer a fence, short against any exit. */
#define EXIT_SETTLE_PATIENCE_NS (100 * 1000 * 1000)

/* The newest 16 Mi events (640 MiB) are kept: a long run must not exhaust
 * host memory for its trace. Dropping the oldest keeps snapshots consistent
 * (the viewer replays backwards from the final state), and the replay infers
 * the allocations whose start was dropped. The report counts what was lost. */
#define EVENT_LOG_LIMIT ((size_t)16 << 20)

static struct gpucache_event_log *event_log;
static pthread_once_t event_log_once = PTHREAD_ONCE_INIT;
/* The call stacks the events name, and how deep they are taken (0: none);
 * both set once, with the log. */
static struct gpucache_stack_table *stack_table;
static size_t stack_depth;
static struct gpucache_bypass_counts bypass_counts;
/* Set by the signal handler (a lock-free atomic store is async-signal-safe),
 * taken by exactly one hook. */
int library_reports_snapshot_pending;
static unsigned oom_snapshots;
static unsigned signal_snapshots;

static bool events_wanted(const struct gpucache_config *config)
{
    return config->trace_path[0] || config->trace_csv_path[0] || config->snapshot_path[0];
}

void library_reports_snapshot_requested(void)
{
    __atomic_store_n(&library_reports_snapshot_pending, 1, __ATOMIC_RELAXED);
}

static void create_event_log(void)
{
    const struct gpucache_config *config = library_config();
    if (!events_wanted(config))
        return;
    size_t depth = config->stack_frames;
    if (depth > 0 && (stack_table = gpucache_stack_table_create()) != NULL) {
        gpucache_stack_capture_prepare((const void *)create_event_log);
        stack_depth = depth;
    }
    __atomic_store_n(&event_log, gpucache_event_log_create(EVENT_LOG_LIMIT), __ATOMIC_RELEASE);
}

/* The actions a program's own call causes, whose stack says who asked. */
static bool carries_stack(enum gpucache_event_action action)
{
    return action == GPUCACHE_EVENT_ALLOC || action == GPUCACHE_EVENT_FREE_REQUESTED ||
           action == GPUCACHE_EVENT_SEGMENT_ALLOC || action == GPUCACHE_EVENT_SEGMENT_MAP ||
           action == GPUCACHE_EVENT_OOM;
}

/* The observer: the event, with the program's stack when stacks are on. */
static void record_event(void *log, const struct gpucache_event *event)
{
    if (stack_depth == 0 || !carries_stack((enum gpucache_event_action)event->action)) {
        gpucache_event_log_append(log, event);
        return;
    }
    struct gpucache_event with_stack = *event;
    uintptr_t frames[GPUCACHE_STACK_MAX_FRAMES];
    size_t depth = gpucache_stack_capture(frames, stack_depth);
    with_stack.stack = gpucache_stack_table_intern(stack_table, frames, depth);
    gpucache_event_log_append(log, &with_stack);
}

static struct gpucache_event_log *log_if_wanted(void)
{
    pthread_once(&event_log_once, create_event_log);
    return __atomic_load_n(&event_log, __ATOMIC_ACQUIRE);
}

/* The log if one was made (reports read it without making one). */
static struct gpucache_event_log *existing_log(void)
{
    return __atomic_load_n(&event_log, __ATOMIC_ACQUIRE);
}

void library_reports_allocator_created(struct gpucache_allocator *allocator)
{
    struct gpucache_event_log *log = log_if_wanted();
    if (log)
        gpucache_allocator_set_observer(allocator, record_event, log);
}

void library_reports_count_bypass(enum gpucache_bypass_reason reason)
{
    __atomic_add_fetch(&bypass_counts.calls[reason], 1, __ATOMIC_RELAXED);
}

void library_reports_bypassed_allocation(int device, uint64_t address, size_t size,
                                         uint64_t stream)
{
    struct gpucache_event_log *log = log_if_wanted();
    if (!log)
        return;
    gpucache_event_log_record(log, GPUCACHE_EVENT_SEGMENT_ALLOC, device, address, size, stream);
    gpucache_event_log_record(log, GPUCACHE_EVENT_ALLOC, device, address, size, stream);
}

void library_reports_bypassed_free(int device, uint64_t address, size_t size, uint64_t stream)
{
    struct gpucache_event_log *log = log_if_wanted();
    if (!log)
        return;
    gpucache_event_log_record(log, GPUCACHE_EVENT_FREE_REQUESTED, device, address, size, stream);
    gpucache_event_log_record(log, GPUCACHE_EVENT_FREE_COMPLETED, device, address, size, stream);
    gpucache_event_log_record(log, GPUCACHE_EVENT_SEGMENT_FREE, device, address, size, stream);
}

/* True when the entry `key:value` of `length` bytes sets an output-file
 * key: it says where reports go, not how memory is allocated. */
static bool is_output_entry(const char *entry, size_t length)
{
    const char *colon = memchr(entry, ':', length);
    size_t key = colon ? (size_t)(colon - entry) : length;
    while (key > 0 && entry[key - 1] == ' ')
        key--;
    while (key > 0 && *entry == ' ') {
        entry++;
        key--;
    }
    for (int index = 0; index < GPUCACHE_KEY_COUNT; index++) {
        const char *name = gpucache_config_key_name((enum gpucache_config_key)index);
        if (gpucache_config_key_is_output((enum gpucache_config_key)index) &&
            strlen(name) == key && memcmp(name, entry, key) == 0)
            return true;
    }
    return false;
}

/* The configuration string as the user wrote it, without the output-file
 * keys (allocator_settings describes the allocator; `gpucache ab` adds
 * its own report and snapshot paths there). Written into `out`. */
static const char *settings_text(const struct gpucache_config *config, char *out, size_t size)
{
    const char *text = config->source_variable ? getenv(config->source_variable) : NULL;
    size_t used = 0;
    out[0] = '\0';
    for (const char *entry = text; entry && *entry;) {
        /* An entry ends at a ',' outside a [...] list. */
        const char *end = entry;
        int depth = 0;
        while (*end && (*end != ',' || depth > 0)) {
            depth += *end == '[' ? 1 : *end == ']' ? -1 : 0;
            end++;
        }
        size_t length = (size_t)(end - entry);
        if (length > 0 && !is_output_entry(entry, length) && used + length + 2 < size) {
            if (used > 0)
                out[used++] = ',';
            memcpy(out + used, entry, length);
            used += length;
            out[used] = '\0';
        }
        entry = *end ? end + 1 : end;
    }
    return out;
}

static void write_snapshot(const char *pattern, const struct library_reports_allocators *serving)
{
    const struct gpucache_config *config = library_config();
    /* Without the cache there are no segments to show, and a trace without
     * its final state would not load in the viewer. */
    if (config->passthrough || config->backend != GPUCACHE_BACKEND_NATIVE) {
        static int said;
        gpucache_log_once(&said, "no snapshot: %s bypasses the cache (the trace is still "
                                 "written when asked for)",
                          config->passthrough ? "passthrough:True" : "backend:cudaMallocAsync");
        return;
    }
    int fd = gpucache_report_open(pattern, (long)getpid(), false, "snapshot");
    if (fd < 0)
        return;
    char settings[4096];
    struct gpucache_snapshot_source source = {serving->by_device, serving->count, existing_log(),
                                              config,
                                              settings_text(config, settings, sizeof settings),
                                              stack_table};
    if (!gpucache_snapshot_write_allocators(fd, gpucache_snapshot_encoding_for_path(pattern),
                                            &source))
        gpucache_log("the snapshot %s is incomplete (out of host memory or a write error)",
                     pattern);
    gpucache_report_close(fd);
}

void library_reports_out_of_memory(struct gpucache_allocator *allocator, size_t size,
                                   const struct library_reports_allocators *serving)
{
    const struct gpucache_config *config = library_config();
    if (config->oom_message) {
        struct gpucache_oom_facts facts = {.request = size, .config = config};
        gpucache_allocator_memory_state(allocator, &facts.state);
        char line[1024];
        gpucache_oom_message(&facts, line, sizeof line);
        gpucache_log("%s", line);
    }
    if (!config->snapshot_path[0])
        return;
    unsigned number = __atomic_add_fetch(&oom_snapshots, 1, __ATOMIC_RELAXED);
    if (number > MAX_OOM_SNAPSHOTS)
        return;
    char tag[32], pattern[GPUCACHE_PATH_MAX + 32];
    snprintf(tag, sizeof tag, "-oom-%u", number);
    if (!gpucache_report_tagged_path(config->snapshot_path, tag, pattern, sizeof pattern)) {
        gpucache_log("no snapshot at the out of memory: the snapshot path with %s is too long", tag);
        return;
    }
    write_snapshot(pattern, serving);
}

bool library_reports_take_snapshot_request(void)
{
    return __atomic_load_n(&library_reports_snapshot_pending, __ATOMIC_RELAXED) &&
           __atomic_exchange_n(&library_reports_snapshot_pending, 0, __ATOMIC_ACQ_REL);
}

void library_reports_signal_snapshot(const struct library_reports_allocators *serving)
{
    unsigned number = __atomic_add_fetch(&signal_snapshots, 1, __ATOMIC_RELAXED);
    char tag[32], pattern[GPUCACHE_PATH_MAX + 32];
    snprintf(tag, sizeof tag, "-signal-%u", number);
    if (!gpucache_report_tagged_path(library_config()->snapshot_path, tag, pattern,
                                     sizeof pattern)) {
        gpucache_log("no snapshot at the signal: the snapshot path with %s is too long", tag);
        return;
    }
    write_snapshot(pattern, serving);
}

static void write_statistics(const struct gpucache_config *config,
                             int (*device_stats)(int device, struct gpucache_stats *stats))
{
    struct gpucache_device_report devices[GPUCACHE_MAX_DEVICES];
    size_t count = 0;
    size_t event_count = 0;
    struct gpucache_event_log *log = existing_log();
    struct gpucache_event *events = log ? gpucache_event_log_copy(log, -1, &event_count) : NULL;
    for (int device = 0; device < device_count_limit() && device < GPUCACHE_MAX_DEVICES;
         device++) {
        struct gpucache_device_report *report = &devices[count];
        memset(report, 0, sizeof *report);
        if (device_stats(device, &report->stats) != 0)
            continue;
        report->device = device;
        for (size_t index = 0; index < event_count; index++)
            report->events_recorded += events[index].device == device;
        /* The log counts its losses for all devices together. */
        report->events_dropped = log && count == 0 ? gpucache_event_log_dropped(log) : 0;
        count++;
    }
    free(events);
    if (config->report_path[0]) {
        struct gpucache_report report = {(long)getpid(), config, &bypass_counts, devices,
                                         count};
        int fd = gpucache_report_open(config->report_path, (long)getpid(), true, "report");
        if (fd >= 0 && !gpucache_report_write_json(fd, &report))
            gpucache_log("the report is incomplete (out of host memory or a write error)");
        gpucache_report_close(fd);
    }
    if (config->summary_path[0]) {
        int fd = gpucache_report_open(config->summary_path, (long)getpid(), true, "summary");
        char table[8192];
        for (size_t index = 0; fd >= 0 && index < count; index++) {
            size_t length = gpucache_stats_to_summary(&devices[index].stats,
                                                      devices[index].device, false, table,
                                                      sizeof table);
            if (length >= sizeof table || write(fd, table, length) != (ssize_t)length)
                break;
            /* The table is PyTorch's, whose active rows include these. */
            char bytes[32];
            const struct gpucache_stats *stats = &devices[index].stats;
            length = (size_t)snprintf(
                table, sizeof table,
                "Pending frees at exit, device %d: %s in %lld blocks (their streams' work "
                "was still running)\n",
                devices[index].device,
                gpucache_format_bytes((uint64_t)stats->pending_bytes.current, bytes, sizeof bytes),
                (long long)stats->pending_blocks.current);
            if (write(fd, table, length) != (ssize_t)length)
                break;
        }
        gpucache_report_close(fd);
    }
}

/* The compact trace carries the stacks; RMM's CSV has no place for them. */
static void write_trace(const char *pattern, bool compact)
{
    struct gpucache_event_log *log = existing_log();
    if (!pattern[0] || !log)
        return;
    size_t count = 0;
    struct gpucache_event *events = gpucache_event_log_copy(log, -1, &count);
    int fd = gpucache_report_open(pattern, (long)getpid(), false, "trace");
    bool written = fd >= 0 && (compact ? gpucache_trace_write_compact(fd, events, count, stack_table)
                                       : gpucache_trace_write_rmm_csv(fd, events, count));
    if (fd >= 0 && !written)
        gpucache_log("the trace %s is incomplete (out of host memory or a write error)", pattern);
    gpucache_report_close(fd);
    free(events);
}

/* Frees whose work is done count as freed in every report, not as active
 * memory; what is still running at exit stays pending and is shown so. */
static void settle_pending_frees(const struct gpucache_config *config,
                                 const struct library_reports_allocators *serving)
{
    if (config->passthrough || config->backend != GPUCACHE_BACKEND_NATIVE)
        return;
    for (size_t device = 0; device < serving->count; device++)
        if (serving->by_device[device])
            gpucache_allocator_settle(serving->by_device[device], EXIT_SETTLE_PATIENCE_NS);
}

void library_reports_at_exit(const struct library_reports_allocators *serving,
                             int (*device_stats)(int device, struct gpucache_stats *stats))
{
    const struct gpucache_config *config = library_config();
    if (config->report_path[0] || config->summary_path[0] || config->trace_path[0] ||
        config->trace_csv_path[0] || config->snapshot_path[0])
        settle_pending_frees(config, serving);
    write_statistics(config, device_stats);
    write_trace(config->trace_path, true);
    write_trace(config->trace_csv_path, false);
    if (config->snapshot_path[0])
        write_snapshot(config->snapshot_path, serving);
}

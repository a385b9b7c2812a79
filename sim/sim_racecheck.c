/* GPUSIM_RACECHECK: a happens-before race detector for device memory.
 *
 * Every operation queued on a stream gets a vector clock when it is queued
 * (in host program order), built only from CUDA's ordering rules: program
 * order in a stream, the host's knowledge at submission, the legacy default
 * stream's implicit synchronization with blocking streams, event record and
 * wait, and the host synchronizations that observe completion. The workers
 * never touch clocks, so a race is found whatever the timing of one run: two
 * accesses to the same bytes, at least one a write, whose operations are not
 * ordered by those rules.
 *
 * Shadow state is an interval tree of device byte ranges. Each interval
 * holds its last write and the reads since (one per actor), split where
 * accesses begin and end and coalesced when a write covers it. Actors are
 * the host (0) and each stream ever created, never reused, so a destroyed
 * stream's accesses keep a meaning.
 *
 * Clocks are indexed by slot, not by actor, so their length follows the
 * streams alive rather than every stream ever created. A stream retires once
 * its worker has finished and the host has observed its last operation:
 * every operation queued from then on joins the host's clock, so it is
 * ordered after everything the retired stream did, and its slot (with a new
 * generation, which voids the old entries) goes to a new stream.
 *
 * Kernels are operations like copies, but what they touch is known only
 * once they have run. The shadow must see operations in the order they were
 * queued (a linearization of happens-before, which the checks rely on), so
 * from a queued kernel on, everything recorded waits in a list with a copy
 * of its clock, and the list is applied in order as kernels finish. Stream
 * slots are not reused while the list holds anything.
 *
 * Cost (DESIGN.md): about 2x CPU per queued operation in a loop that does
 * nothing but queue small copies and memsets, mostly the race lock.
 *
 * One file because the clocks, the shadow intervals and the pending list
 * are one data structure under one lock; their invariants hold only together. */
#include "sim_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptx/ptx.h"

#define HOST_ACTOR 0u

enum actor_kind {
    ACTOR_HOST,
    ACTOR_LEGACY,
    ACTOR_PER_THREAD,
    ACTOR_BLOCKING,
    ACTOR_NON_BLOCKING,
};

struct actor {
    struct sim_clock clock;
    enum actor_kind kind;
    const void *handle;
    bool destroyed;
    bool retired;
    unsigned slot;
    unsigned long long final_tick; /* once finished */
};

struct sim_clock_entry {
    unsigned generation; /* of the slot when written; 0: never */
    unsigned long long tick;
};

struct shadow_access {
    unsigned actor;
    enum sim_access_mode mode;
    unsigned long long tick;
    const char *operation;
    const void *return_address;
};

struct shadow_interval {
    RB_ENTRY(shadow_interval) link;
    uintptr_t start, end;
    bool written;
    struct shadow_access write;
    struct shadow_access *reads; /* at most one per actor */
    unsigned read_count, read_capacity;
};

static int interval_compare(const struct shadow_interval *a, const struct shadow_interval *b)
{
    return a->start < b->start ? -1 : a->start > b->start;
}

RB_HEAD(shadow_tree, shadow_interval);
RB_GENERATE_STATIC(shadow_tree, shadow_interval, link, interval_compare)

struct pending_range {
    uintptr_t start, end;
    enum sim_access_mode mode;
};

/* What one worker thread saw a kernel touch, coalesced as it goes. */
struct access_log {
    struct pending_range *ranges;
    size_t count, capacity;
};

enum pending_kind {
    PENDING_ACCESSES, /* ranges of one operation */
    PENDING_KERNEL,   /* the same, complete once the grid has run */
    PENDING_RELEASE,  /* sim_racecheck_release */
    PENDING_FORGET,   /* sim_racecheck_forget */
};

/* An operation recorded behind a kernel that has not finished yet. */
struct sim_race_operation {
    STAILQ_ENTRY(sim_race_operation) link;
    enum pending_kind kind;
    atomic_bool complete;
    struct shadow_access access; /* mode unused: each range has its own */
    struct sim_clock clock;      /* the actor's clock when it was queued */
    struct pending_range *ranges;
    unsigned range_count, range_capacity;
    const char *entry_name;      /* a release's entry point */
    struct access_log **logs;    /* a kernel's, PTX_MAX_WORKERS of them */
    atomic_bool lost;            /* a log ran out of memory */
};
STAILQ_HEAD(pending_list, sim_race_operation);

/* "kernel NAME" strings, which shadow entries keep after their operation. */
struct kernel_label {
    struct kernel_label *next;
    char text[];
};

static struct {
    pthread_mutex_t lock;
    struct actor *actors;
    unsigned actor_count, actor_capacity;
    unsigned *slot_generations;
    unsigned slot_count, slot_capacity;
    unsigned *free_slots;
    unsigned free_slot_count, free_slot_capacity;
    /* Finished streams the host has not observed to the end yet. */
    unsigned *unobserved;
    unsigned unobserved_count, unobserved_capacity;
    struct shadow_tree shadow;
    /* The operation last reported, so one operation is one race however
     * many of its byte ranges conflict. */
    unsigned reported_actor;
    unsigned long long reported_tick;
    /* Set when the detector ran out of memory: it stops rather than
     * report on partial state. */
    bool broken;
    atomic_ullong races;
    /* Operations queued from the oldest unfinished kernel on. */
    struct pending_list pending;
    struct kernel_label *kernel_labels;
} detector = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .shadow = RB_INITIALIZER(&detector.shadow),
    .reported_actor = ~0u,
    .pending = STAILQ_HEAD_INITIALIZER(detector.pending),
};

static bool tracking(void)
{
    return sim_racecheck_enabled() && !detector.broken;
}

static void out_of_memory(void)
{
    if (!detector.broken)
        fprintf(stderr, "gpusim: GPUSIM_RACECHECK: out of memory, race detection stops\n");
    detector.broken = true;
}

void sim_racecheck_lock(void)
{
    pthread_mutex_lock(&detector.lock);
}

void sim_racecheck_unlock(void)
{
    pthread_mutex_unlock(&detector.lock);
}

unsigned long long sim_racecheck_race_count(void)
{
    return atomic_load(&detector.races);
}

/* ---- vector clocks ------------------------------------------------------ */

/* Makes room for one more element in the growable array `array` holding
 * `count` of `capacity`; false (detection stops) when out of memory. */
#define RESERVE_ONE(array, capacity, count)                                                     \
    ((count) < (capacity) || grow(&(array), &(capacity), sizeof *(array)))

/* Doubles the array whose pointer is at `array_address`. The pointer is
 * moved with memcpy because the arrays have different element types. */
static bool grow(void *array_address, unsigned *capacity, size_t element)
{
    unsigned grown = *capacity == 0 ? 16 : 2 * *capacity;
    void *array;
    memcpy(&array, array_address, sizeof array);
    void *larger = realloc(array, grown * element);
    if (larger == NULL) {
        out_of_memory();
        return false;
    }
    memcpy(array_address, &larger, sizeof larger);
    *capacity = grown;
    return true;
}

static bool entry_is_current(const struct sim_clock_entry *entry, unsigned slot)
{
    return entry->generation == detector.slot_generations[slot];
}

/* What `clock` knows of `actor`; a retired actor is known to the end. */
static unsigned long long clock_tick(const struct sim_clock *clock, unsigned actor)
{
    const struct actor *owner = &detector.actors[actor];
    if (owner->retired)
        return ~0ULL;
    if (owner->slot >= clock->length || !entry_is_current(&clock->entries[owner->slot], owner->slot))
        return 0;
    return clock->entries[owner->slot].tick;
}

static bool clock_reserve(struct sim_clock *clock, unsigned length)
{
    if (length <= clock->length)
        return true;
    struct sim_clock_entry *entries = realloc(clock->entries, length * sizeof *entries);
    if (entries == NULL) {
        out_of_memory();
        return false;
    }
    memset(entries + clock->length, 0, (length - clock->length) * sizeof *entries);
    clock->entries = entries;
    clock->length = length;
    return true;
}

/* The next operation of `actor`, whose clock `clock` is: its new tick. */
static unsigned long long clock_advance(struct sim_clock *clock, unsigned actor)
{
    unsigned slot = detector.actors[actor].slot;
    if (!clock_reserve(clock, slot + 1))
        return 0;
    struct sim_clock_entry *entry = &clock->entries[slot];
    if (!entry_is_current(entry, slot))
        *entry = (struct sim_clock_entry){.generation = detector.slot_generations[slot]};
    return ++entry->tick;
}

static void clock_join(struct sim_clock *into, const struct sim_clock *from)
{
    if (!clock_reserve(into, from->length))
        return;
    for (unsigned slot = 0; slot < from->length; slot++) {
        const struct sim_clock_entry *entry = &from->entries[slot];
        if (!entry_is_current(entry, slot))
            continue;
        if (!entry_is_current(&into->entries[slot], slot) || into->entries[slot].tick < entry->tick)
            into->entries[slot] = *entry;
    }
}

static void clock_assign(struct sim_clock *into, const struct sim_clock *from)
{
    if (!clock_reserve(into, from->length))
        return;
    /* An empty clock has no array: memcpy and memset must not see NULL. */
    if (from->length > 0)
        memcpy(into->entries, from->entries, from->length * sizeof *from->entries);
    if (into->length > from->length)
        memset(into->entries + from->length, 0,
               (into->length - from->length) * sizeof *into->entries);
}

void sim_clock_free(struct sim_clock *clock)
{
    free(clock->entries);
    clock->entries = NULL;
    clock->length = 0;
}

/* ---- actors ------------------------------------------------------------- */

static bool new_slot(unsigned *slot)
{
    if (detector.free_slot_count > 0) {
        *slot = detector.free_slots[--detector.free_slot_count];
    } else {
        if (!RESERVE_ONE(detector.slot_generations, detector.slot_capacity, detector.slot_count))
            return false;
        *slot = detector.slot_count++;
        detector.slot_generations[*slot] = 0;
    }
    detector.slot_generations[*slot]++; /* voids what clocks hold for its last owner */
    return true;
}

static unsigned new_actor(enum actor_kind kind, const void *handle)
{
    unsigned slot;
    if (!RESERVE_ONE(detector.actors, detector.actor_capacity, detector.actor_count) ||
        !new_slot(&slot))
        return HOST_ACTOR;
    unsigned index = detector.actor_count++;
    detector.actors[index] = (struct actor){.kind = kind, .handle = handle, .slot = slot};
    return index;
}

static struct sim_clock *host_clock(void)
{
    return &detector.actors[HOST_ACTOR].clock;
}

static bool is_blocking(const struct sim_stream *stream)
{
    return !stream->legacy && (stream->flags & CU_STREAM_NON_BLOCKING) == 0;
}

void sim_racecheck_stream_created(struct sim_stream *stream)
{
    stream->race_actor = HOST_ACTOR;
    if (!tracking())
        return;
    enum actor_kind kind = stream->legacy       ? ACTOR_LEGACY
                           : stream->per_thread ? ACTOR_PER_THREAD
                           : is_blocking(stream) ? ACTOR_BLOCKING
                                                 : ACTOR_NON_BLOCKING;
    sim_racecheck_lock();
    stream->race_actor = new_actor(kind, stream);
    sim_racecheck_unlock();
}

void sim_racecheck_stream_closed(struct sim_stream *stream)
{
    if (!tracking() || stream->race_actor == HOST_ACTOR)
        return;
    sim_racecheck_lock();
    detector.actors[stream->race_actor].destroyed = true;
    sim_racecheck_unlock();
}

/* Retires `actor` if the host has observed its last operation. */
static bool retire_if_observed(unsigned actor)
{
    struct actor *finished = &detector.actors[actor];
    /* Waiting operations may still be checked against its accesses. */
    if (!STAILQ_EMPTY(&detector.pending))
        return false;
    if (clock_tick(host_clock(), actor) < finished->final_tick)
        return false;
    if (!RESERVE_ONE(detector.free_slots, detector.free_slot_capacity, detector.free_slot_count))
        return false;
    finished->retired = true;
    detector.free_slots[detector.free_slot_count++] = finished->slot;
    return true;
}

/* Under the race lock, after the host's clock grew. */
static void retire_observed_streams(void)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < detector.unobserved_count; i++)
        if (!retire_if_observed(detector.unobserved[i]))
            detector.unobserved[kept++] = detector.unobserved[i];
    detector.unobserved_count = kept;
}

void sim_racecheck_stream_finished(struct sim_stream *stream)
{
    if (!tracking() || stream->race_actor == HOST_ACTOR)
        return;
    sim_racecheck_lock();
    struct actor *finished = &detector.actors[stream->race_actor];
    finished->final_tick = clock_tick(&finished->clock, stream->race_actor);
    struct sim_clock *clock = &finished->clock;
    /* The legacy stream no longer finds it in the context's list, but its
     * work still precedes later legacy work. */
    if (is_blocking(stream))
        clock_join(&stream->context->race_retired_blocking, clock);
    clock_join(&stream->context->race_retired_all, clock);
    /* Nothing reads this clock again: the handle is gone, events keep
     * copies, and its accesses only need the actor's index. */
    sim_clock_free(clock);
    if (!retire_if_observed(stream->race_actor) &&
        RESERVE_ONE(detector.unobserved, detector.unobserved_capacity, detector.unobserved_count))
        detector.unobserved[detector.unobserved_count++] = stream->race_actor;
    sim_racecheck_unlock();
}

void sim_racecheck_host_observes_retired(struct sim_context *context)
{
    if (!tracking())
        return;
    sim_racecheck_lock();
    clock_join(host_clock(), &context->race_retired_all);
    retire_observed_streams();
    sim_racecheck_unlock();
}

void sim_racecheck_context_reset(struct sim_context *context)
{
    sim_clock_free(&context->race_retired_blocking);
    sim_clock_free(&context->race_retired_all);
}

void sim_racecheck_copy_stream_clock(struct sim_stream *stream, struct sim_clock *into)
{
    if (tracking())
        clock_assign(into, &detector.actors[stream->race_actor].clock);
}

void sim_racecheck_copy_event_clock(struct sim_event *event, struct sim_clock *into)
{
    if (!tracking())
        return;
    sim_racecheck_lock();
    clock_assign(into, &event->race_clock);
    sim_racecheck_unlock();
}

void sim_racecheck_host_observes(const struct sim_clock *observed)
{
    if (!tracking())
        return;
    sim_racecheck_lock();
    clock_join(host_clock(), observed);
    retire_observed_streams();
    sim_racecheck_unlock();
}

void sim_racecheck_host_observes_stream(struct sim_stream *stream)
{
    if (!tracking())
        return;
    clock_join(host_clock(), &detector.actors[stream->race_actor].clock);
    retire_observed_streams();
}

/* ---- reports ------------------------------------------------------------ */

/* "libfoo.so+0x1a2b" for a code address, from the loader's tables. */
static void describe_site(const void *address, char *text, size_t size)
{
    Dl_info info;
    if (address != NULL && dladdr(address, &info) != 0 && info.dli_fname != NULL) {
        const char *name = strrchr(info.dli_fname, '/');
        name = name != NULL ? name + 1 : info.dli_fname;
        snprintf(text, size, "%s+%#lx", name[0] != '\0' ? name : "?",
                 (unsigned long)((uintptr_t)address - (uintptr_t)info.dli_fbase));
    } else {
        snprintf(text, size, "%p", address);
    }
}

static void describe_actor(unsigned index, char *text, size_t size)
{
    const struct actor *actor = &detector.actors[index];
    static const char *const kinds[] = {
        [ACTOR_HOST] = "host",
        [ACTOR_LEGACY] = "legacy default",
        [ACTOR_PER_THREAD] = "per-thread default",
        [ACTOR_BLOCKING] = "blocking",
        [ACTOR_NON_BLOCKING] = "non-blocking",
    };
    if (actor->kind == ACTOR_HOST)
        snprintf(text, size, "the host");
    else
        snprintf(text, size, "stream %p (%s%s)", actor->handle, kinds[actor->kind],
                 actor->destroyed ? ", destroyed" : "");
}

static bool is_write(enum sim_access_mode mode)
{
    return mode == SIM_ACCESS_WRITE || mode == SIM_ACCESS_SYNC_WRITE;
}

static bool is_sync(enum sim_access_mode mode)
{
    return mode == SIM_ACCESS_SYNC_READ || mode == SIM_ACCESS_SYNC_WRITE;
}

/* Counts the race of the operation `access` once, and stops the process in
 * abort mode. Returns false when this operation was already reported. */
static bool count_race(const struct shadow_access *access)
{
    if (detector.reported_actor == access->actor && detector.reported_tick == access->tick)
        return false;
    detector.reported_actor = access->actor;
    detector.reported_tick = access->tick;
    atomic_fetch_add(&detector.races, 1);
    return true;
}

static void finish_report(void)
{
    if (sim.settings.racecheck == SIM_RACECHECK_ABORT)
        abort();
}

static void report_conflict(const struct shadow_access *earlier, const struct shadow_access *now,
                            uintptr_t start, uintptr_t end)
{
    if (!count_race(now))
        return;
    char now_actor[96], now_site[256], earlier_actor[96], earlier_site[256];
    describe_actor(now->actor, now_actor, sizeof now_actor);
    describe_site(now->return_address, now_site, sizeof now_site);
    describe_actor(earlier->actor, earlier_actor, sizeof earlier_actor);
    describe_site(earlier->return_address, earlier_site, sizeof earlier_site);
    fprintf(stderr,
            "gpusim: race: %s on %s %s [%#lx, %#lx) at %s, unordered with %s on %s that %s "
            "it at %s\n",
            now->operation, now_actor, is_write(now->mode) ? "writes" : "reads",
            (unsigned long)start, (unsigned long)end, now_site, earlier->operation,
            earlier_actor, is_write(earlier->mode) ? "wrote" : "read", earlier_site);
    finish_report();
}

/* ---- shadow intervals --------------------------------------------------- */

static struct shadow_interval *first_overlapping(uintptr_t start)
{
    struct shadow_interval key = {.start = start};
    struct shadow_interval *node = RB_NFIND(shadow_tree, &detector.shadow, &key);
    struct shadow_interval *before = node != NULL ? RB_PREV(shadow_tree, &detector.shadow, node)
                                                  : RB_MAX(shadow_tree, &detector.shadow);
    return before != NULL && before->end > start ? before : node;
}

static void interval_free(struct shadow_interval *node)
{
    free(node->reads);
    free(node);
}

/* Cuts `node` at `at` (strictly inside it); returns the upper part. */
static struct shadow_interval *split(struct shadow_interval *node, uintptr_t at)
{
    struct shadow_interval *upper = malloc(sizeof *upper);
    struct shadow_access *reads =
        node->read_count == 0 ? NULL : malloc(node->read_count * sizeof *reads);
    if (upper == NULL || (node->read_count > 0 && reads == NULL)) {
        free(upper);
        free(reads);
        out_of_memory();
        return NULL;
    }
    *upper = *node;
    if (reads != NULL)
        memcpy(reads, node->reads, node->read_count * sizeof *reads);
    upper->reads = reads;
    upper->read_capacity = node->read_count;
    upper->start = at;
    node->end = at;
    RB_INSERT(shadow_tree, &detector.shadow, upper);
    return upper;
}

static struct shadow_interval *insert_interval(uintptr_t start, uintptr_t end)
{
    struct shadow_interval *node = calloc(1, sizeof *node);
    if (node == NULL) {
        out_of_memory();
        return NULL;
    }
    node->start = start;
    node->end = end;
    RB_INSERT(shadow_tree, &detector.shadow, node);
    return node;
}

static void erase(uintptr_t start, uintptr_t end)
{
    struct shadow_interval *node = first_overlapping(start);
    if (node != NULL && node->start < start && node->start < end)
        node = split(node, start);
    while (node != NULL && node->start < end) {
        if (node->end > end && split(node, end) == NULL)
            return;
        struct shadow_interval *next = RB_NEXT(shadow_tree, &detector.shadow, node);
        RB_REMOVE(shadow_tree, &detector.shadow, node);
        interval_free(node);
        node = next;
    }
}

static bool same_access(const struct shadow_access *a, const struct shadow_access *b)
{
    return a->actor == b->actor && a->tick == b->tick && a->mode == b->mode;
}

/* Joins `node` with its upper neighbour when both hold just the same write,
 * so rows and repeated ranges of one operation stay one interval. */
static void merge_with_next(struct shadow_interval *node)
{
    struct shadow_interval *next = RB_NEXT(shadow_tree, &detector.shadow, node);
    if (next == NULL || next->start != node->end || !node->written || !next->written ||
        node->read_count != 0 || next->read_count != 0 || !same_access(&node->write, &next->write))
        return;
    node->end = next->end;
    RB_REMOVE(shadow_tree, &detector.shadow, next);
    interval_free(next);
}

static void add_read(struct shadow_interval *node, const struct shadow_access *access)
{
    for (unsigned i = 0; i < node->read_count; i++) {
        if (node->reads[i].actor == access->actor) {
            node->reads[i] = *access; /* later in that actor's program order */
            return;
        }
    }
    if (node->read_count == node->read_capacity) {
        unsigned capacity = node->read_capacity == 0 ? 2 : 2 * node->read_capacity;
        struct shadow_access *reads = realloc(node->reads, capacity * sizeof *reads);
        if (reads == NULL) {
            out_of_memory();
            return;
        }
        node->reads = reads;
        node->read_capacity = capacity;
    }
    node->reads[node->read_count++] = *access;
}

/* True when `earlier` is an access the operation with clock `now_clock`
 * conflicts with and is not ordered after. */
static bool races_with(const struct shadow_access *earlier, const struct shadow_access *now,
                       const struct sim_clock *now_clock)
{
    if (earlier->actor == now->actor || (is_sync(earlier->mode) && is_sync(now->mode)))
        return false;
    if (!is_write(earlier->mode) && !is_write(now->mode))
        return false;
    return clock_tick(now_clock, earlier->actor) < earlier->tick;
}

static void check(uintptr_t start, uintptr_t end, const struct shadow_access *now,
                  const struct sim_clock *now_clock)
{
    for (struct shadow_interval *node = first_overlapping(start);
         node != NULL && node->start < end; node = RB_NEXT(shadow_tree, &detector.shadow, node)) {
        uintptr_t from = node->start > start ? node->start : start;
        uintptr_t to = node->end < end ? node->end : end;
        if (node->written && races_with(&node->write, now, now_clock)) {
            report_conflict(&node->write, now, from, to);
            return;
        }
        if (!is_write(now->mode))
            continue;
        for (unsigned i = 0; i < node->read_count; i++) {
            if (races_with(&node->reads[i], now, now_clock)) {
                report_conflict(&node->reads[i], now, from, to);
                return;
            }
        }
    }
}

static void record_write(uintptr_t start, uintptr_t end, const struct shadow_access *access)
{
    erase(start, end);
    struct shadow_interval *node = insert_interval(start, end);
    if (node == NULL)
        return;
    node->written = true;
    node->write = *access;
    merge_with_next(node);
    struct shadow_interval *before = RB_PREV(shadow_tree, &detector.shadow, node);
    if (before != NULL)
        merge_with_next(before);
}

static void record_read(uintptr_t start, uintptr_t end, const struct shadow_access *access)
{
    struct shadow_interval *node = first_overlapping(start);
    if (node != NULL && node->start < start)
        node = split(node, start);
    uintptr_t cursor = start;
    while (cursor < end && !detector.broken) {
        if (node == NULL || node->start >= end) {
            struct shadow_interval *gap = insert_interval(cursor, end);
            if (gap != NULL)
                add_read(gap, access);
            return;
        }
        if (node->start > cursor) {
            struct shadow_interval *gap = insert_interval(cursor, node->start);
            if (gap != NULL)
                add_read(gap, access);
            cursor = node->start;
            continue;
        }
        if (node->end > end && split(node, end) == NULL)
            return;
        add_read(node, access);
        cursor = node->end;
        node = RB_NEXT(shadow_tree, &detector.shadow, node);
    }
}

/* Under sim.lock: device-side memory (device, pool, managed or mapped VMM)
 * is tracked; pinned and pageable host memory is the host's business. */
static bool is_tracked(uintptr_t address)
{
    struct sim_range *range = sim_range_find(address);
    return range != NULL &&
           (range->kind == SIM_RANGE_DEVICE || range->kind == SIM_RANGE_POOL ||
            range->kind == SIM_RANGE_MANAGED || range->kind == SIM_RANGE_RESERVATION);
}

static void apply_access(uintptr_t start, uintptr_t end, const struct shadow_access *access,
                         const struct sim_clock *clock)
{
    check(start, end, access, clock);
    if (is_write(access->mode))
        record_write(start, end, access);
    else
        record_read(start, end, access);
}

/* ---- operations waiting for a kernel ------------------------------------ */

static struct sim_race_operation *queue_operation(enum pending_kind kind,
                                                  const struct shadow_access *access,
                                                  const struct sim_clock *clock)
{
    struct sim_race_operation *operation = calloc(1, sizeof *operation);
    if (operation == NULL) {
        out_of_memory();
        return NULL;
    }
    operation->kind = kind;
    operation->access = *access;
    atomic_init(&operation->complete, kind != PENDING_KERNEL);
    atomic_init(&operation->lost, false);
    clock_assign(&operation->clock, clock);
    STAILQ_INSERT_TAIL(&detector.pending, operation, link);
    return operation;
}

static void add_range(struct sim_race_operation *operation, uintptr_t start, uintptr_t end,
                      enum sim_access_mode mode)
{
    if (!RESERVE_ONE(operation->ranges, operation->range_capacity, operation->range_count))
        return;
    operation->ranges[operation->range_count++] =
        (struct pending_range){.start = start, .end = end, .mode = mode};
}

static void free_operation(struct sim_race_operation *operation)
{
    if (operation->logs != NULL) {
        for (unsigned worker = 0; worker < PTX_MAX_WORKERS; worker++) {
            if (operation->logs[worker] != NULL)
                free(operation->logs[worker]->ranges);
            free(operation->logs[worker]);
        }
        free(operation->logs);
    }
    free(operation->ranges);
    sim_clock_free(&operation->clock);
    free(operation);
}

static void release_now(uintptr_t start, uintptr_t end, const struct sim_clock *host,
                        const struct shadow_access *release, const char *entry_name);

static void apply_operation(const struct sim_race_operation *operation)
{
    for (unsigned i = 0; i < operation->range_count && !detector.broken; i++) {
        const struct pending_range *range = &operation->ranges[i];
        struct shadow_access access = operation->access;
        access.mode = range->mode;
        switch (operation->kind) {
        case PENDING_ACCESSES:
        case PENDING_KERNEL:
            apply_access(range->start, range->end, &access, &operation->clock);
            break;
        case PENDING_RELEASE:
            release_now(range->start, range->end, &operation->clock, &access,
                        operation->entry_name);
            break;
        case PENDING_FORGET:
            erase(range->start, range->end);
            break;
        }
    }
}

/* Applies the waiting operations up to the first unfinished kernel. Under
 * the race lock. */
static void apply_finished_operations(void)
{
    struct sim_race_operation *head;
    while ((head = STAILQ_FIRST(&detector.pending)) != NULL && atomic_load(&head->complete)) {
        STAILQ_REMOVE_HEAD(&detector.pending, link);
        if (!detector.broken)
            apply_operation(head);
        free_operation(head);
    }
    if (STAILQ_EMPTY(&detector.pending))
        retire_observed_streams();
}

static bool waiting(void)
{
    return !STAILQ_EMPTY(&detector.pending);
}

void sim_racecheck_record_access(uintptr_t address, size_t bytes, enum sim_access_mode mode,
                                 struct sim_stream *stream, const char *operation,
                                 const void *return_address)
{
    if (!tracking() || bytes == 0 || !is_tracked(address))
        return;
    unsigned actor = stream != NULL ? stream->race_actor : HOST_ACTOR;
    struct sim_clock *clock = &detector.actors[actor].clock;
    if (actor == HOST_ACTOR)
        clock_advance(clock, HOST_ACTOR); /* each host access is its own operation */
    struct shadow_access access = {
        .actor = actor,
        .mode = mode,
        .tick = clock_tick(clock, actor),
        .operation = operation != NULL ? operation : "?",
        .return_address = return_address,
    };
    uintptr_t start = address, end = address + bytes;
    if (!waiting()) {
        apply_access(start, end, &access, clock);
        return;
    }
    /* Rows of one operation share one waiting entry. */
    struct sim_race_operation *last = STAILQ_LAST(&detector.pending, sim_race_operation, link);
    if (last == NULL || last->kind != PENDING_ACCESSES || last->access.actor != actor ||
        last->access.tick != access.tick)
        last = queue_operation(PENDING_ACCESSES, &access, clock);
    if (last != NULL)
        add_range(last, start, end, mode);
}

/* ---- kernels ------------------------------------------------------------ */

/* "kernel NAME", kept for the life of the process. Under the race lock. */
static const char *kernel_label(const char *name)
{
    for (struct kernel_label *label = detector.kernel_labels; label != NULL; label = label->next)
        if (strcmp(label->text + strlen("kernel "), name) == 0)
            return label->text;
    size_t length = strlen("kernel ") + strlen(name) + 1;
    struct kernel_label *label = malloc(sizeof *label + length);
    if (label == NULL)
        return "kernel";
    snprintf(label->text, length, "kernel %s", name);
    label->next = detector.kernel_labels;
    detector.kernel_labels = label;
    return label->text;
}

static int compare_ranges(const void *a, const void *b)
{
    const struct pending_range *x = a, *y = b;
    if (x->mode != y->mode)
        return x->mode < y->mode ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts by mode and address and joins what overlaps or touches. */
static size_t coalesce(struct pending_range *ranges, size_t count)
{
    if (count == 0)
        return 0;
    qsort(ranges, count, sizeof *ranges, compare_ranges);
    size_t kept = 0;
    for (size_t i = 1; i < count; i++) {
        struct pending_range *last = &ranges[kept];
        if (ranges[i].mode == last->mode && ranges[i].start <= last->end) {
            if (ranges[i].end > last->end)
                last->end = ranges[i].end;
        } else {
            ranges[++kept] = ranges[i];
        }
    }
    return kept + 1;
}

static enum sim_access_mode kernel_mode(enum ptx_access access)
{
    switch (access) {
    case PTX_ACCESS_LOAD: return SIM_ACCESS_READ;
    case PTX_ACCESS_STORE: return SIM_ACCESS_WRITE;
    case PTX_ACCESS_ATOMIC: break;
    }
    return SIM_ACCESS_SYNC_WRITE; /* atomics are ordered with each other */
}

void sim_racecheck_kernel_access(void *context, unsigned worker, uintptr_t address, size_t size,
                                 enum ptx_access access)
{
    struct sim_race_operation *operation = context;
    if (worker >= PTX_MAX_WORKERS || atomic_load_explicit(&operation->lost, memory_order_relaxed))
        return;
    struct access_log *log = operation->logs[worker];
    if (log == NULL && (log = operation->logs[worker] = calloc(1, sizeof *log)) == NULL) {
        atomic_store(&operation->lost, true);
        return;
    }
    enum sim_access_mode mode = kernel_mode(access);
    uintptr_t end = address + size;
    if (log->count > 0) {
        /* Lanes of a warp mostly touch neighbouring bytes. */
        struct pending_range *last = &log->ranges[log->count - 1];
        if (last->mode == mode && address <= last->end && end >= last->start) {
            if (address < last->start)
                last->start = address;
            if (end > last->end)
                last->end = end;
            return;
        }
    }
    if (log->count == log->capacity) {
        if (log->capacity >= 4096)
            log->count = coalesce(log->ranges, log->count);
        /* Grow unless coalescing freed at least half of it. */
        if (log->count == log->capacity || log->count > log->capacity / 2) {
            size_t grown = log->capacity == 0 ? 64 : 2 * log->capacity;
            struct pending_range *larger = realloc(log->ranges, grown * sizeof *larger);
            if (larger == NULL) {
                atomic_store(&operation->lost, true);
                return;
            }
            log->ranges = larger;
            log->capacity = grown;
        }
    }
    log->ranges[log->count++] = (struct pending_range){.start = address, .end = end, .mode = mode};
}

/* Under sim.lock and the race lock, from sim_racecheck_order_submission. */
static void kernel_queued(struct sim_stream *stream, struct sim_kernel_launch *launch)
{
    struct sim_clock *clock = &detector.actors[stream->race_actor].clock;
    struct shadow_access access = {
        .actor = stream->race_actor,
        .tick = clock_tick(clock, stream->race_actor),
        .operation = kernel_label(sim_kernel_name(launch)),
        .return_address = sim_call_site.return_address,
    };
    struct sim_race_operation *operation = queue_operation(PENDING_KERNEL, &access, clock);
    if (operation == NULL)
        return;
    operation->logs = calloc(PTX_MAX_WORKERS, sizeof *operation->logs);
    if (operation->logs == NULL) {
        out_of_memory();
        atomic_store(&operation->complete, true);
        return;
    }
    sim_kernel_observe(launch, operation);
}

void sim_racecheck_kernel_finished(struct sim_race_operation *operation)
{
    sim_lock();
    sim_racecheck_lock();
    if (atomic_load(&operation->lost))
        out_of_memory();
    for (unsigned worker = 0; worker < PTX_MAX_WORKERS && !detector.broken; worker++) {
        struct access_log *log = operation->logs[worker];
        if (log == NULL)
            continue;
        log->count = coalesce(log->ranges, log->count);
        for (size_t i = 0; i < log->count; i++)
            add_range(operation, log->ranges[i].start, log->ranges[i].end, log->ranges[i].mode);
    }
    operation->range_count = (unsigned)coalesce(operation->ranges, operation->range_count);
    /* Pinned host memory is the host's business, as for copies. */
    unsigned kept = 0;
    for (unsigned i = 0; i < operation->range_count; i++)
        if (is_tracked(operation->ranges[i].start))
            operation->ranges[kept++] = operation->ranges[i];
    operation->range_count = kept;
    atomic_store(&operation->complete, true);
    apply_finished_operations();
    sim_racecheck_unlock();
    sim_unlock();
}

/* ---- submissions -------------------------------------------------------- */

static void record_rows(struct sim_stream *stream, uintptr_t start, size_t bytes, size_t height,
                        size_t pitch, enum sim_access_mode mode)
{
    const char *operation = sim_call_site.entry_name;
    const void *site = sim_call_site.return_address;
    if (height <= 1 || pitch == bytes) {
        sim_racecheck_record_access(start, bytes * (height == 0 ? 1 : height), mode, stream,
                                    operation, site);
        return;
    }
    for (size_t row = 0; row < height; row++)
        sim_racecheck_record_access(start + row * pitch, bytes, mode, stream, operation, site);
}

static void order_after_implicit_dependencies(struct sim_stream *stream, struct sim_clock *clock)
{
    struct sim_context *context = stream->context;
    if (stream->legacy) {
        struct sim_stream *other;
        LIST_FOREACH(other, &context->streams, context_link)
            if (other != stream && is_blocking(other))
                clock_join(clock, &detector.actors[other->race_actor].clock);
        clock_join(clock, &context->race_retired_blocking);
    } else if (is_blocking(stream) && context->legacy_stream != NULL) {
        clock_join(clock, &detector.actors[context->legacy_stream->race_actor].clock);
    }
}

void sim_racecheck_order_submission(struct sim_stream *stream, const struct sim_work *work)
{
    if (!tracking() || stream->race_actor == HOST_ACTOR)
        return;
    struct sim_clock *clock = &detector.actors[stream->race_actor].clock;
    if (clock_advance(clock, stream->race_actor) == 0)
        return;
    clock_join(clock, host_clock());
    order_after_implicit_dependencies(stream, clock);
    switch (work->kind) {
    case SIM_WORK_COPY:
        record_rows(stream, (uintptr_t)work->u.copy.source, work->u.copy.bytes,
                    work->u.copy.height, work->u.copy.source_pitch, SIM_ACCESS_READ);
        record_rows(stream, (uintptr_t)work->u.copy.destination, work->u.copy.bytes,
                    work->u.copy.height, work->u.copy.destination_pitch, SIM_ACCESS_WRITE);
        break;
    case SIM_WORK_SET:
        record_rows(stream, work->u.set.destination,
                    work->u.set.width * work->u.set.element_size, work->u.set.height,
                    work->u.set.pitch, SIM_ACCESS_WRITE);
        break;
    case SIM_WORK_WAIT_VALUE:
        record_rows(stream, work->u.memory_value.address, work->u.memory_value.width, 1, 0,
                    SIM_ACCESS_SYNC_READ);
        break;
    case SIM_WORK_WRITE_VALUE:
        record_rows(stream, work->u.memory_value.address, work->u.memory_value.width, 1, 0,
                    SIM_ACCESS_SYNC_WRITE);
        break;
    case SIM_WORK_FREE:
        /* Freeing is the last use: a free unordered with another stream's
         * access to the allocation is a use after free. */
        record_rows(stream, work->u.free.range->base, work->u.free.range->size, 1, 0,
                    SIM_ACCESS_WRITE);
        break;
    case SIM_WORK_EVENT_RECORD:
        clock_assign(&work->u.record.event->race_clock, clock);
        break;
    case SIM_WORK_WAIT:
        if (work->u.wait.happens_after != NULL)
            clock_join(clock, work->u.wait.happens_after);
        break;
    case SIM_WORK_HOST_FUNCTION:
    case SIM_WORK_STREAM_CALLBACK:
    case SIM_WORK_MARKER:
        break;
    case SIM_WORK_KERNEL:
        /* Its loads and stores arrive while it runs; until then it holds
         * back what is recorded after it. */
        kernel_queued(stream, work->u.kernel.launch);
        break;
    }
}

/* ---- memory lifetime ---------------------------------------------------- */

void sim_racecheck_forget(uintptr_t address, size_t bytes)
{
    if (!tracking() || bytes == 0)
        return;
    sim_racecheck_lock();
    if (waiting()) {
        struct shadow_access none = {.actor = HOST_ACTOR};
        struct sim_race_operation *operation = queue_operation(PENDING_FORGET, &none, host_clock());
        if (operation != NULL)
            add_range(operation, address, address + bytes, SIM_ACCESS_WRITE);
    } else {
        erase(address, address + bytes);
    }
    sim_racecheck_unlock();
}

/* The first access in [start, end) that the host, whose clock is `host`,
 * has not synchronized with. */
static const struct shadow_access *unobserved_access(uintptr_t start, uintptr_t end,
                                                     const struct sim_clock *host)
{
    for (struct shadow_interval *node = first_overlapping(start);
         node != NULL && node->start < end; node = RB_NEXT(shadow_tree, &detector.shadow, node)) {
        if (node->written && node->write.actor != HOST_ACTOR &&
            clock_tick(host, node->write.actor) < node->write.tick)
            return &node->write;
        for (unsigned i = 0; i < node->read_count; i++)
            if (node->reads[i].actor != HOST_ACTOR &&
                clock_tick(host, node->reads[i].actor) < node->reads[i].tick)
                return &node->reads[i];
    }
    return NULL;
}

/* `release` is the host's operation (its tick and call site). */
static void release_now(uintptr_t start, uintptr_t end, const struct sim_clock *host,
                        const struct shadow_access *release, const char *entry_name)
{
    const struct shadow_access *in_use = unobserved_access(start, end, host);
    if (in_use != NULL && count_race(release)) {
        char actor[96], site[256], use_site[256];
        describe_actor(in_use->actor, actor, sizeof actor);
        describe_site(release->return_address, site, sizeof site);
        describe_site(in_use->return_address, use_site, sizeof use_site);
        fprintf(stderr,
                "gpusim: race: %s of [%#lx, %#lx) at %s while in use: %s on %s %s it at %s "
                "and the host has not synchronized with it\n",
                entry_name, (unsigned long)start, (unsigned long)end, site, in_use->operation,
                actor, is_write(in_use->mode) ? "writes" : "reads", use_site);
        finish_report();
    }
    erase(start, end);
}

void sim_racecheck_release(uintptr_t address, size_t bytes)
{
    if (!tracking() || bytes == 0)
        return;
    sim_racecheck_lock();
    struct sim_clock *host = host_clock();
    struct shadow_access release = {
        .actor = HOST_ACTOR,
        .tick = clock_advance(host, HOST_ACTOR),
        .operation = sim_call_site.entry_name,
        .return_address = sim_call_site.return_address,
    };
    if (waiting()) {
        struct sim_race_operation *operation = queue_operation(PENDING_RELEASE, &release, host);
        if (operation != NULL) {
            operation->entry_name = sim_call_site.entry_name;
            add_range(operation, address, address + bytes, SIM_ACCESS_WRITE);
        }
    } else {
        release_now(address, address + bytes, host, &release, sim_call_site.entry_name);
    }
    sim_racecheck_unlock();
}

/* ---- process exit ------------------------------------------------------- */

/* Registered at the first cuInit, before the program's own handlers, so it
 * runs after them (and after the GPUSIM_STATS writer). */
static void exit_with_race_status(void)
{
    unsigned long long races = atomic_load(&detector.races);
    if (races == 0)
        return;
    fprintf(stderr, "gpusim: GPUSIM_RACECHECK: %llu stream race%s reported, exit status 66\n",
            races, races == 1 ? "" : "s");
    fflush(NULL);
    _exit(66);
}

void sim_racecheck_initialize(void)
{
    if (!sim_racecheck_enabled())
        return;
    sim_racecheck_lock();
    new_actor(ACTOR_HOST, NULL);
    sim_racecheck_unlock();
    atexit(exit_with_race_status);
}

/* ---- gpusim.h ----------------------------------------------------------- */

SIM_EXPORT unsigned long long gpusim_race_count(void)
{
    return sim_racecheck_race_count();
}

SIM_EXPORT void gpusim_forget_races(void)
{
    atomic_store(&detector.races, 0);
}

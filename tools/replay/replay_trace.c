#include "replay_trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growable_array.h"

const char *replay_position_format(struct replay_position position, char *buffer, size_t size)
{
    switch ((enum replay_origin)position.origin) {
    case REPLAY_ORIGIN_CSV_LINE:
        snprintf(buffer, size, "line %" PRIu32, position.major);
        break;
    case REPLAY_ORIGIN_TRACE_ENTRY:
        snprintf(buffer, size, "device_traces[%" PRIu32 "][%" PRIu32 "]", position.major,
                 position.minor);
        break;
    case REPLAY_ORIGIN_FINAL_BLOCK:
        snprintf(buffer, size, "segments[%" PRIu32 "].blocks[%" PRIu32 "]", position.major,
                 position.minor);
        break;
    }
    return buffer;
}

void replay_trace_destroy(struct replay_trace *trace)
{
    free(trace->events);
    free(trace->streams);
    free(trace->threads);
    *trace = (struct replay_trace){0};
}

void replay_builder_init(struct replay_trace_builder *builder, struct replay_trace *trace,
                         const char *format)
{
    *trace = (struct replay_trace){.format = format};
    *builder = (struct replay_trace_builder){.trace = trace};
    address_map_init(&builder->slot_of_address);
    address_map_init(&builder->stream_index_of);
    address_map_init(&builder->thread_index_of);
}

static void release_builder(struct replay_trace_builder *builder)
{
    address_map_destroy(&builder->slot_of_address);
    address_map_destroy(&builder->stream_index_of);
    address_map_destroy(&builder->thread_index_of);
    free(builder->slots);
    free(builder->inferred);
    builder->slots = NULL;
    builder->inferred = NULL;
}

void replay_builder_abandon(struct replay_trace_builder *builder)
{
    release_builder(builder);
    replay_trace_destroy(builder->trace);
}

static bool out_of_memory(struct read_error *error)
{
    return read_fail(error, "out of host memory while reading the trace");
}

/* The index of a recorded handle (stream or thread id) in `table`. */
static bool intern(struct address_map *index_of, uint64_t **table, size_t *count, size_t *capacity,
                   uint64_t value, uint32_t *index)
{
    /* Most traces use one stream and a few threads: try the newest first. */
    if (*count > 0 && (*table)[*count - 1] == value) {
        *index = (uint32_t)(*count - 1);
        return true;
    }
    if (address_map_get(index_of, value, index))
        return true;
    if (!growable_array_reserve((void **)table, capacity, *count + 1, sizeof **table))
        return false;
    *index = (uint32_t)*count;
    (*table)[(*count)++] = value;
    return address_map_put(index_of, value, *index);
}

static bool new_slot(struct replay_trace_builder *builder, uint64_t address,
                     struct replay_position allocated_at, uint32_t *slot)
{
    struct replay_trace *trace = builder->trace;
    if (trace->slot_count >= UINT32_MAX)
        return false;
    if (!growable_array_reserve((void **)&builder->slots, &builder->slot_capacity,
                                trace->slot_count + 1, sizeof *builder->slots))
        return false;
    *slot = (uint32_t)trace->slot_count++;
    builder->slots[*slot] = (struct replay_slot_record){.allocated_at = allocated_at, .live = true};
    return address_map_put(&builder->slot_of_address, address, *slot);
}

static bool make_event(struct replay_trace_builder *builder, const struct replay_record *record,
                       struct replay_event *event)
{
    struct replay_trace *trace = builder->trace;
    *event = (struct replay_event){
        .size = record->size,
        .original_address = record->address,
        .time_us = record->time_us,
        .position = record->position,
        .action = (uint8_t)record->action,
    };
    return intern(&builder->stream_index_of, &trace->streams, &trace->stream_count,
                  &builder->stream_capacity, record->stream, &event->stream_index) &&
           intern(&builder->thread_index_of, &trace->threads, &trace->thread_count,
                  &builder->thread_capacity, record->thread, &event->thread_index);
}

static bool add_inferred(struct replay_trace_builder *builder, const struct replay_record *record,
                         uint32_t *slot)
{
    struct replay_record allocation = *record;
    allocation.action = REPLAY_ALLOC;
    struct replay_event event;
    if (!make_event(builder, &allocation, &event) ||
        !new_slot(builder, record->address, record->position, slot) ||
        !growable_array_reserve((void **)&builder->inferred, &builder->inferred_capacity,
                                builder->inferred_count + 1, sizeof *builder->inferred))
        return false;
    event.slot = *slot;
    event.inferred = true;
    builder->inferred[builder->inferred_count++] = event;
    return true;
}

bool replay_builder_expect(struct replay_trace_builder *builder, size_t records,
                           struct read_error *error)
{
    struct replay_trace *trace = builder->trace;
    if (!growable_array_reserve((void **)&trace->events, &trace->event_capacity,
                                trace->event_count + records, sizeof *trace->events) ||
        !growable_array_reserve((void **)&builder->slots, &builder->slot_capacity,
                                trace->slot_count + records, sizeof *builder->slots))
        return out_of_memory(error);
    return true;
}

bool replay_builder_add(struct replay_trace_builder *builder, const struct replay_record *record,
                        struct read_error *error)
{
    struct replay_trace *trace = builder->trace;
    char here[64], there[64];

    uint32_t slot;
    bool seen = address_map_get(&builder->slot_of_address, record->address, &slot);
    struct replay_event event;
    if (!make_event(builder, record, &event))
        return out_of_memory(error);

    if (record->action == REPLAY_ALLOC) {
        if (seen && builder->slots[slot].live)
            return read_fail(
                error,
                "%s: allocation at 0x%" PRIx64 ", which is still live "
                "(allocated at %s)",
                replay_position_format(record->position, here, sizeof here), record->address,
                replay_position_format(builder->slots[slot].allocated_at, there, sizeof there));
        if (!new_slot(builder, record->address, record->position, &slot))
            return out_of_memory(error);
        trace->alloc_count++;
    } else {
        if (seen && !builder->slots[slot].live)
            return read_fail(
                error, "%s: free of 0x%" PRIx64 ", already freed at %s",
                replay_position_format(record->position, here, sizeof here), record->address,
                replay_position_format(builder->slots[slot].freed_at, there, sizeof there));
        if (!seen && !add_inferred(builder, record, &slot))
            return out_of_memory(error);
        builder->slots[slot].live = false;
        builder->slots[slot].freed_at = record->position;
        trace->free_count++;
    }
    event.slot = slot;
    if (!growable_array_reserve((void **)&trace->events, &trace->event_capacity,
                                trace->event_count + 1, sizeof *trace->events))
        return out_of_memory(error);
    trace->events[trace->event_count++] = event;
    return true;
}

bool replay_builder_final_block(struct replay_trace_builder *builder,
                                const struct replay_record *block, struct read_error *error)
{
    uint32_t slot;
    if (address_map_get(&builder->slot_of_address, block->address, &slot)) {
        if (builder->slots[slot].live)
            return true;
        char here[64], there[64];
        return read_fail(
            error,
            "%s: block 0x%" PRIx64 " is allocated in the final state, but %s "
            "freed it and the trace never allocated it again",
            replay_position_format(block->position, here, sizeof here), block->address,
            replay_position_format(builder->slots[slot].freed_at, there, sizeof there));
    }
    if (!add_inferred(builder, block, &slot))
        return out_of_memory(error);
    return true;
}

static int compare_original_address(const void *left, const void *right)
{
    const struct replay_event *a = left, *b = right;
    return (a->original_address > b->original_address) -
           (a->original_address < b->original_address);
}

/* The most requested bytes alive at once: no device smaller than this can
 * hold the trace, whatever the allocator does. */
static uint64_t peak_live_bytes(const struct replay_trace *trace)
{
    uint64_t *size_of_slot =
        calloc(trace->slot_count ? trace->slot_count : 1, sizeof *size_of_slot);
    if (!size_of_slot)
        return 0;
    uint64_t live = 0, peak = 0;
    for (size_t index = 0; index < trace->event_count; index++) {
        const struct replay_event *event = &trace->events[index];
        if (event->action == REPLAY_ALLOC) {
            size_of_slot[event->slot] = event->size;
            live += event->size;
            peak = live > peak ? live : peak;
        } else {
            live -= size_of_slot[event->slot];
        }
    }
    free(size_of_slot);
    return peak;
}

bool replay_builder_finish(struct replay_trace_builder *builder, struct read_error *error)
{
    struct replay_trace *trace = builder->trace;
    size_t inferred = builder->inferred_count;
    if (inferred) {
        if (!growable_array_reserve((void **)&trace->events, &trace->event_capacity,
                                    trace->event_count + inferred, sizeof *trace->events)) {
            replay_builder_abandon(builder);
            return out_of_memory(error);
        }
        qsort(builder->inferred, inferred, sizeof *builder->inferred, compare_original_address);
        memmove(trace->events + inferred, trace->events,
                trace->event_count * sizeof *trace->events);
        memcpy(trace->events, builder->inferred, inferred * sizeof *trace->events);
        trace->event_count += inferred;
    }
    trace->inferred_count = inferred;
    trace->peak_live_bytes = peak_live_bytes(trace);
    release_builder(builder);
    return true;
}

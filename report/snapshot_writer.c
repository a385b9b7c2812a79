/* PyTorch's snapshot structure (torch.cuda.memory._snapshot()): segments with
 * their blocks, the trace of every device, the allocator settings. Written
 * through a tree emitter, so JSON and pickle come from one walk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_config.h"
#include "gpucache_report.h"
#include "tree_emitter.h"

static const char *const state_names[] = {
    [GPUCACHE_BLOCK_ACTIVE_ALLOCATED] = "active_allocated",
    [GPUCACHE_BLOCK_ACTIVE_PENDING_FREE] = "active_pending_free",
    [GPUCACHE_BLOCK_INACTIVE] = "inactive",
};

static void key_unsigned(struct tree_emitter *emitter, const char *key, uint64_t value)
{
    emitter->encoding->key(emitter, key);
    emitter->encoding->unsigned_integer(emitter, value);
}

static void key_signed(struct tree_emitter *emitter, const char *key, int64_t value)
{
    emitter->encoding->key(emitter, key);
    emitter->encoding->signed_integer(emitter, value);
}

static void key_string(struct tree_emitter *emitter, const char *key, const char *value)
{
    emitter->encoding->key(emitter, key);
    emitter->encoding->string(emitter, value);
}

static void key_boolean(struct tree_emitter *emitter, const char *key, bool value)
{
    emitter->encoding->key(emitter, key);
    emitter->encoding->boolean(emitter, value);
}

/* A stream handle; the allocator's own markers above 2^53 (the key of
 * destroyed streams' blocks) would not survive the viewer's doubles and are
 * written as -1. */
static void key_stream(struct tree_emitter *emitter, uint64_t stream)
{
    if (stream >= UINT64_C(1) << 53)
        key_signed(emitter, "stream", -1);
    else
        key_unsigned(emitter, "stream", stream);
}

static void key_empty_list(struct tree_emitter *emitter, const char *key)
{
    emitter->encoding->key(emitter, key);
    emitter->encoding->begin_list(emitter);
    emitter->encoding->end_list(emitter);
}

/* What writing frames needs: the stacks, their symbolizer, and the stack
 * of each live block's allocation (from the newest alloc event at its
 * address). */
struct frame_source {
    struct gpucache_stack_table *stacks; /* NULL: no frames */
    struct gpucache_symbolizer *symbolizer;
    uint64_t *block_addresses; /* open addressing; 0: empty */
    uint32_t *block_stacks;
    size_t slot_count;         /* a power of two; 0: no map */
};

static size_t block_slot(const struct frame_source *frames, uint64_t address)
{
    size_t mask = frames->slot_count - 1;
    size_t slot = (size_t)(address >> 9) & mask;
    while (frames->block_addresses[slot] != 0 && frames->block_addresses[slot] != address)
        slot = (slot + 1) & mask;
    return slot;
}

static void frame_source_init(struct frame_source *frames, const struct gpucache_snapshot *snapshot)
{
    memset(frames, 0, sizeof *frames);
    if (!snapshot->stacks || gpucache_stack_table_count(snapshot->stacks) == 0)
        return;
    frames->stacks = snapshot->stacks;
    frames->symbolizer = gpucache_symbolizer_create();
    size_t events = 0;
    for (size_t device = 0; device < snapshot->device_count; device++)
        events += snapshot->device_traces[device].count;
    size_t slot_count = 16;
    while (slot_count < 2 * events)
        slot_count *= 2;
    frames->block_addresses = calloc(slot_count, sizeof *frames->block_addresses);
    frames->block_stacks = calloc(slot_count, sizeof *frames->block_stacks);
    if (!frames->block_addresses || !frames->block_stacks)
        return;
    frames->slot_count = slot_count;
    for (size_t device = 0; device < snapshot->device_count; device++) {
        const struct gpucache_snapshot_trace *trace = &snapshot->device_traces[device];
        for (size_t index = 0; index < trace->count; index++) {
            const struct gpucache_event *event = &trace->events[index];
            if (event->action != GPUCACHE_EVENT_ALLOC || event->address == 0)
                continue;
            size_t slot = block_slot(frames, event->address);
            frames->block_addresses[slot] = event->address;
            frames->block_stacks[slot] = event->stack;
        }
    }
}

static void frame_source_free(struct frame_source *frames)
{
    gpucache_symbolizer_destroy(frames->symbolizer);
    free(frames->block_addresses);
    free(frames->block_stacks);
}

static uint32_t block_stack(const struct frame_source *frames, uint64_t address)
{
    if (frames->slot_count == 0 || address == 0)
        return 0;
    size_t slot = block_slot(frames, address);
    return frames->block_addresses[slot] == address ? frames->block_stacks[slot] : 0;
}

/* "frames": [{filename, line, name}, ...], innermost first, as PyTorch
 * writes them. */
static void key_frames(struct tree_emitter *emitter, const struct frame_source *frames,
                       uint32_t stack)
{
    const struct tree_emitter_encoding *encode = emitter->encoding;
    encode->key(emitter, "frames");
    encode->begin_list(emitter);
    const uintptr_t *addresses = NULL;
    size_t depth = frames->stacks ? gpucache_stack_table_get(frames->stacks, stack, &addresses) : 0;
    for (size_t index = 0; index < depth; index++) {
        const struct gpucache_frame *frame = gpucache_symbolize(frames->symbolizer, addresses[index]);
        encode->begin_dict(emitter);
        key_string(emitter, "filename", frame->filename);
        key_unsigned(emitter, "line", frame->line);
        key_string(emitter, "name", frame->name);
        encode->end_dict(emitter);
    }
    encode->end_list(emitter);
}

static void write_block(struct tree_emitter *emitter, const struct frame_source *frames,
                        uint64_t address, const struct gpucache_snapshot_block *block)
{
    const struct tree_emitter_encoding *encode = emitter->encoding;
    encode->begin_dict(emitter);
    key_unsigned(emitter, "address", address);
    key_unsigned(emitter, "size", block->size);
    key_unsigned(emitter, "requested_size", block->requested_size);
    key_string(emitter, "state",
               block->state <= GPUCACHE_BLOCK_INACTIVE ? state_names[block->state] : "inactive");
    key_frames(emitter, frames,
               block->state == GPUCACHE_BLOCK_INACTIVE ? 0 : block_stack(frames, address));
    encode->end_dict(emitter);
}

static void write_segment(struct tree_emitter *emitter, const struct frame_source *frames,
                          const struct gpucache_snapshot *snapshot,
                          const struct gpucache_snapshot_segment *segment)
{
    const struct tree_emitter_encoding *encode = emitter->encoding;
    const struct gpucache_snapshot_block *blocks = snapshot->blocks + segment->first_block;
    uint64_t allocated = 0, active = 0, requested = 0;
    for (size_t index = 0; index < segment->block_count; index++) {
        if (blocks[index].state == GPUCACHE_BLOCK_INACTIVE)
            continue;
        if (blocks[index].state == GPUCACHE_BLOCK_ACTIVE_ALLOCATED)
            allocated += blocks[index].size;
        active += blocks[index].size;
        requested += blocks[index].requested_size;
    }
    encode->begin_dict(emitter);
    key_signed(emitter, "device", segment->device);
    key_unsigned(emitter, "address", segment->address);
    key_unsigned(emitter, "total_size", segment->total_size);
    key_unsigned(emitter, "allocated_size", allocated);
    key_unsigned(emitter, "active_size", active);
    key_unsigned(emitter, "requested_size", requested);
    key_stream(emitter, segment->stream);
    key_string(emitter, "segment_type", segment->large_pool ? "large" : "small");
    /* PyTorch writes a tuple; tuples are not among the opcodes we allow
     * ourselves, and JSON has none: a two-element list reads the same. */
    encode->key(emitter, "segment_pool_id");
    encode->begin_list(emitter);
    encode->signed_integer(emitter, 0);
    encode->signed_integer(emitter, 0);
    encode->end_list(emitter);
    key_boolean(emitter, "is_expandable", segment->is_expandable);
    key_empty_list(emitter, "frames");
    encode->key(emitter, "blocks");
    encode->begin_list(emitter);
    uint64_t address = segment->address;
    for (size_t index = 0; index < segment->block_count; index++) {
        write_block(emitter, frames, address, &blocks[index]);
        address += blocks[index].size;
    }
    encode->end_list(emitter);
    encode->end_dict(emitter);
}

static void write_event(struct tree_emitter *emitter, const struct frame_source *frames,
                        const struct gpucache_event *event)
{
    const struct tree_emitter_encoding *encode = emitter->encoding;
    encode->begin_dict(emitter);
    key_string(emitter, "action", gpucache_event_action_name(event->action));
    if (event->action == GPUCACHE_EVENT_OOM)
        key_unsigned(emitter, "device_free", event->address);
    else
        key_unsigned(emitter, "addr", event->address);
    key_unsigned(emitter, "size", event->size);
    key_stream(emitter, event->stream);
    key_unsigned(emitter, "time_us", event->time_ns / 1000);
    key_frames(emitter, frames, event->stack);
    encode->end_dict(emitter);
}

static void write_settings(struct tree_emitter *emitter, const struct gpucache_snapshot *snapshot)
{
    const struct tree_emitter_encoding *encode = emitter->encoding;
    const struct gpucache_config *config = snapshot->config;
    encode->begin_dict(emitter);
    key_string(emitter, "PYTORCH_CUDA_ALLOC_CONF",
               snapshot->settings_text ? snapshot->settings_text : "");
    key_signed(emitter, "max_split_size",
               config->max_split_size == UINT64_MAX ? -1 : (int64_t)config->max_split_size);
    encode->key(emitter, "garbage_collection_threshold");
    encode->real(emitter, config->garbage_collection_threshold);
    key_boolean(emitter, "expandable_segments", config->expandable_segments);
    key_unsigned(emitter, "pinned_num_register_threads", config->pinned_num_register_threads);
    key_boolean(emitter, "release_lock_on_cudamalloc", config->release_lock_on_cudamalloc);
    key_boolean(emitter, "pinned_use_cuda_host_register", config->pinned_use_cuda_host_register);
    key_boolean(emitter, "graph_capture_record_stream_reuse",
                config->graph_capture_record_stream_reuse);
    encode->key(emitter, "roundup_power2_divisions");
    encode->begin_dict(emitter);
    for (int bucket = 0; bucket < GPUCACHE_ROUNDUP_BUCKETS; bucket++) {
        char name[16];
        snprintf(name, sizeof name, "%u", 1u << bucket);
        key_unsigned(emitter, name, config->roundup_power2_divisions[bucket]);
    }
    encode->end_dict(emitter);
    encode->end_dict(emitter);
}

static bool write_snapshot(int fd, const struct gpucache_snapshot *snapshot,
                           const struct tree_emitter_encoding *encoding)
{
    struct report_output output;
    report_output_init(&output, fd);
    struct tree_emitter emitter;
    tree_emitter_begin(&emitter, encoding, &output);
    struct frame_source frames;
    frame_source_init(&frames, snapshot);
    encoding->begin_dict(&emitter);

    encoding->key(&emitter, "segments");
    encoding->begin_list(&emitter);
    for (size_t index = 0; index < snapshot->segment_count; index++)
        write_segment(&emitter, &frames, snapshot, &snapshot->segments[index]);
    encoding->end_list(&emitter);

    encoding->key(&emitter, "device_traces");
    encoding->begin_list(&emitter);
    for (size_t device = 0; device < snapshot->device_count; device++) {
        encoding->begin_list(&emitter);
        const struct gpucache_snapshot_trace *trace = &snapshot->device_traces[device];
        for (size_t index = 0; index < trace->count; index++)
            write_event(&emitter, &frames, &trace->events[index]);
        encoding->end_list(&emitter);
    }
    encoding->end_list(&emitter);

    if (snapshot->config) {
        encoding->key(&emitter, "allocator_settings");
        write_settings(&emitter, snapshot);
    }
    key_empty_list(&emitter, "external_annotations");
    encoding->end_dict(&emitter);
    tree_emitter_end(&emitter);
    frame_source_free(&frames);
    return report_output_finish(&output);
}

bool gpucache_snapshot_write_json(int fd, const struct gpucache_snapshot *snapshot)
{
    return write_snapshot(fd, snapshot, &tree_emitter_json);
}

bool gpucache_snapshot_write_pickle(int fd, const struct gpucache_snapshot *snapshot)
{
    return write_snapshot(fd, snapshot, &tree_emitter_pickle);
}

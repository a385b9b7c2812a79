/* gpucache_snapshot_builder: collects segments and blocks as the allocator's
 * visitor reports them, then sorts the segments by address. */
#include <stdlib.h>
#include <string.h>

#include "gpucache_report.h"

void gpucache_snapshot_builder_init(struct gpucache_snapshot_builder *builder,
                                    const struct gpucache_config *config,
                                    const char *settings_text)
{
    memset(builder, 0, sizeof *builder);
    builder->snapshot.config = config;
    builder->snapshot.settings_text = settings_text;
}

/* Makes room for one more element of `element_size` bytes. */
static bool reserve(struct gpucache_snapshot_builder *builder, void **array, size_t count,
                    size_t *capacity, size_t element_size)
{
    if (builder->failed)
        return false;
    if (count < *capacity)
        return true;
    size_t grown = *capacity ? *capacity * 2 : 16;
    void *bigger = realloc(*array, grown * element_size);
    if (!bigger) {
        builder->failed = true;
        return false;
    }
    *array = bigger;
    *capacity = grown;
    return true;
}

void gpucache_snapshot_builder_segment(struct gpucache_snapshot_builder *builder, int device,
                                       uint64_t address, uint64_t stream, bool is_expandable,
                                       bool large_pool)
{
    size_t count = builder->snapshot.segment_count;
    if (!reserve(builder, (void **)&builder->segments, count, &builder->segment_capacity,
                 sizeof *builder->segments))
        return;
    builder->segments[count] = (struct gpucache_snapshot_segment){
        .device = device,
        .address = address,
        .stream = stream,
        .is_expandable = is_expandable,
        .large_pool = large_pool,
        .first_block = builder->snapshot.block_count,
    };
    builder->snapshot.segment_count++;
}

void gpucache_snapshot_builder_block(struct gpucache_snapshot_builder *builder, uint64_t size,
                                     uint64_t requested_size, enum gpucache_block_state state)
{
    size_t count = builder->snapshot.block_count;
    if (builder->snapshot.segment_count == 0 ||
        !reserve(builder, (void **)&builder->blocks, count, &builder->block_capacity,
                 sizeof *builder->blocks))
        return;
    builder->blocks[count] = (struct gpucache_snapshot_block){
        .size = size,
        .requested_size = state == GPUCACHE_BLOCK_INACTIVE ? 0 : requested_size,
        .state = (uint8_t)state,
    };
    builder->snapshot.block_count++;
    struct gpucache_snapshot_segment *segment =
        &builder->segments[builder->snapshot.segment_count - 1];
    segment->block_count++;
    segment->total_size += size;
}

void gpucache_snapshot_builder_visit(void *context, const struct gpucache_segment_info *segment)
{
    struct gpucache_snapshot_builder *builder = context;
    gpucache_snapshot_builder_segment(builder, builder->visit_device, segment->address,
                                      (uint64_t)segment->stream, segment->expandable,
                                      !segment->small_pool);
    for (size_t index = 0; index < segment->block_count; index++) {
        const struct gpucache_block_info *block = &segment->blocks[index];
        gpucache_snapshot_builder_block(builder, block->size, block->requested_size,
                                        block->state);
    }
}

void gpucache_snapshot_builder_trace(struct gpucache_snapshot_builder *builder, int device,
                                     const struct gpucache_event *events, size_t count)
{
    if (builder->failed || device < 0)
        return;
    size_t needed = (size_t)device + 1;
    if (needed > builder->snapshot.device_count) {
        struct gpucache_snapshot_trace *bigger =
            realloc(builder->traces, needed * sizeof *builder->traces);
        if (!bigger) {
            builder->failed = true;
            return;
        }
        for (size_t index = builder->snapshot.device_count; index < needed; index++)
            bigger[index] = (struct gpucache_snapshot_trace){NULL, 0};
        builder->traces = bigger;
        builder->snapshot.device_count = needed;
    }
    builder->traces[device] = (struct gpucache_snapshot_trace){events, count};
}

static int compare_addresses(const void *a, const void *b)
{
    const struct gpucache_snapshot_segment *left = a, *right = b;
    return (left->address > right->address) - (left->address < right->address);
}

const struct gpucache_snapshot *gpucache_snapshot_builder_finish(
    struct gpucache_snapshot_builder *builder)
{
    if (builder->failed)
        return NULL;
    /* A snapshot taken before the first allocation has no segments, and
     * qsort may not be given a NULL array even then. */
    if (builder->snapshot.segment_count != 0)
        qsort(builder->segments, builder->snapshot.segment_count, sizeof *builder->segments,
              compare_addresses);
    builder->snapshot.segments = builder->segments;
    builder->snapshot.blocks = builder->blocks;
    builder->snapshot.device_traces = builder->traces;
    return &builder->snapshot;
}

void gpucache_snapshot_builder_free(struct gpucache_snapshot_builder *builder)
{
    free(builder->segments);
    free(builder->blocks);
    free(builder->traces);
    memset(builder, 0, sizeof *builder);
}

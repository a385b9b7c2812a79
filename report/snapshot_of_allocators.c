/* A snapshot of live allocators: segments from the allocator's visitor and
 * the trace copied while the allocator is still locked, so no event can
 * fall between the two. */
#include <stdlib.h>
#include <string.h>

#include "gpucache_report.h"

enum gpucache_snapshot_encoding gpucache_snapshot_encoding_for_path(const char *path)
{
    static const char *const pickle_suffixes[] = {".pickle", ".pkl", ".pt"};
    size_t length = strlen(path);
    for (size_t index = 0; index < sizeof pickle_suffixes / sizeof *pickle_suffixes; index++) {
        size_t suffix = strlen(pickle_suffixes[index]);
        if (length >= suffix && strcmp(path + length - suffix, pickle_suffixes[index]) == 0)
            return GPUCACHE_SNAPSHOT_PICKLE;
    }
    return GPUCACHE_SNAPSHOT_JSON;
}

struct device_capture {
    struct gpucache_snapshot_builder *builder;
    struct gpucache_event_log *log;
    int device;
    struct gpucache_event *events; /* the copy, owned here */
    size_t count;
};

static void visit_segment(void *context, const struct gpucache_segment_info *segment)
{
    struct device_capture *capture = context;
    gpucache_snapshot_builder_visit(capture->builder, segment);
}

static void copy_trace(void *context)
{
    struct device_capture *capture = context;
    if (capture->log)
        capture->events = gpucache_event_log_copy(capture->log, capture->device, &capture->count);
}

bool gpucache_snapshot_write_allocators(int fd, enum gpucache_snapshot_encoding encoding,
                                        const struct gpucache_snapshot_source *source)
{
    struct gpucache_snapshot_builder builder;
    gpucache_snapshot_builder_init(&builder, source->config, source->settings_text);
    builder.snapshot.stacks = source->stacks;
    struct device_capture *captures = calloc(source->device_count + 1, sizeof *captures);
    bool ok = captures != NULL;
    for (size_t device = 0; ok && device < source->device_count; device++) {
        struct device_capture *capture = &captures[device];
        *capture = (struct device_capture){&builder, source->log, (int)device, NULL, 0};
        if (source->allocators[device] == NULL) {
            /* No allocator: its events (if any) stand alone, with no segment. */
            copy_trace(capture);
        } else {
            builder.visit_device = (int)device;
            ok = gpucache_allocator_visit_segments_then(source->allocators[device], visit_segment,
                                                        copy_trace, capture);
        }
        gpucache_snapshot_builder_trace(&builder, (int)device, capture->events, capture->count);
    }
    const struct gpucache_snapshot *snapshot = ok ? gpucache_snapshot_builder_finish(&builder) : NULL;
    if (snapshot)
        ok = encoding == GPUCACHE_SNAPSHOT_PICKLE ? gpucache_snapshot_write_pickle(fd, snapshot)
                                                  : gpucache_snapshot_write_json(fd, snapshot);
    else
        ok = false;
    for (size_t device = 0; captures && device < source->device_count; device++)
        free(captures[device].events);
    free(captures);
    gpucache_snapshot_builder_free(&builder);
    return ok;
}

/* The event trace in gpucache's compact text format and as RMM's replay CSV. */
#include <inttypes.h>
#include <stdlib.h>

#include "gpucache_report.h"
#include "report_output.h"
#include "trace_format.h"

const char *const trace_compact_names[GPUCACHE_EVENT_ACTION_COUNT] = {
    [GPUCACHE_EVENT_ALLOC] = "a",          [GPUCACHE_EVENT_FREE_REQUESTED] = "fr",
    [GPUCACHE_EVENT_FREE_COMPLETED] = "fc", [GPUCACHE_EVENT_SEGMENT_ALLOC] = "sa",
    [GPUCACHE_EVENT_SEGMENT_FREE] = "sf",  [GPUCACHE_EVENT_SEGMENT_MAP] = "sm",
    [GPUCACHE_EVENT_SEGMENT_UNMAP] = "su", [GPUCACHE_EVENT_OOM] = "oom",
    [GPUCACHE_EVENT_SNAPSHOT] = "snap",
};

/* Each stack once, in the order of its first event: "stack <id> <depth>",
 * then one "frame" line per frame with tab-separated fields (names may
 * hold spaces). */
static void write_stacks(struct report_output *output, const struct gpucache_event *events,
                         size_t count, struct gpucache_stack_table *stacks)
{
    size_t known = gpucache_stack_table_count(stacks);
    bool *written = known ? calloc(known + 1, sizeof *written) : NULL;
    struct gpucache_symbolizer *symbolizer = written ? gpucache_symbolizer_create() : NULL;
    for (size_t index = 0; written && index < count; index++) {
        uint32_t id = events[index].stack;
        if (id == 0 || id > known || written[id])
            continue;
        written[id] = true;
        const uintptr_t *frames = NULL;
        size_t depth = gpucache_stack_table_get(stacks, id, &frames);
        report_output_format(output, "stack %" PRIu32 " %zu\n", id, depth);
        for (size_t frame = 0; frame < depth; frame++) {
            const struct gpucache_frame *named = gpucache_symbolize(symbolizer, frames[frame]);
            report_output_format(output, "frame\t%s\t%s\t%u\n", named->name, named->filename,
                                 named->line);
        }
    }
    gpucache_symbolizer_destroy(symbolizer);
    free(written);
}

bool gpucache_trace_write_compact(int fd, const struct gpucache_event *events, size_t count,
                                  struct gpucache_stack_table *stacks)
{
    struct report_output output;
    report_output_init(&output, fd);
    uint64_t previous = count ? events[0].time_ns : 0;
    report_output_format(&output, "gpucache-trace 2 start_ns %" PRIu64 " events %zu\n", previous,
                         count);
    for (size_t index = 0; index < count; index++) {
        const struct gpucache_event *event = &events[index];
        if (event->action >= GPUCACHE_EVENT_ACTION_COUNT)
            continue;
        /* Events of several threads may be appended slightly out of clock
         * order; a negative delta is written as such. */
        int64_t delta = (int64_t)(event->time_ns - previous);
        previous = event->time_ns;
        report_output_format(&output,
                             "%" PRId64 " %s %d %" PRIx64 " %" PRIu64 " %" PRIx64 " %" PRIu32
                             " %" PRIu64 " %" PRIu32 "\n",
                             delta, trace_compact_names[event->action], event->device, event->address,
                             event->size, event->stream, event->thread, event->block_size,
                             event->stack);
    }
    if (stacks)
        write_stacks(&output, events, count, stacks);
    return report_output_finish(&output);
}

bool gpucache_trace_write_rmm_csv(int fd, const struct gpucache_event *events, size_t count)
{
    struct report_output output;
    report_output_init(&output, fd);
    report_output_string(&output, "Thread,Time,Action,Pointer,Size,Stream\n");
    /* RMM prints the time of day; hours keep counting past midnight so the
     * column stays in order for runs that cross it. */
    const uint64_t nanoseconds_per_day = UINT64_C(86400) * 1000000000u;
    uint64_t day_start = count ? events[0].time_ns - events[0].time_ns % nanoseconds_per_day : 0;
    for (size_t index = 0; index < count; index++) {
        const struct gpucache_event *event = &events[index];
        const char *action;
        uint64_t pointer = event->address;
        switch (event->action) {
        case GPUCACHE_EVENT_ALLOC:
            action = "allocate";
            break;
        case GPUCACHE_EVENT_FREE_REQUESTED:
            /* The program's free, as RMM logs it; when the block became
             * reusable again is the allocator's business, not the program's. */
            action = "free";
            break;
        case GPUCACHE_EVENT_OOM:
            action = "allocate failure";
            pointer = 0;
            break;
        default:
            continue;
        }
        uint64_t since_day = event->time_ns >= day_start ? event->time_ns - day_start : 0;
        uint64_t micros = since_day / 1000;
        uint64_t seconds = micros / 1000000;
        report_output_format(&output,
                             "%" PRIu32 ",%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%06" PRIu64
                             ",%s,0x%" PRIx64 ",%" PRIu64 ",0x%" PRIx64 "\n",
                             event->thread, seconds / 3600, seconds / 60 % 60, seconds % 60,
                             micros % 1000000, action, pointer, event->size, event->stream);
    }
    return report_output_finish(&output);
}

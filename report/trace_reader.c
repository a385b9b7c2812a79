/* gpucache_trace_read_compact: the compact trace format back into events
 * (for `gpucache ab`'s charts, and anyone scripting around the trace). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucache_report.h"
#include "trace_format.h"

static int action_named(const char *name)
{
    for (int action = 0; action < GPUCACHE_EVENT_ACTION_COUNT; action++)
        if (strcmp(name, trace_compact_names[action]) == 0)
            return action;
    return -1;
}

struct gpucache_event *gpucache_trace_read_compact(const char *text, size_t *count, char *error,
                                                   size_t error_size)
{
    *count = 0;
    uint64_t time = 0;
    size_t declared = 0;
    int used = 0;
    int version = 0;
    if (sscanf(text, "gpucache-trace %d start_ns %" SCNu64 " events %zu%n", &version, &time,
               &declared, &used) != 3 ||
        (text[used] != '\n' && text[used] != '\0')) {
        snprintf(error, error_size,
                 "line 1: not a gpucache trace (expected 'gpucache-trace 2 start_ns N events N')");
        return NULL;
    }
    if (version != 1 && version != 2) {
        snprintf(error, error_size,
                 "line 1: gpucache trace version %d (this build reads versions 1 and 2)", version);
        return NULL;
    }
    /* Version 2 adds the block size and the stack id; version 1 files
     * still read. */
    int expected_fields = version == 1 ? 7 : 9;
    struct gpucache_event *events = declared ? malloc(declared * sizeof *events) : NULL;
    if (declared && !events) {
        snprintf(error, error_size, "line 1: no memory for %zu events", declared);
        return NULL;
    }
    const char *line = strchr(text, '\n');
    size_t number = 1;
    while (line && line[1] != '\0') {
        line++;
        number++;
        /* The stacks after the events: their frames are for people and
         * viewers; the events keep the ids. */
        if (version >= 2 && *count == declared &&
            (strncmp(line, "stack ", 6) == 0 || strncmp(line, "frame\t", 6) == 0)) {
            line = strchr(line, '\n');
            continue;
        }
        int64_t delta;
        char action[8];
        int device;
        uint32_t thread;
        struct gpucache_event event = {0};
        int length = 0;
        int fields = version == 1
                         ? sscanf(line,
                                  "%" SCNd64 " %7s %d %" SCNx64 " %" SCNu64 " %" SCNx64 " %" SCNu32
                                  "%n",
                                  &delta, action, &device, &event.address, &event.size,
                                  &event.stream, &thread, &length)
                         : sscanf(line,
                                  "%" SCNd64 " %7s %d %" SCNx64 " %" SCNu64 " %" SCNx64 " %" SCNu32
                                  " %" SCNu64 " %" SCNu32 "%n",
                                  &delta, action, &device, &event.address, &event.size,
                                  &event.stream, &thread, &event.block_size, &event.stack,
                                  &length);
        int kind = fields == expected_fields ? action_named(action) : -1;
        if (kind < 0 || (line[length] != '\n' && line[length] != '\0') || *count >= declared) {
            snprintf(error, error_size,
                     *count >= declared && kind >= 0
                         ? "line %zu: more events than the header's count"
                     : version == 1
                         ? "line %zu: expected '<delta_ns> <action> <device> <address hex> <size> "
                           "<stream hex> <thread>'"
                         : "line %zu: expected '<delta_ns> <action> <device> <address hex> <size> "
                           "<stream hex> <thread> <block size> <stack>'",
                     number);
            free(events);
            *count = 0;
            return NULL;
        }
        time += (uint64_t)delta;
        event.time_ns = time;
        event.thread = thread;
        event.device = (int16_t)device;
        event.action = (uint8_t)kind;
        events[(*count)++] = event;
        line = strchr(line, '\n');
    }
    if (*count != declared) {
        snprintf(error, error_size, "line %zu: %zu events, the header says %zu", number, *count,
                 declared);
        free(events);
        *count = 0;
        return NULL;
    }
    return events;
}

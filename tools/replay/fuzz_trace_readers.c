/* libFuzzer target: any bytes given to the trace readers (CSV, pickle or
 * JSON snapshot, chosen by content as the command does) must give either a
 * consistent trace or one printable error line, never a crash, a leak or
 * undefined behaviour. */
#include <stdlib.h>
#include <string.h>

#include "rmm_csv_reader.h"
#include "snapshot_reader.h"

static void check(int condition)
{
    if (!condition)
        __builtin_trap();
}

static void check_error_line(const char *message)
{
    check(message[0] != '\0');
    for (const char *cursor = message; *cursor; cursor++)
        check(*cursor >= 0x20 && *cursor < 0x7f);
}

/* Every free ends an allocation made before it, and slots stay in range. */
static void check_trace(const struct replay_trace *trace)
{
    unsigned char *live = calloc(trace->slot_count ? trace->slot_count : 1, 1);
    check(live != NULL);
    check(trace->inferred_count <= trace->event_count);
    for (size_t index = 0; index < trace->event_count; index++) {
        const struct replay_event *event = &trace->events[index];
        check(event->slot < trace->slot_count);
        check(event->stream_index < trace->stream_count);
        check(event->inferred == (index < trace->inferred_count));
        if (event->action == REPLAY_ALLOC) {
            check(!live[event->slot]);
            live[event->slot] = 1;
        } else {
            check(live[event->slot]);
            live[event->slot] = 2;
        }
    }
    free(live);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    struct replay_trace trace;
    struct read_error error = {{0}};
    bool ok = snapshot_recognised(data, size)
                  ? snapshot_read(data, size, SNAPSHOT_ANY_DEVICE, &trace, &error)
                  : rmm_csv_read((const char *)data, size, &trace, &error);
    if (ok) {
        check_trace(&trace);
        replay_trace_destroy(&trace);
    } else {
        check_error_line(error.message);
    }
    return 0;
}

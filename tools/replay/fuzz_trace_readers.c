/* libFuzzer target: any bytes given to the trace readers (CSV, pickle or
 * JSON snapshot, chosen by content as the command does) must give either a
 * consistent trace or one printable error line, never a crash, a leak or
 * undefined behaviour. A pickle must also decode to the same values, or the
 * same error, whether the values under 'frames' are skipped or not. */
#include <stdlib.h>
#include <string.h>

#include "pickle_reader.h"
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

/* The memo lets a small input stand for a huge tree: a comparison stops
 * after this many values, or this deep, taking the rest as equal. */
struct comparison {
    size_t values_left;
};

#define COMPARISON_DEPTH 200

static bool is_frames_key(const struct data_value *key)
{
    return data_string_is(key, "frames");
}

/* Whether `kept` (decoded with skipping) holds what `full` does, but for the
 * values under 'frames' in dicts. */
static bool same_values(const struct data_value *full, const struct data_value *kept,
                        struct comparison *comparison, int depth)
{
    if (depth > COMPARISON_DEPTH || comparison->values_left == 0)
        return true;
    comparison->values_left--;
    if (full->kind != kept->kind)
        return false;
    switch (full->kind) {
    case DATA_NONE:
        return true;
    case DATA_BOOL:
        return full->boolean == kept->boolean;
    case DATA_INT:
        return full->too_wide == kept->too_wide && (full->too_wide || full->integer == kept->integer);
    case DATA_FLOAT:
        return memcmp(&full->real, &kept->real, sizeof full->real) == 0;
    case DATA_STRING:
    case DATA_BYTES:
        return full->text.length == kept->text.length &&
               memcmp(full->text.bytes, kept->text.bytes, full->text.length) == 0;
    case DATA_LIST:
    case DATA_TUPLE:
    case DATA_DICT:
        break;
    }
    if (full->sequence.count != kept->sequence.count)
        return false;
    bool dict = full->kind == DATA_DICT;
    size_t items = dict ? 2 * full->sequence.count : full->sequence.count;
    for (size_t index = 0; index < items; index++) {
        if (dict && index % 2 == 1 && is_frames_key(full->sequence.items[index - 1]))
            continue;
        if (!same_values(full->sequence.items[index], kept->sequence.items[index], comparison,
                         depth + 1))
            return false;
    }
    return true;
}

static void check_skipping(const unsigned char *data, size_t size)
{
    static const char *const frames[] = {"frames"};
    struct data_document full, kept;
    struct read_error full_error = {{0}}, kept_error = {{0}};
    bool full_ok = pickle_read(data, size, &full, &full_error);
    bool kept_ok = pickle_read_skipping(data, size, frames, 1, &kept, &kept_error);
    check(full_ok == kept_ok);
    if (full_ok) {
        struct comparison comparison = {.values_left = 100000};
        check(same_values(full.root, kept.root, &comparison, 0));
        data_document_destroy(&full);
        data_document_destroy(&kept);
    } else {
        check(strcmp(full_error.message, kept_error.message) == 0);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size > 0 && data[0] == 0x80)
        check_skipping(data, size);
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

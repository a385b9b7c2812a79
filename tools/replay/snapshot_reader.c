#include "snapshot_reader.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_reader.h"
#include "pickle_reader.h"

/* Whether `value` is the string `text` of `length` bytes; with both
 * constants the comparison compiles inline. */
static inline bool text_is(const struct data_value *value, const char *text, size_t length)
{
    return value->kind == DATA_STRING && value->text.length == length &&
           memcmp(value->text.bytes, text, length) == 0;
}

#define TEXT_IS(value, literal) text_is(value, literal, sizeof literal - 1)

/* Every action PyTorch records; only alloc and the chosen free move memory. */
enum action {
    ACTION_ALLOC,
    ACTION_FREE_REQUESTED,
    ACTION_FREE_COMPLETED,
    ACTION_OTHER, /* known, moves nothing */
    ACTION_UNKNOWN,
};

static enum action action_of(const struct data_value *action)
{
    if (action->kind != DATA_STRING)
        return ACTION_UNKNOWN;
    /* The length tells most apart before any byte is compared. */
    if (TEXT_IS(action, "alloc"))
        return ACTION_ALLOC;
    if (TEXT_IS(action, "free_requested"))
        return ACTION_FREE_REQUESTED;
    if (TEXT_IS(action, "free_completed"))
        return ACTION_FREE_COMPLETED;
    if (TEXT_IS(action, "segment_alloc") || TEXT_IS(action, "segment_free") ||
        TEXT_IS(action, "segment_map") || TEXT_IS(action, "segment_unmap") ||
        TEXT_IS(action, "oom") || TEXT_IS(action, "snapshot") || TEXT_IS(action, "annotate"))
        return ACTION_OTHER;
    return ACTION_UNKNOWN;
}

/* The values of the keys the replay reads in a trace entry, a segment and
 * a block, found in one pass over the dict's pairs instead of a search per
 * key: the key's length picks the few names to compare. A repeated key
 * keeps its last value, as data_dict_get does; an absent one is NULL. */
enum entry_field { ENTRY_ACTION, ENTRY_ADDR, ENTRY_SIZE, ENTRY_STREAM, ENTRY_TIME_US, ENTRY_FIELDS };
enum segment_field { SEGMENT_DEVICE, SEGMENT_BLOCKS, SEGMENT_ADDRESS, SEGMENT_STREAM, SEGMENT_FIELDS };
enum block_field { BLOCK_STATE, BLOCK_SIZE, BLOCK_ADDRESS, BLOCK_REQUESTED_SIZE, BLOCK_FIELDS };

enum dict_shape { SHAPE_ENTRY, SHAPE_SEGMENT, SHAPE_BLOCK };

/* The field of a dict of `shape` that `key` names, or -1. */
static int field_of(enum dict_shape shape, const struct data_value *key)
{
    if (key->kind != DATA_STRING)
        return -1;
    switch (key->text.length) {
    case 4:
        if (shape == SHAPE_ENTRY && TEXT_IS(key, "addr"))
            return ENTRY_ADDR;
        if (shape != SHAPE_SEGMENT && TEXT_IS(key, "size"))
            return shape == SHAPE_ENTRY ? ENTRY_SIZE : BLOCK_SIZE;
        return -1;
    case 5:
        return shape == SHAPE_BLOCK && TEXT_IS(key, "state") ? BLOCK_STATE : -1;
    case 6:
        if (shape == SHAPE_ENTRY && TEXT_IS(key, "action"))
            return ENTRY_ACTION;
        if (shape != SHAPE_BLOCK && TEXT_IS(key, "stream"))
            return shape == SHAPE_ENTRY ? ENTRY_STREAM : SEGMENT_STREAM;
        if (shape == SHAPE_SEGMENT && TEXT_IS(key, "device"))
            return SEGMENT_DEVICE;
        if (shape == SHAPE_SEGMENT && TEXT_IS(key, "blocks"))
            return SEGMENT_BLOCKS;
        return -1;
    case 7:
        if (shape == SHAPE_ENTRY && TEXT_IS(key, "time_us"))
            return ENTRY_TIME_US;
        if (shape != SHAPE_ENTRY && TEXT_IS(key, "address"))
            return shape == SHAPE_SEGMENT ? SEGMENT_ADDRESS : BLOCK_ADDRESS;
        return -1;
    case 14:
        return shape == SHAPE_BLOCK && TEXT_IS(key, "requested_size") ? BLOCK_REQUESTED_SIZE : -1;
    default:
        return -1;
    }
}

static void find_fields(const struct data_value *dict, enum dict_shape shape, size_t count,
                        const struct data_value **values)
{
    for (size_t index = 0; index < count; index++)
        values[index] = NULL;
    for (size_t pair = 0; pair < dict->sequence.count; pair++) {
        int field = field_of(shape, dict->sequence.items[2 * pair]);
        if (field >= 0)
            values[field] = dict->sequence.items[2 * pair + 1];
    }
}

/* The entry's 'action', NULL when it has none (or is not a dict). */
static const struct data_value *action_field(const struct data_value *entry)
{
    if (entry->kind != DATA_DICT)
        return NULL;
    for (size_t pair = entry->sequence.count; pair-- > 0;)
        if (TEXT_IS(entry->sequence.items[2 * pair], "action"))
            return entry->sequence.items[2 * pair + 1];
    return NULL;
}

/* Where a value sits in the snapshot, named in messages only: the name is
 * formatted when a message needs it, not for every entry read. */
enum place_kind { PLACE_NAMED, PLACE_TRACE_ENTRY, PLACE_SEGMENT, PLACE_BLOCK };

struct place {
    enum place_kind kind;
    const char *name; /* PLACE_NAMED */
    size_t major, minor;
};

#define PLACE_TEXT_SIZE 64

/* Entries and blocks are named as the replay's reports name their events. */
static const char *place_text(struct place place, char text[PLACE_TEXT_SIZE])
{
    struct replay_position position = {.major = (uint32_t)place.major,
                                       .minor = (uint32_t)place.minor};
    switch (place.kind) {
    case PLACE_NAMED:
        return place.name;
    case PLACE_SEGMENT:
        snprintf(text, PLACE_TEXT_SIZE, "segments[%zu]", place.major);
        return text;
    case PLACE_TRACE_ENTRY:
        position.origin = REPLAY_ORIGIN_TRACE_ENTRY;
        break;
    case PLACE_BLOCK:
        position.origin = REPLAY_ORIGIN_FINAL_BLOCK;
        break;
    }
    return replay_position_format(position, text, PLACE_TEXT_SIZE);
}

/* read_fail with the place's name before the message. */
__attribute__((format(printf, 3, 4))) static bool place_fail(struct read_error *error,
                                                             struct place place,
                                                             const char *format, ...)
{
    char text[PLACE_TEXT_SIZE];
    size_t used = (size_t)snprintf(error->message, sizeof error->message, "%s: ",
                                   place_text(place, text));
    if (used < sizeof error->message) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(error->message + used, sizeof error->message - used, format, arguments);
        va_end(arguments);
    }
    return false;
}

/* Reads `field`, the value of `key` (NULL when absent); `where` names its
 * dict in messages. A missing optional field leaves *value untouched. */
static bool integer_value(const struct data_value *field, const char *key, bool required,
                          struct place where, int64_t *value, struct read_error *error)
{
    if (!field) {
        if (required)
            return place_fail(error, where, "'%s' is missing", key);
        return true;
    }
    if (field->kind != DATA_INT)
        return place_fail(error, where, "'%s' is a %s (expected an int)", key,
                          data_kind_name(field->kind));
    if (field->too_wide)
        return place_fail(error, where,
                          "'%s' does not fit in 64 bits (expected an int from -2^63 to "
                          "2^63 - 1)",
                          key);
    *value = field->integer;
    return true;
}

static bool unsigned_value(const struct data_value *field, const char *key, struct place where,
                           uint64_t *value, struct read_error *error)
{
    int64_t signed_value = 0;
    if (!integer_value(field, key, true, where, &signed_value, error))
        return false;
    if (signed_value < 0)
        return place_fail(error, where, "'%s' is %" PRId64 " (expected a non-negative int)",
                          key, signed_value);
    *value = (uint64_t)signed_value;
    return true;
}

/* `field`, the value of `key` (NULL when absent), when it is a list. */
static const struct data_value *list_value(const struct data_value *field, const char *key,
                                           struct place where, struct read_error *error)
{
    if (!field)
        place_fail(error, where, "'%s' is missing", key);
    else if (field->kind != DATA_LIST)
        place_fail(error, where, "'%s' is a %s (expected a list)", key,
                   data_kind_name(field->kind));
    return field && field->kind == DATA_LIST ? field : NULL;
}

static const struct place top_level = {.kind = PLACE_NAMED, .name = "top level"};

static bool pick_device(const struct data_value *traces, int requested, int *device,
                        struct read_error *error)
{
    size_t count = traces->sequence.count;
    if (requested != SNAPSHOT_ANY_DEVICE) {
        if ((size_t)requested >= count)
            return read_fail(error,
                               "device_traces: no trace for device %d (the snapshot has "
                               "%zu device%s)",
                               requested, count, count == 1 ? "" : "s");
        *device = requested;
        return true;
    }
    *device = 0;
    for (size_t index = 0; index < count; index++) {
        const struct data_value *trace = traces->sequence.items[index];
        if (trace->kind == DATA_LIST && trace->sequence.count > 0) {
            *device = (int)index;
            return true;
        }
    }
    return true;
}

/* True when the trace marks frees with free_completed entries. */
static bool has_free_completed(const struct data_value *entries)
{
    for (size_t index = 0; index < entries->sequence.count; index++) {
        const struct data_value *action = action_field(entries->sequence.items[index]);
        if (action && TEXT_IS(action, "free_completed"))
            return true;
    }
    return false;
}

static bool read_entries(struct replay_trace_builder *builder, const struct data_value *entries,
                         int device, enum action free_action, struct read_error *error)
{
    for (size_t index = 0; index < entries->sequence.count; index++) {
        const struct data_value *entry = entries->sequence.items[index];
        struct replay_position position = {.origin = REPLAY_ORIGIN_TRACE_ENTRY,
                                           .major = (uint32_t)device,
                                           .minor = (uint32_t)index};
        struct place where = {.kind = PLACE_TRACE_ENTRY, .major = (size_t)device, .minor = index};
        if (entry->kind != DATA_DICT)
            return place_fail(error, where,
                              "a %s (expected a dict with 'action', 'addr', 'size', "
                              "'stream')",
                              data_kind_name(entry->kind));
        const struct data_value *fields[ENTRY_FIELDS];
        find_fields(entry, SHAPE_ENTRY, ENTRY_FIELDS, fields);
        const struct data_value *action = fields[ENTRY_ACTION];
        if (!action)
            return place_fail(error, where, "'%s' is missing", "action");
        enum action kind = action_of(action);
        if (kind == ACTION_UNKNOWN) {
            if (action->kind != DATA_STRING)
                return place_fail(error, where, "'action' is a %s (expected a str)",
                                  data_kind_name(action->kind));
            char shown[200];
            return place_fail(
                error, where,
                "unknown action %s (expected alloc, free_requested, "
                "free_completed, segment_alloc, segment_free, segment_map, "
                "segment_unmap, oom, snapshot or annotate)",
                read_quote(action->text.bytes, action->text.length, shown, sizeof shown));
        }
        struct replay_record record = {.position = position, .time_us = -1};
        if (kind == ACTION_ALLOC)
            record.action = REPLAY_ALLOC;
        else if (kind == free_action)
            record.action = REPLAY_FREE;
        else {
            builder->trace->ignored_count++;
            continue;
        }
        int64_t stream = 0;
        if (!unsigned_value(fields[ENTRY_ADDR], "addr", where, &record.address, error) ||
            !unsigned_value(fields[ENTRY_SIZE], "size", where, &record.size, error) ||
            !integer_value(fields[ENTRY_STREAM], "stream", false, where, &stream, error) ||
            !integer_value(fields[ENTRY_TIME_US], "time_us", false, where, &record.time_us,
                           error))
            return false;
        record.stream = (uint64_t)stream;
        if (!replay_builder_add(builder, &record, error))
            return false;
    }
    return true;
}

/* Declares the allocated blocks of the final state. In free_requested mode a
 * block pending its free is already freed as far as the trace goes. */
static bool read_final_state(struct replay_trace_builder *builder,
                             const struct data_value *segments, int device,
                             bool pending_counts_as_allocated, struct read_error *error)
{
    for (size_t segment_index = 0; segment_index < segments->sequence.count; segment_index++) {
        const struct data_value *segment = segments->sequence.items[segment_index];
        struct place where = {.kind = PLACE_SEGMENT, .major = segment_index};
        if (segment->kind != DATA_DICT)
            return place_fail(error, where, "a %s (expected a dict)",
                              data_kind_name(segment->kind));
        const struct data_value *fields[SEGMENT_FIELDS];
        find_fields(segment, SHAPE_SEGMENT, SEGMENT_FIELDS, fields);
        int64_t segment_device = 0, stream = 0;
        uint64_t address;
        if (!integer_value(fields[SEGMENT_DEVICE], "device", false, where, &segment_device, error))
            return false;
        if (segment_device != device)
            continue;
        const struct data_value *blocks = list_value(fields[SEGMENT_BLOCKS], "blocks", where, error);
        if (!blocks || !unsigned_value(fields[SEGMENT_ADDRESS], "address", where, &address, error) ||
            !integer_value(fields[SEGMENT_STREAM], "stream", false, where, &stream, error))
            return false;
        for (size_t block_index = 0; block_index < blocks->sequence.count; block_index++) {
            const struct data_value *block = blocks->sequence.items[block_index];
            struct replay_record record = {
                .action = REPLAY_ALLOC,
                .address = address,
                .stream = (uint64_t)stream,
                .time_us = -1,
                .position = {.origin = REPLAY_ORIGIN_FINAL_BLOCK,
                             .major = (uint32_t)segment_index,
                             .minor = (uint32_t)block_index},
            };
            struct place at = {.kind = PLACE_BLOCK, .major = segment_index, .minor = block_index};
            if (block->kind != DATA_DICT)
                return place_fail(error, at, "a %s (expected a dict)", data_kind_name(block->kind));
            const struct data_value *fields[BLOCK_FIELDS];
            find_fields(block, SHAPE_BLOCK, BLOCK_FIELDS, fields);
            uint64_t size;
            const struct data_value *state = fields[BLOCK_STATE];
            if (!unsigned_value(fields[BLOCK_SIZE], "size", at, &size, error))
                return false;
            /* The viewer derives block addresses the same way when absent. */
            int64_t block_address = (int64_t)address;
            if (!integer_value(fields[BLOCK_ADDRESS], "address", false, at, &block_address, error))
                return false;
            record.address = (uint64_t)block_address;
            address += size;
            int64_t requested = (int64_t)size;
            if (!integer_value(fields[BLOCK_REQUESTED_SIZE], "requested_size", false, at,
                               &requested, error))
                return false;
            record.size = (uint64_t)requested;
            bool pending = state && TEXT_IS(state, "active_pending_free");
            bool allocated =
                (state && TEXT_IS(state, "active_allocated")) || (pending_counts_as_allocated && pending);
            if (!state || (!allocated && !TEXT_IS(state, "inactive") && !pending))
                return place_fail(error, at,
                                  "'%s' is not one of active_allocated, "
                                  "active_pending_free, inactive",
                                  "state");
            if (allocated && !replay_builder_final_block(builder, &record, error))
                return false;
        }
    }
    return true;
}

/* A pickle's memo lets one list or dict be referenced many times, so a small
 * file can stand for a tree far larger than itself (a segment referenced
 * 100,000 times whose blocks are 10,000 references: 10^9 blocks in 220 KB).
 * Where no object is repeated, every dict and every key-value pair the
 * reader visits costs at least two bytes of the file (in either encoding),
 * so the work it is allowed is a multiple of the file's size. Real
 * snapshots share only frames, which the reader never visits: the shared
 * PyTorch snapshots need at most 0.05 visits per byte. */
#define VISITS_PER_BYTE 4

struct visit_budget {
    uint64_t left;
    uint64_t limit;
};

/* Charges a dict (or any value) and its pairs; false, with the position,
 * once the file has been expanded beyond its budget. */
static bool visit(struct visit_budget *budget, const struct data_value *value, struct place where,
                  struct read_error *error)
{
    uint64_t cost = 1 + (value->kind == DATA_DICT ? value->sequence.count : 0);
    if (cost <= budget->left) {
        budget->left -= cost;
        return true;
    }
    return place_fail(error, where,
                      "the snapshot expands to more than %" PRIu64 " values (%d per byte "
                      "of the file): its memo repeats the same segments, blocks or trace "
                      "entries (expected each once)",
                      budget->limit, VISITS_PER_BYTE);
}

/* Walks what the reader will visit (the chosen trace, every segment and its
 * blocks) before reading it, so the reading that follows is bounded by the
 * file's size however the memo repeats things. */
static bool within_budget(const struct data_value *entries, int device,
                          const struct data_value *segments, size_t length,
                          struct read_error *error)
{
    struct visit_budget budget = {.limit = (uint64_t)length * VISITS_PER_BYTE};
    budget.left = budget.limit;
    for (size_t index = 0; entries && index < entries->sequence.count; index++) {
        struct place where = {.kind = PLACE_TRACE_ENTRY, .major = (size_t)device, .minor = index};
        if (!visit(&budget, entries->sequence.items[index], where, error))
            return false;
    }
    for (size_t index = 0; segments && index < segments->sequence.count; index++) {
        const struct data_value *segment = segments->sequence.items[index];
        if (!visit(&budget, segment, (struct place){.kind = PLACE_SEGMENT, .major = index},
                   error))
            return false;
        const struct data_value *blocks = data_dict_get(segment, "blocks");
        for (size_t block = 0; blocks && blocks->kind == DATA_LIST &&
                               block < blocks->sequence.count;
             block++) {
            struct place where = {.kind = PLACE_BLOCK, .major = index, .minor = block};
            if (!visit(&budget, blocks->sequence.items[block], where, error))
                return false;
        }
    }
    return true;
}

static bool read_snapshot(struct replay_trace_builder *builder, const struct data_value *root,
                          int requested_device, size_t length, struct read_error *error)
{
    if (root->kind != DATA_DICT)
        return read_fail(error,
                           "top level: a %s (expected the dict that "
                           "torch.cuda.memory._snapshot() returns)",
                           data_kind_name(root->kind));
    const struct data_value *traces =
        list_value(data_dict_get(root, "device_traces"), "device_traces", top_level, error);
    if (!traces)
        return false;
    int device;
    if (!pick_device(traces, requested_device, &device, error))
        return false;
    builder->trace->device = device;
    const struct data_value *entries =
        traces->sequence.count ? traces->sequence.items[device] : NULL;
    if (entries && entries->kind != DATA_LIST)
        return read_fail(error, "device_traces[%d]: a %s (expected a list of trace entries)",
                           device, data_kind_name(entries->kind));
    const struct data_value *segments = data_dict_get(root, "segments");
    if (!within_budget(entries, device, segments && segments->kind == DATA_LIST ? segments : NULL,
                       length, error))
        return false;
    bool frees_complete = entries && has_free_completed(entries);
    /* At most one event and one slot per entry. */
    if (entries && !replay_builder_expect(builder, entries->sequence.count, error))
        return false;
    if (entries && !read_entries(builder, entries, device,
                                 frees_complete ? ACTION_FREE_COMPLETED : ACTION_FREE_REQUESTED,
                                 error))
        return false;
    /* A snapshot without segments has no final state to infer from. */
    if (!segments)
        return true;
    if (segments->kind != DATA_LIST)
        return read_fail(error, "top level: 'segments' is a %s (expected a list)",
                           data_kind_name(segments->kind));
    return read_final_state(builder, segments, device, frees_complete, error);
}

bool snapshot_recognised(const uint8_t *data, size_t length)
{
    if (length > 0 && data[0] == 0x80)
        return true;
    size_t offset = length >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    while (offset < length && (data[offset] == ' ' || data[offset] == '\t' ||
                               data[offset] == '\r' || data[offset] == '\n'))
        offset++;
    return offset < length && data[offset] == '{';
}

/* The stack frames of entries, segments and blocks: most of a snapshot's
 * opcodes, and nothing the replay uses. */
static const char *const unread_keys[] = {"frames"};

bool snapshot_read(const uint8_t *data, size_t length, int device, struct replay_trace *trace,
                   struct read_error *error)
{
    struct data_document document;
    bool decoded = length > 0 && data[0] == 0x80
                       ? pickle_read_skipping(data, length, unread_keys,
                                              sizeof unread_keys / sizeof *unread_keys, &document,
                                              error)
                       : json_read((const char *)data, length, &document, error);
    if (!decoded)
        return false;
    struct replay_trace_builder builder;
    replay_builder_init(&builder, trace, "PyTorch snapshot");
    bool ok = read_snapshot(&builder, document.root, device, length, error);
    data_document_destroy(&document);
    if (!ok) {
        replay_builder_abandon(&builder);
        return false;
    }
    return replay_builder_finish(&builder, error);
}

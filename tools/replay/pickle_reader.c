#include "pickle_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growable_array.h"

/* Every opcode of protocols 0 to 5, so a refusal can name what it saw. */
struct opcode_info {
    const char *name;
    enum {
        OPCODE_DATA,        /* understood */
        OPCODE_CODE,        /* imports or calls: refused for safety */
        OPCODE_UNSUPPORTED, /* harmless, but no snapshot writer emits it */
    } kind;
};

static const struct opcode_info opcodes[256] = {
    ['('] = {"MARK", OPCODE_DATA},
    ['.'] = {"STOP", OPCODE_DATA},
    ['0'] = {"POP", OPCODE_UNSUPPORTED},
    ['1'] = {"POP_MARK", OPCODE_UNSUPPORTED},
    ['2'] = {"DUP", OPCODE_UNSUPPORTED},
    ['F'] = {"FLOAT", OPCODE_UNSUPPORTED},
    ['I'] = {"INT", OPCODE_UNSUPPORTED},
    ['J'] = {"BININT", OPCODE_DATA},
    ['K'] = {"BININT1", OPCODE_DATA},
    ['L'] = {"LONG", OPCODE_UNSUPPORTED},
    ['M'] = {"BININT2", OPCODE_DATA},
    ['N'] = {"NONE", OPCODE_DATA},
    ['P'] = {"PERSID", OPCODE_CODE},
    ['Q'] = {"BINPERSID", OPCODE_CODE},
    ['R'] = {"REDUCE", OPCODE_CODE},
    ['S'] = {"STRING", OPCODE_UNSUPPORTED},
    ['T'] = {"BINSTRING", OPCODE_UNSUPPORTED},
    ['U'] = {"SHORT_BINSTRING", OPCODE_UNSUPPORTED},
    ['V'] = {"UNICODE", OPCODE_UNSUPPORTED},
    ['X'] = {"BINUNICODE", OPCODE_DATA},
    ['a'] = {"APPEND", OPCODE_DATA},
    ['b'] = {"BUILD", OPCODE_CODE},
    ['c'] = {"GLOBAL", OPCODE_CODE},
    ['d'] = {"DICT", OPCODE_DATA},
    ['}'] = {"EMPTY_DICT", OPCODE_DATA},
    ['e'] = {"APPENDS", OPCODE_DATA},
    ['g'] = {"GET", OPCODE_UNSUPPORTED},
    ['h'] = {"BINGET", OPCODE_DATA},
    ['i'] = {"INST", OPCODE_CODE},
    ['j'] = {"LONG_BINGET", OPCODE_DATA},
    ['l'] = {"LIST", OPCODE_DATA},
    [']'] = {"EMPTY_LIST", OPCODE_DATA},
    ['o'] = {"OBJ", OPCODE_CODE},
    ['p'] = {"PUT", OPCODE_UNSUPPORTED},
    ['q'] = {"BINPUT", OPCODE_DATA},
    ['r'] = {"LONG_BINPUT", OPCODE_DATA},
    ['s'] = {"SETITEM", OPCODE_DATA},
    ['t'] = {"TUPLE", OPCODE_DATA},
    [')'] = {"EMPTY_TUPLE", OPCODE_DATA},
    ['u'] = {"SETITEMS", OPCODE_DATA},
    ['G'] = {"BINFLOAT", OPCODE_DATA},
    [0x80] = {"PROTO", OPCODE_DATA},
    [0x81] = {"NEWOBJ", OPCODE_CODE},
    [0x82] = {"EXT1", OPCODE_CODE},
    [0x83] = {"EXT2", OPCODE_CODE},
    [0x84] = {"EXT4", OPCODE_CODE},
    [0x85] = {"TUPLE1", OPCODE_DATA},
    [0x86] = {"TUPLE2", OPCODE_DATA},
    [0x87] = {"TUPLE3", OPCODE_DATA},
    [0x88] = {"NEWTRUE", OPCODE_DATA},
    [0x89] = {"NEWFALSE", OPCODE_DATA},
    [0x8a] = {"LONG1", OPCODE_DATA},
    [0x8b] = {"LONG4", OPCODE_DATA},
    ['B'] = {"BINBYTES", OPCODE_DATA},
    ['C'] = {"SHORT_BINBYTES", OPCODE_DATA},
    [0x8c] = {"SHORT_BINUNICODE", OPCODE_DATA},
    [0x8d] = {"BINUNICODE8", OPCODE_DATA},
    [0x8e] = {"BINBYTES8", OPCODE_DATA},
    [0x8f] = {"EMPTY_SET", OPCODE_UNSUPPORTED},
    [0x90] = {"ADDITEMS", OPCODE_UNSUPPORTED},
    [0x91] = {"FROZENSET", OPCODE_UNSUPPORTED},
    [0x92] = {"NEWOBJ_EX", OPCODE_CODE},
    [0x93] = {"STACK_GLOBAL", OPCODE_CODE},
    [0x94] = {"MEMOIZE", OPCODE_DATA},
    [0x95] = {"FRAME", OPCODE_DATA},
    [0x96] = {"BYTEARRAY8", OPCODE_UNSUPPORTED},
    [0x97] = {"NEXT_BUFFER", OPCODE_CODE},
    [0x98] = {"READONLY_BUFFER", OPCODE_CODE},
};

struct memo_entry {
    struct data_value *value; /* NULL: never stored */
    /* A string equal to a skipped key, known when it is stored so that its
     * many references need no comparison. */
    bool skipped_key;
};

struct reader {
    const uint8_t *data;
    size_t length;
    size_t offset;        /* next byte to read */
    size_t opcode_offset; /* where the current opcode starts, for messages */
    struct data_document *document;
    struct data_value **stack;
    size_t stack_count, stack_capacity;
    size_t *marks; /* stack heights at each MARK */
    size_t mark_count, mark_capacity;
    struct memo_entry *memo;
    size_t memo_capacity;
    /* Entries below this are set or cleared; the rest is uninitialised, as
     * clearing what the array grows by costs more than filling it when keys
     * come in order (MEMOIZE's always do, and the pickler's BINPUT's). */
    size_t memo_used;
    size_t memo_entries; /* distinct memo keys set; MEMOIZE uses it as the next key */
    struct read_error *error;
    /* Skipping: the caller's keys whose values it never reads, and their
     * lengths (most strings differ from them in length). */
    const char *const *skipped_keys;
    size_t skipped_key_lengths[PICKLE_MAX_SKIPPED_KEYS];
    size_t skipped_key_count;
    /* While a skipped value is decoded, every value it builds but strings
     * and bytes is the placeholder of its kind: one per kind, shared, never
     * filled. Its opcodes are still checked as any others. */
    struct data_value *placeholders[DATA_DICT + 1];
    bool skipping;
    size_t skip_slot;  /* the stack index the skipped value occupies */
    size_t skip_marks; /* mark_count when it began */
    /* No placeholder sits on the stack below this index (SIZE_MAX: none at
     * all), so a container taking items from the stack looks for one only
     * from there. */
    size_t placeholder_floor;
    /* A placeholder reached a place the caller may read (anything but a
     * dict's value under a skipped key): the document would differ from the
     * file, so the whole file is decoded again without skipping. */
    bool placeholder_escaped;
};

static bool fail(struct reader *reader, const char *problem)
{
    uint8_t opcode = reader->data[reader->opcode_offset];
    const char *name = opcodes[opcode].name;
    return read_fail(reader->error, "byte %zu: %s %s", reader->opcode_offset,
                       name ? name : "opcode", problem);
}

/* The first pass met a placeholder where the caller may read it: not an
 * error, the caller decodes again without skipping. */
static bool give_up_skipping(struct reader *reader)
{
    reader->placeholder_escaped = true;
    return false;
}

static bool is_placeholder(const struct reader *reader, const struct data_value *value)
{
    return reader->placeholders[value->kind] == value;
}

/* A new value, or inside a skipped value the placeholder of its kind, which
 * the caller must leave as it is. NULL when host memory runs out. */
static struct data_value *new_value(struct reader *reader, enum data_kind kind)
{
    if (!reader->skipping)
        return data_new(reader->document, kind);
    struct data_value **placeholder = &reader->placeholders[kind];
    if (!*placeholder)
        *placeholder = data_new(reader->document, kind);
    return *placeholder;
}

/* Inline everywhere: it runs for every string memoized, mostly to fail at the
 * length. */
__attribute__((always_inline)) static inline bool is_skipped_key(const struct reader *reader,
                                                                  const struct data_value *value)
{
    if (value->kind != DATA_STRING)
        return false;
    for (size_t index = 0; index < reader->skipped_key_count; index++)
        if (value->text.length == reader->skipped_key_lengths[index] &&
            memcmp(value->text.bytes, reader->skipped_keys[index], value->text.length) == 0)
            return true;
    return false;
}

/* Every push goes through here or keeps placeholder_floor itself. */
static inline void note_placeholder(struct reader *reader, const struct data_value *value)
{
    if (is_placeholder(reader, value) && reader->stack_count < reader->placeholder_floor)
        reader->placeholder_floor = reader->stack_count;
}

/* Cuts the stack to `height`; at or below the floor, no placeholder is left. */
static inline void cut_stack(struct reader *reader, size_t height)
{
    reader->stack_count = height;
    if (height <= reader->placeholder_floor)
        reader->placeholder_floor = SIZE_MAX;
}

static bool push_growing(struct reader *reader, struct data_value *value)
{
    if (!value || !growable_array_reserve((void **)&reader->stack, &reader->stack_capacity,
                                          reader->stack_count + 1, sizeof *reader->stack))
        return fail(reader, "ran out of host memory");
    note_placeholder(reader, value);
    reader->stack[reader->stack_count++] = value;
    return true;
}

/* Nearly every opcode pushes: the common case stays inline. */
static inline bool push(struct reader *reader, struct data_value *value)
{
    if (__builtin_expect(value != NULL && reader->stack_count < reader->stack_capacity, 1)) {
        note_placeholder(reader, value);
        reader->stack[reader->stack_count++] = value;
        return true;
    }
    return push_growing(reader, value);
}

/* After a skipped key is pushed: when it is among the items of a
 * dict's MARK ... SETITEMS batch (how the pickler writes every dict with
 * more than one item), what follows is decoded as the skipped value. Where
 * the guess is wrong (the string turns out not to be a key) the placeholders
 * it leaves are caught where they land. */
static void skip_if_key(struct reader *reader)
{
    if (reader->skipping || reader->mark_count == 0)
        return;
    size_t mark = reader->marks[reader->mark_count - 1];
    size_t key_slot = reader->stack_count - 1;
    if (mark == 0 || (key_slot - mark) % 2 != 0)
        return;
    const struct data_value *dict = reader->stack[mark - 1];
    if (dict->kind != DATA_DICT || is_placeholder(reader, dict))
        return;
    reader->skipping = true;
    reader->skip_slot = key_slot + 1;
    reader->skip_marks = reader->mark_count;
}

/* Whether the opcode about to run still belongs to the skipped value: it
 * does until the value sits alone on its slot and the next opcode neither
 * memoizes it nor opens a batch of its items. */
static bool in_skipped_value(const struct reader *reader, uint8_t opcode)
{
    size_t count = reader->stack_count;
    if (count < reader->skip_slot)
        return false;
    if (count == reader->skip_slot || reader->mark_count > reader->skip_marks)
        return true;
    return count == reader->skip_slot + 1 &&
           (opcode == 0x94 || opcode == 'q' || opcode == 'r' || opcode == '(' || opcode == 0x95);
}

/* The stack height at the innermost MARK, which it removes. */
static bool pop_mark(struct reader *reader, size_t *height)
{
    if (reader->mark_count == 0)
        return fail(reader, "without a MARK before it (malformed pickle)");
    *height = reader->marks[--reader->mark_count];
    return true;
}

/* Reads `count` bytes of operand; false when the file ends first. */
static bool operand(struct reader *reader, size_t count, const uint8_t **bytes)
{
    *bytes = NULL;
    if (reader->length - reader->offset < count)
        return fail(reader, "is cut short: the file ends inside its operand");
    *bytes = reader->data + reader->offset;
    reader->offset += count;
    return true;
}

static uint64_t little_endian(const uint8_t *bytes, size_t count)
{
    uint64_t value = 0;
    for (size_t index = count; index-- > 0;)
        value = value << 8 | bytes[index];
    return value;
}

/* Written out so that the compiler makes it one load where it can. */
static inline uint64_t little_endian_8(const uint8_t *bytes)
{
    return (uint64_t)bytes[0] | (uint64_t)bytes[1] << 8 | (uint64_t)bytes[2] << 16 |
           (uint64_t)bytes[3] << 24 | (uint64_t)bytes[4] << 32 | (uint64_t)bytes[5] << 40 |
           (uint64_t)bytes[6] << 48 | (uint64_t)bytes[7] << 56;
}

static bool read_unsigned(struct reader *reader, size_t count, uint64_t *value)
{
    const uint8_t *bytes;
    if (!operand(reader, count, &bytes))
        return false;
    *value = little_endian(bytes, count);
    return true;
}

static bool push_integer(struct reader *reader, int64_t integer)
{
    struct data_value *value = new_value(reader, DATA_INT);
    if (value && !reader->skipping)
        value->integer = integer;
    return push(reader, value);
}

/* LONG1 and LONG4: a two's-complement little-endian integer of `count` bytes,
 * of any width. One that int64_t cannot hold is kept as too wide, since
 * snapshots carry such values in fields the replay never reads. */
static bool push_long(struct reader *reader, uint64_t count)
{
    size_t left = reader->length - reader->offset;
    if (count > left)
        return fail(reader, "is cut short: the file ends inside its operand");
    const uint8_t *bytes = reader->data + reader->offset;
    reader->offset += (size_t)count;
    if (reader->skipping)
        return push(reader, new_value(reader, DATA_INT));
    size_t low = count < 8 ? (size_t)count : 8;
    uint64_t raw;
    /* Addresses and times are LONG1 of 5 to 8 bytes: where the file has 8
     * bytes from here, one load and a mask instead of a loop. */
    if (left >= 8)
        raw = little_endian_8(bytes) & (low == 8 ? UINT64_MAX : (UINT64_C(1) << (low * 8)) - 1);
    else
        raw = little_endian(bytes, low);
    bool negative = count > 0 && (bytes[count - 1] & 0x80);
    if (low > 0 && low < 8 && negative)
        raw |= UINT64_MAX << (low * 8);
    /* Beyond 8 bytes it fits only when every further byte, and the top bit
     * of the eighth, repeat the sign. */
    bool fits = true;
    for (size_t index = 8; index < count && fits; index++)
        fits = bytes[index] == (negative ? 0xff : 0x00);
    if (count > 8)
        fits = fits && ((bytes[7] & 0x80) != 0) == negative;
    if (!push_integer(reader, fits ? (int64_t)raw : 0))
        return false;
    reader->stack[reader->stack_count - 1]->too_wide = !fits;
    return true;
}

static bool push_text(struct reader *reader, enum data_kind kind, size_t length_bytes)
{
    uint64_t length;
    const uint8_t *bytes;
    if (!read_unsigned(reader, length_bytes, &length))
        return false;
    if (length > reader->length - reader->offset)
        return fail(reader, "is cut short: its text runs past the end of the file");
    if (!operand(reader, (size_t)length, &bytes))
        return false;
    /* Even inside a skipped value a string is built: the pickler memoizes
     * strings, and CPython shares some (the empty one, single characters)
     * between a frame and places the caller reads. */
    struct data_value *value = data_new(reader->document, kind);
    if (value) {
        value->text.bytes = (const char *)bytes;
        value->text.length = (size_t)length;
    }
    if (!push(reader, value))
        return false;
    if (kind == DATA_STRING && reader->skipped_key_count && !reader->skipping &&
        is_skipped_key(reader, value))
        skip_if_key(reader);
    return true;
}

static bool push_float(struct reader *reader)
{
    const uint8_t *bytes;
    if (!operand(reader, 8, &bytes))
        return false;
    uint64_t raw = 0;
    for (size_t index = 0; index < 8; index++)
        raw = raw << 8 | bytes[index]; /* big-endian, unlike the integers */
    struct data_value *value = new_value(reader, DATA_FLOAT);
    if (value && !reader->skipping)
        memcpy(&value->real, &raw, sizeof value->real);
    return push(reader, value);
}

/* Whether items bound for a container the caller may read hold a
 * placeholder anywhere but as a dict's value under a skipped key. */
static bool placeholder_escapes(const struct reader *reader, enum data_kind kind,
                                size_t height, size_t count)
{
    struct data_value *const *items = reader->stack + height;
    size_t first = reader->placeholder_floor > height ? reader->placeholder_floor - height : 0;
    for (size_t index = first; index < count; index++)
        if (is_placeholder(reader, items[index]) &&
            !(kind == DATA_DICT && index % 2 == 1 && is_skipped_key(reader, items[index - 1])))
            return true;
    return false;
}

/* Appends the `count` stack values from `height` up to a container's items. */
static bool append_items(struct reader *reader, struct data_value *container, size_t height,
                         size_t count)
{
    if (reader->placeholder_floor < height + count &&
        placeholder_escapes(reader, container->kind, height, count))
        return give_up_skipping(reader);
    /* The stack may not exist yet when nothing is appended. */
    if (count > 0 && !data_append(reader->document, container, reader->stack + height, count))
        return fail(reader, "ran out of host memory");
    return true;
}

/* A new container holding the stack items above `height`, which it pops. */
static bool build_from_stack(struct reader *reader, enum data_kind kind, size_t height)
{
    size_t count = reader->stack_count - height;
    if (kind == DATA_DICT && count % 2)
        return fail(reader, "has an odd number of items (a key without a value)");
    struct data_value *container = new_value(reader, kind);
    if (!container)
        return fail(reader, "ran out of host memory");
    if (!is_placeholder(reader, container) && !append_items(reader, container, height, count))
        return false;
    cut_stack(reader, height);
    return push(reader, container);
}

/* The stack height below which the innermost MARK hides values. */
static size_t stack_floor(const struct reader *reader)
{
    return reader->mark_count ? reader->marks[reader->mark_count - 1] : 0;
}

static bool need_stack(struct reader *reader, size_t count)
{
    if (reader->stack_count < stack_floor(reader) + count)
        return fail(reader, "finds too few values on the stack (malformed pickle)");
    return true;
}

/* APPEND(S) and SETITEM(S): add the items above `height` to the container just
 * below them. */
static bool add_to_container(struct reader *reader, enum data_kind kind, size_t height)
{
    if (height == 0 || height - 1 < stack_floor(reader))
        return fail(reader, "has no container under its items (malformed pickle)");
    struct data_value *container = reader->stack[height - 1];
    if (container->kind != kind) {
        char problem[96];
        snprintf(problem, sizeof problem, "applied to a %s (expected a %s)",
                 data_kind_name(container->kind), data_kind_name(kind));
        return fail(reader, problem);
    }
    size_t count = reader->stack_count - height;
    if (kind == DATA_DICT && count % 2)
        return fail(reader, "has an odd number of items (a key without a value)");
    /* A placeholder keeps no items: nothing reads them. */
    if (!is_placeholder(reader, container) && !append_items(reader, container, height, count))
        return false;
    cut_stack(reader, height);
    return true;
}

static bool memo_put(struct reader *reader, uint64_t key)
{
    if (!need_stack(reader, 1))
        return false;
    /* A well-formed pickle stores fewer memo entries than it has bytes. */
    if (key >= reader->length)
        return fail(reader, "uses a memo key larger than the file could hold");
    if (key >= reader->memo_used) {
        if (!growable_array_reserve((void **)&reader->memo, &reader->memo_capacity,
                                    (size_t)key + 1, sizeof *reader->memo))
            return fail(reader, "ran out of host memory");
        if (key > reader->memo_used)
            memset(reader->memo + reader->memo_used, 0,
                   ((size_t)key - reader->memo_used) * sizeof *reader->memo);
        reader->memo[key].value = NULL;
        reader->memo_used = (size_t)key + 1;
    }
    struct memo_entry *entry = &reader->memo[key];
    if (!entry->value)
        reader->memo_entries++;
    entry->value = reader->stack[reader->stack_count - 1];
    entry->skipped_key = reader->skipped_key_count && is_skipped_key(reader, entry->value);
    return true;
}

static bool memo_get(struct reader *reader, uint64_t key)
{
    if (key >= reader->memo_used || !reader->memo[key].value) {
        char problem[64];
        snprintf(problem, sizeof problem, "refers to memo key %" PRIu64 ", which was never stored",
                 key);
        return fail(reader, problem);
    }
    const struct memo_entry *entry = &reader->memo[key];
    if (!push(reader, entry->value))
        return false;
    if (entry->skipped_key)
        skip_if_key(reader);
    return true;
}

static bool refuse(struct reader *reader, uint8_t opcode)
{
    const struct opcode_info *info = &opcodes[opcode];
    if (!info->name)
        return read_fail(reader->error, "byte %zu: unknown pickle opcode 0x%02x",
                           reader->opcode_offset, opcode);
    if (info->kind == OPCODE_CODE)
        return read_fail(reader->error,
                           "byte %zu: opcode %s (0x%02x) refused: it would import or call Python "
                           "code, and a memory snapshot holds only dicts, lists, tuples, numbers "
                           "and strings",
                           reader->opcode_offset, info->name, opcode);
    return read_fail(reader->error,
                       "byte %zu: opcode %s (0x%02x) is not supported: memory snapshots "
                       "(pickle protocol 2 to 5) do not use it",
                       reader->opcode_offset, info->name, opcode);
}

/* BINGET and LONG_BINGET of a stored key with room on the stack, the
 * opcodes of most of a snapshot's bytes (frames referring to frames already
 * seen); false, having read nothing, for the general path to handle and
 * explain the rest. */
static inline bool push_memo_reference(struct reader *reader, uint8_t opcode)
{
    size_t width = opcode == 'h' ? 1 : 4;
    if (reader->length - reader->offset < width)
        return false;
    const uint8_t *bytes = reader->data + reader->offset;
    size_t key = width == 1 ? bytes[0]
                            : (size_t)bytes[0] | (size_t)bytes[1] << 8 | (size_t)bytes[2] << 16 |
                                  (size_t)bytes[3] << 24;
    if (key >= reader->memo_used || reader->stack_count == reader->stack_capacity)
        return false;
    const struct memo_entry *entry = &reader->memo[key];
    if (!entry->value)
        return false;
    reader->offset += width;
    note_placeholder(reader, entry->value);
    reader->stack[reader->stack_count++] = entry->value;
    if (entry->skipped_key)
        skip_if_key(reader);
    return true;
}

/* BININT1, BININT2, BININT, and LONG1 of at most 8 bytes where the file
 * holds 8 bytes after its length: the integers of every entry, outside
 * skipped values, with room on the stack. False, having read nothing, for
 * the general path to handle and explain the rest. */
static inline bool push_small_integer(struct reader *reader, uint8_t opcode)
{
    size_t left = reader->length - reader->offset;
    const uint8_t *bytes = reader->data + reader->offset;
    int64_t number;
    size_t width;
    switch (opcode) {
    case 'K':
        if (left < 1)
            return false;
        number = bytes[0];
        width = 1;
        break;
    case 'M':
        if (left < 2)
            return false;
        number = (int64_t)bytes[0] | (int64_t)bytes[1] << 8;
        width = 2;
        break;
    case 'J':
        if (left < 4)
            return false;
        number = (int32_t)((uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
                           (uint32_t)bytes[3] << 24);
        width = 4;
        break;
    case 0x8a: {
        if (left < 9 || bytes[0] > 8)
            return false;
        size_t count = bytes[0];
        uint64_t raw = little_endian_8(bytes + 1);
        if (count < 8) {
            raw &= (UINT64_C(1) << (count * 8)) - 1;
            if (count > 0 && (bytes[count] & 0x80))
                raw |= UINT64_MAX << (count * 8);
        }
        number = (int64_t)raw;
        width = 1 + count;
        break;
    }
    default:
        return false;
    }
    if (reader->skipping || reader->stack_count == reader->stack_capacity)
        return false;
    struct data_value *value = data_new(reader->document, DATA_INT);
    if (!value)
        return false;
    value->integer = number;
    reader->stack[reader->stack_count++] = value; /* new, so not a placeholder */
    reader->offset += width;
    return true;
}

/* MEMOIZE as the pickler writes it: the next key in order, with room for
 * it; false, having done nothing, for memo_put to handle and explain the
 * rest. */
static inline bool memoize_in_order(struct reader *reader)
{
    size_t key = reader->memo_entries;
    if (key != reader->memo_used || key >= reader->memo_capacity || key >= reader->length ||
        reader->stack_count <= stack_floor(reader))
        return false;
    struct data_value *value = reader->stack[reader->stack_count - 1];
    reader->memo[key].value = value;
    reader->memo[key].skipped_key = reader->skipped_key_count && is_skipped_key(reader, value);
    reader->memo_used = reader->memo_entries = key + 1;
    return true;
}

/* Decodes opcodes inside a batch of a skipped value's items (MARK ...
 * SETITEMS or APPENDS within its frames: most of a snapshot's opcodes) with
 * the state in locals and nothing built. It takes only the opcodes the
 * pickler writes there, and only where they would succeed without growing
 * an array; at any other it stops before reading it, for the general path
 * to decode or explain, as it also does once the batch that holds it is
 * closed. The stack and the memo end as the general path leaves them. */
static void skim_batch(struct reader *reader)
{
    const uint8_t *data = reader->data;
    size_t offset = reader->offset, length = reader->length;
    struct data_value **stack = reader->stack;
    size_t count = reader->stack_count, stack_capacity = reader->stack_capacity;
    size_t *marks = reader->marks;
    size_t mark_count = reader->mark_count, mark_capacity = reader->mark_capacity;
    struct memo_entry *memo = reader->memo;
    size_t memo_used = reader->memo_used, memo_entries = reader->memo_entries;
    struct data_value *const *placeholders = reader->placeholders;
    /* Everything it pushes lies at or above the innermost MARK, which lies
     * at or above the skipped value's slot; it cuts the stack only down to
     * such a MARK with a placeholder just below it, so never down to that
     * slot. With the floor lowered to the slot once, no push or cut here
     * needs to move it. */
    if (reader->skip_slot < reader->placeholder_floor)
        reader->placeholder_floor = reader->skip_slot;
    size_t skip_marks = reader->skip_marks;
    /* MEMOIZE's key must fit the array, and the file (as memo_put says). */
    size_t memo_limit = reader->memo_capacity < length ? reader->memo_capacity : length;
    /* Nine bytes cover every fixed operand here; text needs its own check. */
    if (length < 9)
        return;
    size_t last_start = length - 9;
    while (mark_count > skip_marks && offset <= last_start) {
        const uint8_t *at = data + offset;
        struct data_value *pushed;
        size_t width;
        switch (at[0]) {
        case 'j':
        case 'h': {
            /* Frames referring to frames already seen come in long runs:
             * as many as the stack's room and the bytes left (five for the
             * longer form) allow, without a check of either. */
            size_t room = stack_capacity - count, bytes_for = (length - offset) / 5;
            size_t run = room < bytes_for ? room : bytes_for;
            /* Runs of one form are the rule: a loop for each, taking turns. */
            bool unstored = false;
            while (run > 0 && !unstored && (at[0] == 'j' || at[0] == 'h')) {
                if (at[0] == 'j') {
                    for (; run > 0 && at[0] == 'j'; run--, at += 5) {
                        size_t key = (size_t)at[1] | (size_t)at[2] << 8 |
                                     (size_t)at[3] << 16 | (size_t)at[4] << 24;
                        if ((unstored = key >= memo_used || !memo[key].value))
                            break;
                        stack[count++] = memo[key].value;
                    }
                } else {
                    for (; run > 0 && at[0] == 'h'; run--, at += 2) {
                        size_t key = at[1];
                        if ((unstored = key >= memo_used || !memo[key].value))
                            break;
                        stack[count++] = memo[key].value;
                    }
                }
            }
            offset = (size_t)(at - data);
            /* Out of room or bytes, or at a key never stored: the general
             * path takes it from here. */
            if (run == 0 || unstored)
                goto done;
            continue;
        }
        case 'K':
            pushed = placeholders[DATA_INT];
            width = 2;
            break;
        case 'M':
            pushed = placeholders[DATA_INT];
            width = 3;
            break;
        case 'J':
            pushed = placeholders[DATA_INT];
            width = 5;
            break;
        case 0x8a: /* LONG1 */
            if (length - offset - 2 < at[1])
                goto done;
            pushed = placeholders[DATA_INT];
            width = 2 + (size_t)at[1];
            break;
        case 'N':
            pushed = placeholders[DATA_NONE];
            width = 1;
            break;
        case 0x88:
        case 0x89:
            pushed = placeholders[DATA_BOOL];
            width = 1;
            break;
        case '}':
            pushed = placeholders[DATA_DICT];
            width = 1;
            break;
        case ']':
            pushed = placeholders[DATA_LIST];
            width = 1;
            break;
        case 0x8c: { /* SHORT_BINUNICODE: built, as push_text says why */
            size_t text_length = at[1];
            if (length - offset - 2 < text_length || count == stack_capacity)
                goto done;
            pushed = data_new(reader->document, DATA_STRING);
            if (!pushed)
                goto done;
            pushed->text.bytes = (const char *)at + 2;
            pushed->text.length = text_length;
            width = 2 + text_length;
            break;
        }
        case 0x94: { /* MEMOIZE, in key order */
            size_t key = memo_entries;
            if (count <= marks[mark_count - 1] || key != memo_used || key >= memo_limit)
                goto done;
            memo[key].value = stack[count - 1];
            memo[key].skipped_key = reader->skipped_key_count && is_skipped_key(reader, stack[count - 1]);
            memo_used = memo_entries = key + 1;
            offset += 1;
            continue;
        }
        case '(':
            if (mark_count == mark_capacity)
                goto done;
            marks[mark_count++] = count;
            offset += 1;
            continue;
        case 'u':
        case 'e': { /* SETITEMS, APPENDS into a placeholder */
            size_t height = marks[mark_count - 1];
            size_t below = mark_count > 1 ? marks[mark_count - 2] : 0;
            enum data_kind kind = at[0] == 'u' ? DATA_DICT : DATA_LIST;
            if (height == 0 || height - 1 < below || stack[height - 1] != placeholders[kind] ||
                (kind == DATA_DICT && (count - height) % 2))
                goto done;
            mark_count--;
            count = height;
            offset += 1;
            continue;
        }
        case 0x95: /* FRAME */
            offset += 9;
            continue;
        default:
            goto done;
        }
        if (!pushed || count == stack_capacity)
            goto done;
        stack[count++] = pushed;
        offset += width;
    }
done:
    reader->offset = offset;
    reader->stack_count = count;
    reader->mark_count = mark_count;
    reader->memo_used = memo_used;
    reader->memo_entries = memo_entries;
}

/* Executes one data opcode; sets *stopped at STOP. */
static inline bool step(struct reader *reader, uint8_t opcode, bool *stopped)
{
    uint64_t number;
    size_t height = 0; /* set by pop_mark before any use; the compiler cannot tell */
    const uint8_t *bytes;
    struct data_value *value;
    switch (opcode) {
    case 0x80: /* PROTO */
        if (!read_unsigned(reader, 1, &number))
            return false;
        if (number < 2 || number > 5)
            return fail(reader, "names a protocol other than 2 to 5");
        return true;
    case 0x95: /* FRAME: only a hint for buffered readers */
        return operand(reader, 8, &bytes);
    case '.':
        if (reader->mark_count || reader->stack_count != 1)
            return fail(reader, "leaves other than exactly one value (malformed pickle)");
        if (is_placeholder(reader, reader->stack[0]))
            return give_up_skipping(reader);
        *stopped = true;
        return true;
    case '(':
        if (!growable_array_reserve((void **)&reader->marks, &reader->mark_capacity,
                                    reader->mark_count + 1, sizeof *reader->marks))
            return fail(reader, "ran out of host memory");
        reader->marks[reader->mark_count++] = reader->stack_count;
        return true;
    case '}':
        return push(reader, new_value(reader, DATA_DICT));
    case ']':
        return push(reader, new_value(reader, DATA_LIST));
    case ')':
        return push(reader, new_value(reader, DATA_TUPLE));
    case 'd':
        return pop_mark(reader, &height) && build_from_stack(reader, DATA_DICT, height);
    case 'l':
        return pop_mark(reader, &height) && build_from_stack(reader, DATA_LIST, height);
    case 't':
        return pop_mark(reader, &height) && build_from_stack(reader, DATA_TUPLE, height);
    case 0x85:
    case 0x86:
    case 0x87: /* TUPLE1..3 */
        return need_stack(reader, opcode - 0x84u) &&
               build_from_stack(reader, DATA_TUPLE, reader->stack_count - (opcode - 0x84u));
    case 's':
        return need_stack(reader, 3) &&
               add_to_container(reader, DATA_DICT, reader->stack_count - 2);
    case 'u':
        return pop_mark(reader, &height) && add_to_container(reader, DATA_DICT, height);
    case 'a':
        return need_stack(reader, 2) &&
               add_to_container(reader, DATA_LIST, reader->stack_count - 1);
    case 'e':
        return pop_mark(reader, &height) && add_to_container(reader, DATA_LIST, height);
    case 'J':
    case 'K':
    case 'M':
    case 0x8a:
        if (push_small_integer(reader, opcode))
            return true;
        if (opcode == 'J')
            return read_unsigned(reader, 4, &number) &&
                   push_integer(reader, (int32_t)(uint32_t)number);
        if (opcode == 0x8a)
            return read_unsigned(reader, 1, &number) && push_long(reader, number);
        return read_unsigned(reader, opcode == 'K' ? 1 : 2, &number) &&
               push_integer(reader, (int64_t)number);
    case 0x8b:
        return read_unsigned(reader, 4, &number) && push_long(reader, number);
    case 'G':
        return push_float(reader);
    case 'N':
        return push(reader, new_value(reader, DATA_NONE));
    case 0x88:
    case 0x89:
        value = new_value(reader, DATA_BOOL);
        if (value && !reader->skipping)
            value->boolean = opcode == 0x88;
        return push(reader, value);
    case 0x8c:
        return push_text(reader, DATA_STRING, 1);
    case 'X':
        return push_text(reader, DATA_STRING, 4);
    case 0x8d:
        return push_text(reader, DATA_STRING, 8);
    case 'C':
        return push_text(reader, DATA_BYTES, 1);
    case 'B':
        return push_text(reader, DATA_BYTES, 4);
    case 0x8e:
        return push_text(reader, DATA_BYTES, 8);
    case 0x94:
        return memoize_in_order(reader) || memo_put(reader, reader->memo_entries);
    case 'q':
        return read_unsigned(reader, 1, &number) && memo_put(reader, number);
    case 'r':
        return read_unsigned(reader, 4, &number) && memo_put(reader, number);
    case 'h':
    case 'j':
        return push_memo_reference(reader, opcode) ||
               (read_unsigned(reader, opcode == 'h' ? 1 : 4, &number) && memo_get(reader, number));
    default:
        return refuse(reader, opcode);
    }
}

/* One decoding of the file; *escaped when skipping had to be given up. */
static bool decode(const uint8_t *data, size_t length, const char *const *skipped_keys,
                   size_t skipped_key_count, struct data_document *document,
                   struct read_error *error, bool *escaped)
{
    *document = (struct data_document){0};
    *escaped = false;
    if (length == 0 || data[0] != 0x80)
        return read_fail(error, "byte 0: not a pickle of protocol 2 to 5 (it must start with "
                                  "the PROTO opcode 0x80)");
    struct reader reader = {.data = data,
                            .length = length,
                            .document = document,
                            .error = error,
                            .skipped_keys = skipped_keys,
                            .skipped_key_count = skipped_key_count,
                            .placeholder_floor = SIZE_MAX};
    for (size_t index = 0; index < skipped_key_count; index++)
        reader.skipped_key_lengths[index] = strlen(skipped_keys[index]);
    bool stopped = false, ok = true;
    while (ok && !stopped) {
        if (reader.skipping && reader.mark_count > reader.skip_marks)
            skim_batch(&reader);
        if (reader.offset == length) {
            ok = read_fail(error, "byte %zu: the file ends before the STOP opcode", length);
            break;
        }
        reader.opcode_offset = reader.offset;
        uint8_t opcode = data[reader.offset++];
        if (reader.skipping && !in_skipped_value(&reader, opcode))
            reader.skipping = false;
        ok = step(&reader, opcode, &stopped);
    }
    if (ok)
        document->root = reader.stack[0];
    else
        data_document_destroy(document);
    free(reader.stack);
    free(reader.marks);
    free(reader.memo);
    *escaped = reader.placeholder_escaped;
    return ok;
}

bool pickle_read(const uint8_t *data, size_t length, struct data_document *document,
                 struct read_error *error)
{
    bool escaped;
    return decode(data, length, NULL, 0, document, error, &escaped);
}

bool pickle_read_skipping(const uint8_t *data, size_t length, const char *const *skipped_keys,
                          size_t skipped_key_count, struct data_document *document,
                          struct read_error *error)
{
    /* Skipping only saves work: beyond the keys it can hold, none is skipped. */
    if (skipped_key_count > PICKLE_MAX_SKIPPED_KEYS)
        skipped_key_count = 0;
    bool escaped;
    if (decode(data, length, skipped_keys, skipped_key_count, document, error, &escaped))
        return true;
    /* The file shares a skipped value with a place the caller reads. */
    return escaped && decode(data, length, NULL, 0, document, error, &escaped);
}

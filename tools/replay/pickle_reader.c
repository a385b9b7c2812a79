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
    struct data_value **memo;
    size_t memo_capacity;
    size_t memo_entries; /* distinct memo keys set; MEMOIZE uses it as the next key */
    struct read_error *error;
};

static bool fail(struct reader *reader, const char *problem)
{
    uint8_t opcode = reader->data[reader->opcode_offset];
    const char *name = opcodes[opcode].name;
    return read_fail(reader->error, "byte %zu: %s %s", reader->opcode_offset,
                       name ? name : "opcode", problem);
}

static bool push_growing(struct reader *reader, struct data_value *value)
{
    if (!value || !growable_array_reserve((void **)&reader->stack, &reader->stack_capacity,
                                          reader->stack_count + 1, sizeof *reader->stack))
        return fail(reader, "ran out of host memory");
    reader->stack[reader->stack_count++] = value;
    return true;
}

/* Nearly every opcode pushes: the common case stays inline. */
static inline bool push(struct reader *reader, struct data_value *value)
{
    if (__builtin_expect(value != NULL && reader->stack_count < reader->stack_capacity, 1)) {
        reader->stack[reader->stack_count++] = value;
        return true;
    }
    return push_growing(reader, value);
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
    struct data_value *value = data_new(reader->document, DATA_INT);
    if (value)
        value->integer = integer;
    return push(reader, value);
}

/* LONG1 and LONG4: a two's-complement little-endian integer of `count` bytes,
 * of any width. One that int64_t cannot hold is kept as too wide, since
 * snapshots carry such values in fields the replay never reads. */
static bool push_long(struct reader *reader, uint64_t count)
{
    const uint8_t *bytes;
    if (count > reader->length - reader->offset)
        return fail(reader, "is cut short: the file ends inside its operand");
    if (!operand(reader, (size_t)count, &bytes))
        return false;
    size_t low = count < 8 ? (size_t)count : 8;
    uint64_t raw = little_endian(bytes, low);
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
    struct data_value *value = data_new(reader->document, kind);
    if (value) {
        value->text.bytes = (const char *)bytes;
        value->text.length = (size_t)length;
    }
    return push(reader, value);
}

static bool push_float(struct reader *reader)
{
    const uint8_t *bytes;
    if (!operand(reader, 8, &bytes))
        return false;
    uint64_t raw = 0;
    for (size_t index = 0; index < 8; index++)
        raw = raw << 8 | bytes[index]; /* big-endian, unlike the integers */
    struct data_value *value = data_new(reader->document, DATA_FLOAT);
    if (value)
        memcpy(&value->real, &raw, sizeof value->real);
    return push(reader, value);
}

/* Appends the `count` stack values from `height` up to a container's items. */
static bool append_items(struct reader *reader, struct data_value *container, size_t height,
                         size_t count)
{
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
    struct data_value *container = data_new(reader->document, kind);
    if (!container)
        return fail(reader, "ran out of host memory");
    if (!append_items(reader, container, height, count))
        return false;
    reader->stack_count = height;
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
    if (!append_items(reader, container, height, count))
        return false;
    reader->stack_count = height;
    return true;
}

static bool memo_put(struct reader *reader, uint64_t key)
{
    if (!need_stack(reader, 1))
        return false;
    /* A well-formed pickle stores fewer memo entries than it has bytes. */
    if (key >= reader->length)
        return fail(reader, "uses a memo key larger than the file could hold");
    size_t old_capacity = reader->memo_capacity;
    if (!growable_array_reserve((void **)&reader->memo, &reader->memo_capacity, (size_t)key + 1,
                                sizeof *reader->memo))
        return fail(reader, "ran out of host memory");
    memset(reader->memo + old_capacity, 0,
           (reader->memo_capacity - old_capacity) * sizeof *reader->memo);
    if (!reader->memo[key])
        reader->memo_entries++;
    reader->memo[key] = reader->stack[reader->stack_count - 1];
    return true;
}

static bool memo_get(struct reader *reader, uint64_t key)
{
    if (key >= reader->memo_capacity || !reader->memo[key]) {
        char problem[64];
        snprintf(problem, sizeof problem, "refers to memo key %" PRIu64 ", which was never stored",
                 key);
        return fail(reader, problem);
    }
    return push(reader, reader->memo[key]);
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

/* Executes one data opcode; sets *stopped at STOP. */
static bool step(struct reader *reader, uint8_t opcode, bool *stopped)
{
    uint64_t number;
    size_t height;
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
        *stopped = true;
        return true;
    case '(':
        if (!growable_array_reserve((void **)&reader->marks, &reader->mark_capacity,
                                    reader->mark_count + 1, sizeof *reader->marks))
            return fail(reader, "ran out of host memory");
        reader->marks[reader->mark_count++] = reader->stack_count;
        return true;
    case '}':
        return push(reader, data_new(reader->document, DATA_DICT));
    case ']':
        return push(reader, data_new(reader->document, DATA_LIST));
    case ')':
        return push(reader, data_new(reader->document, DATA_TUPLE));
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
        return read_unsigned(reader, 4, &number) && push_integer(reader, (int32_t)(uint32_t)number);
    case 'K':
        return read_unsigned(reader, 1, &number) && push_integer(reader, (int64_t)number);
    case 'M':
        return read_unsigned(reader, 2, &number) && push_integer(reader, (int64_t)number);
    case 0x8a:
        return read_unsigned(reader, 1, &number) && push_long(reader, number);
    case 0x8b:
        return read_unsigned(reader, 4, &number) && push_long(reader, number);
    case 'G':
        return push_float(reader);
    case 'N':
        return push(reader, data_new(reader->document, DATA_NONE));
    case 0x88:
    case 0x89:
        value = data_new(reader->document, DATA_BOOL);
        if (value)
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
        return memo_put(reader, reader->memo_entries);
    case 'q':
        return read_unsigned(reader, 1, &number) && memo_put(reader, number);
    case 'r':
        return read_unsigned(reader, 4, &number) && memo_put(reader, number);
    case 'h':
        return read_unsigned(reader, 1, &number) && memo_get(reader, number);
    case 'j':
        return read_unsigned(reader, 4, &number) && memo_get(reader, number);
    default:
        return refuse(reader, opcode);
    }
}

bool pickle_read(const uint8_t *data, size_t length, struct data_document *document,
                 struct read_error *error)
{
    *document = (struct data_document){0};
    if (length == 0 || data[0] != 0x80)
        return read_fail(error, "byte 0: not a pickle of protocol 2 to 5 (it must start with "
                                  "the PROTO opcode 0x80)");
    struct reader reader = {.data = data, .length = length, .document = document, .error = error};
    bool stopped = false, ok = true;
    while (ok && !stopped) {
        if (reader.offset == length) {
            ok = read_fail(error, "byte %zu: the file ends before the STOP opcode", length);
            break;
        }
        reader.opcode_offset = reader.offset;
        ok = step(&reader, data[reader.offset++], &stopped);
    }
    if (ok)
        document->root = reader.stack[0];
    else
        data_document_destroy(document);
    free(reader.stack);
    free(reader.marks);
    free(reader.memo);
    return ok;
}

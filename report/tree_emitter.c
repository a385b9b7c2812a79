/* The JSON and pickle encodings of tree_emitter.h.
 *
 * The pickle uses protocol 2 and only PROTO, EMPTY_DICT, EMPTY_LIST, MARK,
 * SETITEMS, APPENDS, BININT1, BININT2, BININT, LONG1, BINFLOAT, BINUNICODE,
 * NEWTRUE, NEWFALSE and STOP: every one of them is in the unpickler of
 * PyTorch's memory_viz, and none imports or calls anything. Containers are
 * opened with their EMPTY_ opcode plus a MARK and filled by one SETITEMS or
 * APPENDS at their end; no memo is written because nothing is shared. */
#include "tree_emitter.h"

#include <inttypes.h>
#include <string.h>

enum {
    PICKLE_PROTO = 0x80,
    PICKLE_STOP = '.',
    PICKLE_MARK = '(',
    PICKLE_EMPTY_DICT = '}',
    PICKLE_EMPTY_LIST = ']',
    PICKLE_SETITEMS = 'u',
    PICKLE_APPENDS = 'e',
    PICKLE_BININT = 'J',
    PICKLE_BININT1 = 'K',
    PICKLE_BININT2 = 'M',
    PICKLE_LONG1 = 0x8a,
    PICKLE_BINFLOAT = 'G',
    PICKLE_BINUNICODE = 'X',
    PICKLE_NEWTRUE = 0x88,
    PICKLE_NEWFALSE = 0x89,
};

static void put_byte(struct tree_emitter *emitter, uint8_t byte)
{
    report_output_bytes(emitter->output, &byte, 1);
}

/* ---- JSON ---- */

/* A comma before every item but a container's first; a dict value is part
 * of its key's item. */
static void json_item(struct tree_emitter *emitter)
{
    if (emitter->after_key) {
        emitter->after_key = false;
        return;
    }
    if (emitter->depth == 0)
        return;
    if (!emitter->first[emitter->depth])
        report_output_string(emitter->output, ", ");
    emitter->first[emitter->depth] = false;
}

static void json_open(struct tree_emitter *emitter, const char *bracket)
{
    json_item(emitter);
    report_output_string(emitter->output, bracket);
    if (emitter->depth + 1 < TREE_EMITTER_MAX_DEPTH)
        emitter->depth++;
    else
        emitter->output->failed = true;
    emitter->first[emitter->depth] = true;
}

static void json_close(struct tree_emitter *emitter, const char *bracket)
{
    report_output_string(emitter->output, bracket);
    emitter->depth--;
}

static void json_begin_dict(struct tree_emitter *emitter) { json_open(emitter, "{"); }
static void json_end_dict(struct tree_emitter *emitter) { json_close(emitter, "}"); }
static void json_begin_list(struct tree_emitter *emitter) { json_open(emitter, "["); }
static void json_end_list(struct tree_emitter *emitter) { json_close(emitter, "]"); }

static void json_key(struct tree_emitter *emitter, const char *key)
{
    json_item(emitter);
    report_output_json_string(emitter->output, key);
    report_output_string(emitter->output, ": ");
    emitter->after_key = true;
}

static void json_signed(struct tree_emitter *emitter, int64_t value)
{
    json_item(emitter);
    report_output_format(emitter->output, "%" PRId64, value);
}

static void json_unsigned(struct tree_emitter *emitter, uint64_t value)
{
    json_item(emitter);
    report_output_format(emitter->output, "%" PRIu64, value);
}

static void json_real(struct tree_emitter *emitter, double value)
{
    json_item(emitter);
    report_output_format(emitter->output, "%.17g", value);
}

static void json_string(struct tree_emitter *emitter, const char *value)
{
    json_item(emitter);
    report_output_json_string(emitter->output, value);
}

static void json_boolean(struct tree_emitter *emitter, bool value)
{
    json_item(emitter);
    report_output_string(emitter->output, value ? "true" : "false");
}

const struct tree_emitter_encoding tree_emitter_json = {
    json_begin_dict, json_end_dict, json_begin_list, json_end_list, json_key,
    json_signed,     json_unsigned, json_real,       json_string,   json_boolean,
};

/* ---- pickle ---- */

static void pickle_begin_dict(struct tree_emitter *emitter)
{
    put_byte(emitter, PICKLE_EMPTY_DICT);
    put_byte(emitter, PICKLE_MARK);
}

static void pickle_end_dict(struct tree_emitter *emitter) { put_byte(emitter, PICKLE_SETITEMS); }

static void pickle_begin_list(struct tree_emitter *emitter)
{
    put_byte(emitter, PICKLE_EMPTY_LIST);
    put_byte(emitter, PICKLE_MARK);
}

static void pickle_end_list(struct tree_emitter *emitter) { put_byte(emitter, PICKLE_APPENDS); }

static void pickle_string(struct tree_emitter *emitter, const char *value)
{
    uint32_t length = (uint32_t)strlen(value);
    uint8_t header[5] = {PICKLE_BINUNICODE, (uint8_t)length, (uint8_t)(length >> 8),
                         (uint8_t)(length >> 16), (uint8_t)(length >> 24)};
    report_output_bytes(emitter->output, header, sizeof header);
    report_output_bytes(emitter->output, value, length);
}

static void pickle_key(struct tree_emitter *emitter, const char *key) { pickle_string(emitter, key); }

/* LONG1: the shortest little-endian two's complement that keeps the sign. */
static void pickle_long(struct tree_emitter *emitter, uint64_t bits, bool negative)
{
    uint8_t bytes[9];
    size_t length = 0;
    uint64_t rest = bits;
    do {
        bytes[length++] = (uint8_t)rest;
        rest >>= 8;
    } while (length < 8 && rest != (negative ? (UINT64_MAX >> (8 * length)) : 0));
    bool sign_bit = bytes[length - 1] & 0x80;
    if (sign_bit != negative)
        bytes[length++] = negative ? 0xff : 0x00;
    put_byte(emitter, PICKLE_LONG1);
    put_byte(emitter, (uint8_t)length);
    report_output_bytes(emitter->output, bytes, length);
}

static void pickle_signed(struct tree_emitter *emitter, int64_t value)
{
    if (value >= 0 && value < 0x100) {
        put_byte(emitter, PICKLE_BININT1);
        put_byte(emitter, (uint8_t)value);
    } else if (value >= 0 && value < 0x10000) {
        put_byte(emitter, PICKLE_BININT2);
        put_byte(emitter, (uint8_t)value);
        put_byte(emitter, (uint8_t)(value >> 8));
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        uint32_t bits = (uint32_t)(int32_t)value;
        uint8_t bytes[5] = {PICKLE_BININT, (uint8_t)bits, (uint8_t)(bits >> 8),
                            (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)};
        report_output_bytes(emitter->output, bytes, sizeof bytes);
    } else {
        pickle_long(emitter, (uint64_t)value, value < 0);
    }
}

static void pickle_unsigned(struct tree_emitter *emitter, uint64_t value)
{
    if (value <= INT32_MAX)
        pickle_signed(emitter, (int64_t)value);
    else
        pickle_long(emitter, value, false);
}

static void pickle_real(struct tree_emitter *emitter, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    put_byte(emitter, PICKLE_BINFLOAT);
    for (int shift = 56; shift >= 0; shift -= 8)
        put_byte(emitter, (uint8_t)(bits >> shift));
}

static void pickle_boolean(struct tree_emitter *emitter, bool value)
{
    put_byte(emitter, value ? PICKLE_NEWTRUE : PICKLE_NEWFALSE);
}

const struct tree_emitter_encoding tree_emitter_pickle = {
    pickle_begin_dict, pickle_end_dict,  pickle_begin_list, pickle_end_list, pickle_key,
    pickle_signed,     pickle_unsigned,  pickle_real,       pickle_string,   pickle_boolean,
};

void tree_emitter_begin(struct tree_emitter *emitter, const struct tree_emitter_encoding *encoding,
                        struct report_output *output)
{
    *emitter = (struct tree_emitter){.encoding = encoding, .output = output};
    if (encoding == &tree_emitter_pickle) {
        put_byte(emitter, PICKLE_PROTO);
        put_byte(emitter, 2);
    }
}

void tree_emitter_end(struct tree_emitter *emitter)
{
    if (emitter->encoding == &tree_emitter_pickle)
        put_byte(emitter, PICKLE_STOP);
    else
        report_output_string(emitter->output, "\n");
}

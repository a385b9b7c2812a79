#include "rmm_csv_reader.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FIELD_COUNT 6

/* A field of the current row: not NUL-terminated, it points into the text. */
struct field {
    const char *start;
    size_t length;
};

static bool field_is(struct field field, const char *word)
{
    return field.length == strlen(word) && memcmp(field.start, word, field.length) == 0;
}

static const char *quoted(struct field field, char *buffer, size_t size)
{
    return read_quote(field.start, field.length, buffer, size);
}

/* Unsigned integer in `base` over the whole field; false on anything else or
 * on overflow. */
static bool parse_unsigned(struct field field, unsigned base, uint64_t *value)
{
    if (field.length == 0)
        return false;
    uint64_t result = 0;
    for (size_t index = 0; index < field.length; index++) {
        char c = field.start[index];
        unsigned digit;
        if (c >= '0' && c <= '9')
            digit = (unsigned)(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            digit = (unsigned)(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            digit = (unsigned)(c - 'A' + 10);
        else
            return false;
        if (__builtin_mul_overflow(result, base, &result) ||
            __builtin_add_overflow(result, digit, &result))
            return false;
    }
    *value = result;
    return true;
}

/* Pointers and streams are printed as `0x...` by RMM; a bare number is read as
 * hexadecimal for pointers and decimal for streams and threads. */
static bool parse_handle(struct field field, unsigned bare_base, uint64_t *value)
{
    if (field.length > 2 && field.start[0] == '0' &&
        (field.start[1] == 'x' || field.start[1] == 'X'))
        return parse_unsigned((struct field){field.start + 2, field.length - 2}, 16, value);
    return parse_unsigned(field, bare_base, value);
}

/* RMM writes the wall clock as HH:MM:SS.ffffff; other writers use seconds
 * (since the epoch) with a fraction. Either becomes microseconds. */
static bool parse_time(struct field field, int64_t *time_us)
{
    const char *dot = memchr(field.start, '.', field.length);
    struct field whole = {field.start, dot ? (size_t)(dot - field.start) : field.length};
    struct field fraction = {dot ? dot + 1 : field.start,
                             dot ? field.length - whole.length - 1 : 0};
    uint64_t seconds = 0, part;
    if (memchr(whole.start, ':', whole.length)) {
        /* Hours, minutes, seconds; minutes and seconds below 60. */
        const char *cursor = whole.start, *end = whole.start + whole.length;
        for (int unit = 0; unit < 3; unit++) {
            const char *colon = memchr(cursor, ':', (size_t)(end - cursor));
            if ((unit < 2) != (colon != NULL))
                return false;
            const char *stop = colon ? colon : end;
            if (!parse_unsigned((struct field){cursor, (size_t)(stop - cursor)}, 10, &part) ||
                part >= (unit == 0 ? 1000000 : 60))
                return false;
            seconds = seconds * 60 + part;
            cursor = stop + 1;
        }
    } else if (!parse_unsigned(whole, 10, &seconds) || seconds > UINT64_C(1) << 40) {
        return false;
    }
    uint64_t micros = 0;
    if (dot) {
        if (fraction.length == 0 || !parse_unsigned(fraction, 10, &part))
            return false;
        /* Keep six digits: pad shorter fractions, drop finer ones. */
        size_t digits = fraction.length;
        for (micros = part; digits < 6; digits++)
            micros *= 10;
        for (; digits > 6; digits--)
            micros /= 10;
    }
    *time_us = (int64_t)(seconds * 1000000 + micros);
    return true;
}

/* Splits one row at commas into at most six fields; returns how many it has. */
static size_t split_row(const char *line, size_t length, struct field fields[FIELD_COUNT])
{
    size_t count = 0;
    const char *start = line, *end = line + length;
    for (;;) {
        const char *comma = memchr(start, ',', (size_t)(end - start));
        const char *stop = comma ? comma : end;
        if (count < FIELD_COUNT)
            fields[count] = (struct field){start, (size_t)(stop - start)};
        count++;
        if (!comma)
            return count;
        start = comma + 1;
    }
}

static const char *const column_names[FIELD_COUNT] = {"Thread",  "Time", "Action",
                                                      "Pointer", "Size", "Stream"};

/* "line N: <Column> '<value>' <problem>". */
static bool bad_field(struct read_error *error, uint32_t line,
                      const struct field fields[FIELD_COUNT], size_t column, const char *problem)
{
    char shown[200];
    return read_fail(error, "line %" PRIu32 ": %s %s %s", line, column_names[column],
                       quoted(fields[column], shown, sizeof shown), problem);
}

static bool read_row(struct replay_trace_builder *builder, const struct field fields[FIELD_COUNT],
                     uint32_t line, struct read_error *error)
{
    struct replay_record record = {.position = {.origin = REPLAY_ORIGIN_CSV_LINE, .major = line}};

    if (field_is(fields[2], "allocate failure")) {
        builder->trace->ignored_count++;
        return true;
    }
    if (field_is(fields[2], "allocate")) {
        record.action = REPLAY_ALLOC;
    } else if (field_is(fields[2], "free") || field_is(fields[2], "deallocate")) {
        record.action = REPLAY_FREE;
    } else {
        char shown[200];
        return read_fail(error,
                           "line %" PRIu32 ": unknown action %s (expected allocate, free, "
                           "deallocate or allocate failure)",
                           line, quoted(fields[2], shown, sizeof shown));
    }
    if (!parse_handle(fields[0], 10, &record.thread))
        return bad_field(error, line, fields, 0,
                         "is not a thread id (expected a decimal or 0x-prefixed number)");
    if (!parse_time(fields[1], &record.time_us))
        return bad_field(error, line, fields, 1,
                         "is not a time (expected HH:MM:SS.ffffff or seconds)");
    if (!parse_handle(fields[3], 16, &record.address))
        return bad_field(error, line, fields, 3,
                         "is not an address (expected hexadecimal such as 0x7f0a00000000)");
    if (!parse_unsigned(fields[4], 10, &record.size))
        return bad_field(error, line, fields, 4,
                         "is not a number of bytes (expected a decimal integer)");
    if (!parse_handle(fields[5], 10, &record.stream))
        return bad_field(error, line, fields, 5,
                         "is not a stream handle (expected a decimal or 0x-prefixed number)");
    return replay_builder_add(builder, &record, error);
}

bool rmm_csv_read(const char *text, size_t length, struct replay_trace *trace,
                  struct read_error *error)
{
    struct replay_trace_builder builder;
    replay_builder_init(&builder, trace, "RMM replay CSV");
    const char *cursor = text, *end = text + length;
    uint32_t line = 0;
    bool header_seen = false;
    while (cursor < end) {
        const char *newline = memchr(cursor, '\n', (size_t)(end - cursor));
        const char *stop = newline ? newline : end;
        size_t line_length = (size_t)(stop - cursor);
        if (line_length && cursor[line_length - 1] == '\r')
            line_length--;
        line++;
        const char *row = cursor;
        cursor = newline ? newline + 1 : end;
        if (line_length == 0)
            continue;

        struct field fields[FIELD_COUNT];
        if (!header_seen) {
            header_seen = true;
            if (line_length != strlen(RMM_CSV_HEADER) || memcmp(row, RMM_CSV_HEADER, line_length)) {
                char shown[200];
                read_fail(error, "line %" PRIu32 ": header is %s (expected '" RMM_CSV_HEADER "')",
                            line, quoted((struct field){row, line_length}, shown, sizeof shown));
                replay_builder_abandon(&builder);
                return false;
            }
            continue;
        }
        size_t count = split_row(row, line_length, fields);
        bool ok = count == FIELD_COUNT
                      ? read_row(&builder, fields, line, error)
                      : read_fail(error,
                                    "line %" PRIu32 ": %zu fields (expected 6: " RMM_CSV_HEADER ")",
                                    line, count);
        if (!ok) {
            replay_builder_abandon(&builder);
            return false;
        }
    }
    if (!header_seen) {
        read_fail(error, "line 1: empty file (expected the header '" RMM_CSV_HEADER "')");
        replay_builder_abandon(&builder);
        return false;
    }
    return replay_builder_finish(&builder, error);
}

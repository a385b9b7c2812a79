#include "json_reader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A snapshot nests six levels deep; anything far deeper is not one, and the
 * limit keeps the recursion bounded. */
#define MAX_DEPTH 64

struct parser {
    const char *text;
    size_t length;
    size_t offset;
    struct data_document *document;
    struct read_error *error;
};

static bool fail_at(struct parser *parser, size_t offset, const char *problem)
{
    return read_fail(parser->error, "byte %zu: %s", offset, problem);
}

static bool out_of_memory(struct parser *parser)
{
    return fail_at(parser, parser->offset, "ran out of host memory");
}

static void skip_space(struct parser *parser)
{
    while (parser->offset < parser->length) {
        char c = parser->text[parser->offset];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        parser->offset++;
    }
}

/* The next byte, or 0 at the end (a NUL inside JSON text is an error anyway). */
static char peek(const struct parser *parser)
{
    return parser->offset < parser->length ? parser->text[parser->offset] : '\0';
}

static bool literal(struct parser *parser, const char *word, struct data_value **value,
                    enum data_kind kind, bool truth)
{
    size_t length = strlen(word);
    if (parser->length - parser->offset < length ||
        memcmp(parser->text + parser->offset, word, length) != 0)
        return fail_at(parser, parser->offset, "expected a JSON value");
    parser->offset += length;
    *value = data_new(parser->document, kind);
    if (!*value)
        return out_of_memory(parser);
    (*value)->boolean = truth;
    return true;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool number(struct parser *parser, struct data_value **value)
{
    size_t start = parser->offset;
    bool integral = true;
    if (peek(parser) == '-')
        parser->offset++;
    if (peek(parser) == '0') {
        parser->offset++;
    } else if (is_digit(peek(parser))) {
        while (is_digit(peek(parser)))
            parser->offset++;
    } else {
        return fail_at(parser, start, "expected a JSON value");
    }
    if (peek(parser) == '.') {
        integral = false;
        parser->offset++;
        if (!is_digit(peek(parser)))
            return fail_at(parser, parser->offset, "expected a digit after '.'");
        while (is_digit(peek(parser)))
            parser->offset++;
    }
    if (peek(parser) == 'e' || peek(parser) == 'E') {
        integral = false;
        parser->offset++;
        if (peek(parser) == '+' || peek(parser) == '-')
            parser->offset++;
        if (!is_digit(peek(parser)))
            return fail_at(parser, parser->offset, "expected a digit in the exponent");
        while (is_digit(peek(parser)))
            parser->offset++;
    }
    char digits[64];
    size_t length = parser->offset - start;
    /* An integer of any length is valid JSON (Python writes them exactly);
     * one beyond int64_t is kept as too wide, for the fields that ignore it. */
    bool too_wide = integral && length >= sizeof digits;
    if (length >= sizeof digits && !integral)
        return fail_at(parser, start, "number longer than 63 characters");
    long long integer = 0;
    if (!too_wide) {
        memcpy(digits, parser->text + start, length);
        digits[length] = '\0';
        errno = 0;
        integer = integral ? strtoll(digits, NULL, 10) : 0;
        too_wide = integral && errno == ERANGE;
    }
    *value = data_new(parser->document, integral ? DATA_INT : DATA_FLOAT);
    if (!*value)
        return out_of_memory(parser);
    if (integral) {
        (*value)->integer = too_wide ? 0 : integer;
        (*value)->too_wide = too_wide;
    } else {
        (*value)->real = strtod(digits, NULL);
    }
    return true;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits of a \u escape at `offset`, or -1. */
static long hex4(const struct parser *parser, size_t offset)
{
    if (parser->length - offset < 4)
        return -1;
    long code = 0;
    for (size_t index = 0; index < 4; index++) {
        int digit = hex_digit(parser->text[offset + index]);
        if (digit < 0)
            return -1;
        code = code * 16 + digit;
    }
    return code;
}

static size_t utf8_encode(unsigned long code, char *out)
{
    if (code < 0x80) {
        out[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        out[0] = (char)(0xC0 | code >> 6);
        out[1] = (char)(0x80 | (code & 0x3F));
        return 2;
    }
    if (code < 0x10000) {
        out[0] = (char)(0xE0 | code >> 12);
        out[1] = (char)(0x80 | (code >> 6 & 0x3F));
        out[2] = (char)(0x80 | (code & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | code >> 18);
    out[1] = (char)(0x80 | (code >> 12 & 0x3F));
    out[2] = (char)(0x80 | (code >> 6 & 0x3F));
    out[3] = (char)(0x80 | (code & 0x3F));
    return 4;
}

/* One escape after the backslash at parser->offset - 1; appends its UTF-8. */
static bool escape(struct parser *parser, char *out, size_t *used)
{
    size_t at = parser->offset - 1;
    char c = peek(parser);
    parser->offset++;
    static const char plain[] = "\"\\/bfnrt", meaning[] = "\"\\/\b\f\n\r\t";
    const char *found = c ? strchr(plain, c) : NULL;
    if (found) {
        out[(*used)++] = meaning[found - plain];
        return true;
    }
    if (c != 'u')
        return fail_at(parser, at,
                       "invalid escape in a string (expected \\\" \\\\ \\/ \\b \\f "
                       "\\n \\r \\t or \\uXXXX)");
    long code = hex4(parser, parser->offset);
    if (code < 0)
        return fail_at(parser, at, "\\u needs four hexadecimal digits");
    parser->offset += 4;
    if (code >= 0xD800 && code < 0xDC00) {
        long low = parser->length - parser->offset >= 6 && parser->text[parser->offset] == '\\' &&
                           parser->text[parser->offset + 1] == 'u'
                       ? hex4(parser, parser->offset + 2)
                       : -1;
        if (low < 0xDC00 || low >= 0xE000)
            return fail_at(parser, at, "a high surrogate \\u escape without its low half");
        parser->offset += 6;
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    } else if (code >= 0xDC00 && code < 0xE000) {
        return fail_at(parser, at, "a low surrogate \\u escape without its high half");
    }
    *used += utf8_encode((unsigned long)code, out + *used);
    return true;
}

static bool string(struct parser *parser, struct data_value **value)
{
    size_t start = ++parser->offset; /* past the quote */
    bool escaped = false;
    for (;;) {
        if (parser->offset >= parser->length)
            return fail_at(parser, start - 1, "string without its closing quote");
        unsigned char c = (unsigned char)parser->text[parser->offset];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail_at(parser, parser->offset,
                           "control character in a string (write it "
                           "as an escape)");
        if (c == '\\') {
            escaped = true;
            parser->offset++;
        }
        parser->offset++;
    }
    size_t end = parser->offset++;
    *value = data_new(parser->document, DATA_STRING);
    if (!*value)
        return out_of_memory(parser);
    if (!escaped) {
        (*value)->text.bytes = parser->text + start;
        (*value)->text.length = end - start;
        return true;
    }
    /* Escapes only shrink the text (\uXXXX is 6 bytes for at most 3, a
     * surrogate pair 12 for 4), so the raw length bounds the decoded one. */
    char *decoded = malloc(end - start);
    if (!decoded)
        return out_of_memory(parser);
    size_t used = 0, resume = parser->offset;
    parser->offset = start;
    bool ok = true;
    while (ok && parser->offset < end) {
        char c = parser->text[parser->offset++];
        if (c == '\\')
            ok = escape(parser, decoded, &used);
        else
            decoded[used++] = c;
    }
    if (ok) {
        (*value)->text.bytes = data_store_text(parser->document, decoded, used);
        (*value)->text.length = used;
        ok = (*value)->text.bytes != NULL || out_of_memory(parser);
    }
    free(decoded);
    parser->offset = resume;
    return ok;
}

static bool value(struct parser *parser, unsigned depth, struct data_value **result);

/* An array or an object: `close` is ']' or '}'. */
static bool container(struct parser *parser, unsigned depth, struct data_value **result)
{
    bool object = peek(parser) == '{';
    char close = object ? '}' : ']';
    if (depth >= MAX_DEPTH)
        return fail_at(parser, parser->offset, "nesting deeper than 64 levels");
    parser->offset++;
    *result = data_new(parser->document, object ? DATA_DICT : DATA_LIST);
    if (!*result)
        return out_of_memory(parser);
    skip_space(parser);
    if (peek(parser) == close) {
        parser->offset++;
        return true;
    }
    for (;;) {
        struct data_value *items[2];
        size_t count = 0;
        skip_space(parser);
        if (object) {
            if (peek(parser) != '"')
                return fail_at(parser, parser->offset, "expected a string key in an object");
            if (!string(parser, &items[count++]))
                return false;
            skip_space(parser);
            if (peek(parser) != ':')
                return fail_at(parser, parser->offset, "expected ':' after an object key");
            parser->offset++;
        }
        if (!value(parser, depth + 1, &items[count++]))
            return false;
        if (!data_append(parser->document, *result, items, count))
            return out_of_memory(parser);
        skip_space(parser);
        char next = peek(parser);
        parser->offset++;
        if (next == close)
            return true;
        if (next != ',')
            return fail_at(parser, parser->offset - 1,
                           object ? "expected ',' or '}' in an object"
                                  : "expected ',' or ']' in an array");
    }
}

static bool value(struct parser *parser, unsigned depth, struct data_value **result)
{
    skip_space(parser);
    switch (peek(parser)) {
    case '{':
    case '[':
        return container(parser, depth, result);
    case '"':
        return string(parser, result);
    case 't':
        return literal(parser, "true", result, DATA_BOOL, true);
    case 'f':
        return literal(parser, "false", result, DATA_BOOL, false);
    case 'n':
        return literal(parser, "null", result, DATA_NONE, false);
    default:
        return number(parser, result);
    }
}

bool json_read(const char *text, size_t length, struct data_document *document,
               struct read_error *error)
{
    *document = (struct data_document){0};
    struct parser parser = {.text = text, .length = length, .document = document, .error = error};
    /* A byte-order mark is not JSON, but editors write one. */
    if (length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        parser.offset = 3;
    struct data_value *root;
    bool ok = value(&parser, 0, &root);
    if (ok) {
        skip_space(&parser);
        if (parser.offset < length)
            ok = fail_at(&parser, parser.offset, "more text after the JSON value");
    }
    if (ok)
        document->root = root;
    else
        data_document_destroy(document);
    return ok;
}

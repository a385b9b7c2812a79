/* The grammar `key:value(,key:value)*` and its one-line error messages. */
#include "config_internal.h"

#include <stdio.h>
#include <ctype.h>
#include <string.h>

/* Longest excerpt of the offending text quoted in a message. */
#define EXCERPT_MAX 96

enum config_token_kind config_next(struct config_parser *parser)
{
    config_tokenizer_next(&parser->tokenizer, &parser->token);
    return parser->token.kind;
}

size_t config_entry_end(const char *text, size_t start)
{
    int depth = 0;
    size_t position = start;
    for (; text[position] != '\0'; position++) {
        char c = text[position];
        if (c == '[')
            depth++;
        else if (c == ']' && depth > 0)
            depth--;
        else if (c == ',' && depth == 0)
            break;
    }
    return position;
}

static size_t write_excerpt_character(char *out, size_t capacity, size_t used,
                                      unsigned char c, bool escape)
{
    int written = escape
                      ? snprintf(out + used, capacity - used, "\\x%02x", c)
                      : snprintf(out + used, capacity - used, "%c", c);
    if (written < 0 || (size_t)written >= capacity - used)
        return used;
    return used + (size_t)written;
}

static bool is_dropped_whitespace(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* One character of the excerpt: a whole valid UTF-8 sequence, else a byte. */
static size_t excerpt_unit_length(const char *text, size_t position, size_t end)
{
    size_t length = config_utf8_sequence_length((const unsigned char *)text + position);
    return length == 0 || position + length > end ? 1 : length;
}

/* Quotes text[start, end) as the parser saw it: whitespace dropped (so the
 * message stays one line), control bytes and bytes that are not UTF-8
 * escaped. Long text keeps its beginning, which names the key, and its end,
 * where the fault usually is. */
static void write_excerpt(char *out, size_t capacity, const char *text,
                          size_t start, size_t end)
{
    size_t visible = 0;
    for (size_t i = start; i < end && text[i] != '\0'; i += excerpt_unit_length(text, i, end))
        visible += !is_dropped_whitespace((unsigned char)text[i]);

    size_t head = visible, tail_from = visible;
    if (visible > EXCERPT_MAX) {
        head = EXCERPT_MAX / 2;
        tail_from = visible - EXCERPT_MAX / 2;
    }
    size_t used = 0, index = 0;
    out[0] = '\0';
    for (size_t i = start; i < end && text[i] != '\0';) {
        size_t length = excerpt_unit_length(text, i, end);
        unsigned char c = (unsigned char)text[i];
        if (!is_dropped_whitespace(c)) {
            if (index == head && head != tail_from)
                used += (size_t)snprintf(out + used, capacity - used, "...");
            bool escape = c < 0x20 || c == 0x7f || (c >= 0x80 && length == 1);
            for (size_t k = 0; k < length && (index < head || index >= tail_from); k++)
                used = write_excerpt_character(out, capacity, used,
                                               (unsigned char)text[i + k], escape);
            index++;
        }
        i += length;
    }
}

/* Appends `text` to `out`, cutting it if `out` is full. */
static void append_text(char *out, size_t capacity, size_t *used, const char *text)
{
    size_t length = strlen(text);
    if (*used + 1 >= capacity)
        return;
    if (length > capacity - 1 - *used)
        length = capacity - 1 - *used;
    memcpy(out + *used, text, length);
    *used += length;
    out[*used] = '\0';
}

static int fail_span_v(struct config_parser *parser, size_t start, size_t end,
                       const char *what, const char *expected, va_list arguments)
{
    char excerpt[EXCERPT_MAX * 4 + 16];
    char accepted[sizeof parser->error->message];
    write_excerpt(excerpt, sizeof excerpt, parser->text, start, end);
    vsnprintf(accepted, sizeof accepted, expected, arguments);

    char *message = parser->error->message;
    size_t capacity = sizeof parser->error->message;
    const char *pieces[] = {"gpucache: ", parser->variable, ": ", what, " in '",
                            excerpt, "' (expected ", accepted, ")"};
    size_t used = 0;
    message[0] = '\0';
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        append_text(message, capacity, &used, pieces[i]);
    return -1;
}

int config_fail_span(struct config_parser *parser, size_t start, size_t end,
                     const char *what, const char *expected, ...)
{
    va_list arguments;
    va_start(arguments, expected);
    fail_span_v(parser, start, end, what, expected, arguments);
    va_end(arguments);
    return -1;
}

int config_fail_entry(struct config_parser *parser, size_t start,
                      const char *what, const char *expected, ...)
{
    va_list arguments;
    va_start(arguments, expected);
    fail_span_v(parser, start, config_entry_end(parser->text, start), what,
                expected, arguments);
    va_end(arguments);
    return -1;
}

/* Edits (insertions, deletions, substitutions, case changes count as one)
 * between `a` and `b`, capped at 99: enough to rank key names. */
static unsigned edit_distance(const char *a, const char *b)
{
    size_t m = strlen(a), n = strlen(b);
    if (m > 63 || n > 63)
        return 99;
    unsigned row[64];
    for (size_t j = 0; j <= n; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= m; i++) {
        unsigned diagonal = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= n; j++) {
            unsigned above = row[j];
            unsigned substitution = diagonal + (a[i - 1] != b[j - 1]);
            unsigned best = above + 1 < row[j - 1] + 1 ? above + 1 : row[j - 1] + 1;
            row[j] = substitution < best ? substitution : best;
            diagonal = above;
        }
    }
    return row[n];
}

/* The key nearest to `word` when it is a plausible misspelling of one (at
 * most a third of its letters wrong) or the start of one, else NULL. */
static const char *nearest_key(const char *word)
{
    char lowered[64];
    size_t length = strlen(word);
    if (length >= sizeof lowered)
        return NULL;
    for (size_t i = 0; i <= length; i++)
        lowered[i] = (char)tolower((unsigned char)word[i]);
    const char *nearest = NULL;
    unsigned best = 99;
    for (int key = 0; key < GPUCACHE_KEY_COUNT; key++) {
        const char *name = gpucache_config_key_name((enum gpucache_config_key)key);
        unsigned distance = edit_distance(lowered, name);
        if (distance < best) {
            best = distance;
            nearest = name;
        }
    }
    if (best <= (length < 6 ? 2 : length / 3))
        return nearest;
    /* A shortened key ("expandable" for expandable_segments): the first
     * key, in the table's order, that it begins. */
    for (int key = 0; key < GPUCACHE_KEY_COUNT && length >= 4; key++) {
        const char *name = gpucache_config_key_name((enum gpucache_config_key)key);
        if (strncmp(name, word, length) == 0)
            return name;
    }
    return NULL;
}

static int fail_empty_key(struct config_parser *parser, size_t previous_entry_start)
{
    const struct config_token *token = &parser->token;
    if (token->kind == TOKEN_END)
        return config_fail_span(parser, previous_entry_start, token->start,
                                "empty key after the last ','",
                                "key:value after every ','");
    if (token->kind == TOKEN_COMMA) {
        size_t start = previous_entry_start < token->start ? previous_entry_start
                                                           : token->start;
        return config_fail_span(parser, start,
                                config_entry_end(parser->text, token->start + 1),
                                "empty key", "key:value between ','s");
    }
    return config_fail_entry(parser, token->start, "empty key", "key:value");
}

static int fail_after_value(struct config_parser *parser)
{
    char what[64];
    if (parser->token.kind == TOKEN_WORD)
        snprintf(what, sizeof what, "unexpected text after the value");
    else
        snprintf(what, sizeof what, "unexpected '%c' after the value",
                 parser->token.word[0]);
    return config_fail_entry(parser, parser->entry_start, what,
                             "',' between key:value entries");
}

static int parse_entry(struct config_parser *parser)
{
    struct config_token *token = &parser->token;
    size_t start = token->start;
    parser->entry_start = start;

    const struct config_key_descriptor *key =
        token->truncated ? NULL : config_find_key(token->word);
    if (key == NULL && parser->previous_entry_was_path &&
        config_next(parser) != TOKEN_COLON) {
        /* "report:/tmp/a,b.json": the ',' ended the path. */
        return config_fail_span(parser, parser->previous_entry_start,
                                config_entry_end(parser->text, start),
                                "',' in a path",
                                "a path without , : [ or ], which separate the configuration");
    }
    if (key == NULL) {
        const char *nearest = token->truncated ? NULL : nearest_key(token->word);
        if (nearest != NULL)
            return config_fail_entry(parser, start, "unknown key",
                                     "a known key: did you mean '%s'? 'gpucache config --keys' "
                                     "lists them all", nearest);
        return config_fail_entry(parser, start, "unknown key",
                                 "a known key: 'gpucache config --keys' lists them all");
    }
    if (parser->config->key_from_string[key->key])
        return config_fail_entry(parser, start, "duplicate key",
                                 "each key at most once");
    if (config_next(parser) != TOKEN_COLON)
        return config_fail_entry(parser, start, "missing ':' after the key",
                                 "%s:<value>", key->name);
    config_next(parser);
    if (config_parse_value(parser, key) != 0)
        return -1;
    parser->config->key_from_string[key->key] = true;
    parser->key_entry_start[key->key] = start;
    parser->previous_entry_was_path = key->kind == CONFIG_KIND_PATH;
    parser->previous_entry_start = start;
    return 0;
}

int gpucache_config_parse(const char *variable, const char *text,
                          struct gpucache_config *config,
                          struct gpucache_config_error *error)
{
    struct gpucache_config_error ignored_error;
    struct gpucache_config parsed;
    gpucache_config_defaults(&parsed);
    parsed.source_variable = config->source_variable;

    struct config_parser parser = {
        .variable = variable != NULL ? variable : "GPUCACHE_ALLOC_CONF",
        .text = text != NULL ? text : "",
        .config = &parsed,
        .error = error != NULL ? error : &ignored_error,
    };
    parser.error->message[0] = '\0';
    config_tokenizer_init(&parser.tokenizer, parser.text);

    if (config_next(&parser) != TOKEN_END) {
        for (;;) {
            if (parser.token.kind != TOKEN_WORD)
                return fail_empty_key(&parser, parser.previous_entry_start);
            if (parse_entry(&parser) != 0)
                return -1;
            if (parser.token.kind == TOKEN_END)
                break;
            if (parser.token.kind != TOKEN_COMMA)
                return fail_after_value(&parser);
            config_next(&parser);
        }
    }
    if (config_check_consistency(&parser) != 0)
        return -1;
    *config = parsed;
    return 0;
}

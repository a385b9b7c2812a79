/* The kinds of value with a store and a printer of their own, because each
 * fills a table rather than one scalar field (config_keys.def): the roundup
 * divisions per size bucket, the expandable segments' reserve and the
 * reserve per stream class, with the bracketed lists two of them take. */
#include "config_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LIST_NAME_MAX 64

/* One "name:value" item of a bracketed list, with where it lies. */
struct list_item {
    const char *name;
    const char *value;
    size_t start;
    size_t end;
};

typedef int (*list_item_parser)(struct config_parser *parser,
                                const struct config_key_descriptor *key,
                                const struct list_item *item, void *state);

static int fail_list(struct config_parser *parser, size_t end, const char *what,
                     const char *expected)
{
    return config_fail_span(parser, parser->entry_start, end, what, "%s", expected);
}

/* Walks `[name:value,...]` (the '[' is the current token) and hands each
 * item to `parse_item`. An empty list is accepted, as in PyTorch. */
static int parse_list(struct config_parser *parser,
                      const struct config_key_descriptor *key,
                      list_item_parser parse_item, void *state)
{
    const char *unterminated_expected = "']' to close the list";
    const char *item_expected = "<name>:<value> items separated by ','";
    struct config_token *token = &parser->token;
    size_t text_end = strlen(parser->text);
    char name[LIST_NAME_MAX];

    if (config_next(parser) == TOKEN_CLOSE_BRACKET) {
        config_next(parser);
        return 0;
    }
    for (;;) {
        if (token->kind == TOKEN_END)
            return fail_list(parser, text_end, "unterminated list", unterminated_expected);
        if (token->kind != TOKEN_WORD)
            return fail_list(parser, token->end, "empty list item", item_expected);
        struct list_item item = {.name = name, .start = token->start};
        if (token->truncated || token->length >= sizeof name)
            return fail_list(parser, token->end, "list item name too long",
                             "names of at most 63 characters");
        memcpy(name, token->word, token->length + 1);

        enum config_token_kind after_name = config_next(parser);
        if (after_name == TOKEN_END)
            return fail_list(parser, text_end, "unterminated list", unterminated_expected);
        if (after_name != TOKEN_COLON)
            return fail_list(parser, token->end, "missing ':' in a list item", item_expected);
        enum config_token_kind value_kind = config_next(parser);
        if (value_kind == TOKEN_END)
            return fail_list(parser, text_end, "unterminated list", unterminated_expected);
        if (value_kind != TOKEN_WORD)
            return fail_list(parser, token->end, "missing value in a list item",
                             key->expected);
        item.value = token->word;
        item.end = token->end;
        if (token->truncated)
            return fail_list(parser, item.end, "list item value too long", key->expected);
        if (parse_item(parser, key, &item, state) != 0)
            return -1;

        enum config_token_kind separator = config_next(parser);
        if (separator == TOKEN_CLOSE_BRACKET)
            break;
        if (separator == TOKEN_END)
            return fail_list(parser, text_end, "unterminated list", unterminated_expected);
        if (separator != TOKEN_COMMA)
            return fail_list(parser, token->end, "missing ',' between list items",
                             item_expected);
        config_next(parser);
    }
    config_next(parser);
    return 0;
}

struct roundup_list_state {
    size_t last_index;
    size_t last_power; /* log2 of the last boundary, before clamping */
    bool first_value;
    bool saw_remainder; /* the ">:N" item, which must come last */
    bool saw_boundary;
};

/* Quotes the whole entry, up to the list's closing bracket when there is
 * one, so the user sees what they wrote. */
static int fail_item(struct config_parser *parser, const struct list_item *item,
                     const char *what, const char *expected)
{
    const char *close = strchr(parser->text + item->end, ']');
    return fail_list(parser, close != NULL ? (size_t)(close - parser->text) + 1 : item->end, what,
                     expected);
}

static int parse_roundup_item(struct config_parser *parser,
                              const struct config_key_descriptor *key,
                              const struct list_item *item, void *opaque)
{
    struct roundup_list_state *state = opaque;
    uint32_t *table = parser->config->roundup_power2_divisions;
    (void)key;

    uint64_t divisions = 0;
    enum config_number_status status = config_whole_number(item->value, &divisions);
    if (status != NUMBER_OK || (divisions != 0 && !config_is_power_of_two(divisions)) ||
        divisions > (UINT32_MAX >> 1) + 1)
        return fail_item(parser, item, "divisions not 0 or a power of two",
                         "divisions of 0 or a power of two up to 2147483648");
    if (state->saw_remainder)
        return fail_item(parser, item, "item after '>'",
                         "'>:<divisions>' as the last item");

    if (strcmp(item->name, ">") == 0) {
        /* PyTorch fills from the bucket after the last boundary; with no
         * boundary before it, that leaves bucket 0 at 0, as there. */
        for (size_t i = state->last_index + 1; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
            table[i] = (uint32_t)divisions;
        state->saw_remainder = true;
        return 0;
    }

    uint64_t boundary = 0;
    status = config_whole_number(item->name, &boundary);
    if (status != NUMBER_OK || !config_is_power_of_two(boundary))
        return fail_item(parser, item, "boundary not a power of two",
                         "a boundary in MiB that is a power of two, or '>'");
    size_t power = (size_t)(63 - __builtin_clzll(boundary));
    if (state->saw_boundary && power <= state->last_power)
        return fail_item(parser, item, "boundaries not increasing",
                         "boundaries in increasing order");
    /* As PyTorch: boundaries past the last bucket (32768 MiB) land in it,
     * the last one given winning. */
    size_t index = power < GPUCACHE_ROUNDUP_BUCKETS ? power : GPUCACHE_ROUNDUP_BUCKETS - 1;
    state->last_power = power;
    if (state->first_value) {
        for (size_t i = 0; i < index; i++)
            table[i] = (uint32_t)divisions;
        state->first_value = false;
    }
    table[index] = (uint32_t)divisions;
    state->last_index = index;
    state->saw_boundary = true;
    return 0;
}

int config_parse_roundup(struct config_parser *parser,
                         const struct config_key_descriptor *key)
{
    if (parser->token.kind == TOKEN_OPEN_BRACKET) {
        struct roundup_list_state state = {.first_value = true};
        return parse_list(parser, key, parse_roundup_item, &state);
    }
    if (config_require_word(parser, key) != 0)
        return -1;
    uint64_t divisions = 0;
    enum config_number_status status = config_whole_number(parser->token.word, &divisions);
    if (status != NUMBER_OK)
        return config_fail_number(parser, key, status, "negative number");
    if (!config_is_power_of_two(divisions))
        return config_fail_value(parser, key, "not a power of two");
    if (divisions > (UINT32_MAX >> 1) + 1)
        return config_fail_value(parser, key, "number out of range");
    for (size_t i = 0; i < GPUCACHE_ROUNDUP_BUCKETS; i++)
        parser->config->roundup_power2_divisions[i] = (uint32_t)divisions;
    config_next(parser);
    return 0;
}

/* "<fraction>" of device memory or "<n>G" GiB. Unlike PyTorch, which warns
 * and keeps its default, a bad value is an error: a silently ignored reserve
 * is a surprise found only when memory runs out. */
static const char *parse_reserve_value(const char *word, struct gpucache_reserve *reserve)
{
    char number[CONFIG_WORD_MAX];
    size_t length = strlen(word);
    bool gibibytes = length > 0 && (word[length - 1] == 'G' || word[length - 1] == 'g');
    snprintf(number, sizeof number, "%.*s", (int)(gibibytes ? length - 1 : length), word);

    double value = 0.0;
    enum config_number_status status = config_decimal(number, &value);
    if (status == NUMBER_NOT_A_NUMBER)
        return "not a fraction or a size";
    if (status != NUMBER_OK || value <= 0.0)
        return "reserve out of range";
    if (gibibytes) {
        /* 2^30 GiB keeps the byte count far from overflowing. */
        double bytes = value * (double)GIBIBYTE;
        if (value > (double)GIBIBYTE || bytes < 1.0)
            return "reserve out of range";
        reserve->kind = GPUCACHE_RESERVE_BYTES;
        reserve->bytes = (uint64_t)llround(bytes);
        reserve->fraction = 0.0;
        return NULL;
    }
    if (value > 1.0)
        return "reserve out of range";
    reserve->kind = GPUCACHE_RESERVE_FRACTION;
    reserve->fraction = value;
    reserve->bytes = 0;
    return NULL;
}

int config_parse_reserve(struct config_parser *parser,
                         const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    const char *what = parse_reserve_value(parser->token.word,
                                           &parser->config->expandable_segments_reserve);
    if (what != NULL)
        return config_fail_value(parser, key, what);
    config_next(parser);
    return 0;
}

static bool is_class_name_character(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

static int parse_reserve_class_item(struct config_parser *parser,
                                    const struct config_key_descriptor *key,
                                    const struct list_item *item, void *opaque)
{
    struct gpucache_config *config = parser->config;
    (void)opaque;
    size_t length = strlen(item->name);
    bool name_ok = length < GPUCACHE_RESERVE_CLASS_NAME_MAX;
    for (size_t i = 0; i < length; i++)
        name_ok = name_ok && is_class_name_character(item->name[i]);
    if (!name_ok)
        return fail_item(parser, item, "bad class name",
                         "class names of at most 31 letters, digits, '_', '-' or '.'");
    for (size_t i = 0; i < config->reserve_class_count; i++) {
        if (strcmp(config->reserve_classes[i].name, item->name) == 0)
            return fail_item(parser, item, "duplicate class", "each class at most once");
    }
    if (config->reserve_class_count == GPUCACHE_MAX_RESERVE_CLASSES)
        return fail_item(parser, item, "too many classes", "at most 16 classes");

    struct gpucache_reserve_class *class = &config->reserve_classes[config->reserve_class_count];
    const char *what = parse_reserve_value(item->value, &class->reserve);
    if (what != NULL)
        return fail_item(parser, item, what, key->expected);
    snprintf(class->name, sizeof class->name, "%s", item->name);
    config->reserve_class_count++;
    return 0;
}

int config_parse_reserve_by_class(struct config_parser *parser,
                                  const struct config_key_descriptor *key)
{
    if (parser->token.kind != TOKEN_OPEN_BRACKET) {
        if (parser->token.kind == TOKEN_WORD)
            return config_fail_value(parser, key, "not a list");
        return config_fail_value(parser, key, "missing value");
    }
    return parse_list(parser, key, parse_reserve_class_item, NULL);
}

/* Parsers for each kind of value, with PyTorch's ranges; each rejects what
 * PyTorch would reject and also what PyTorch accepts only by accident. */
#include "config_internal.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_NAME_MAX 64

locale_t config_c_locale(void)
{
    return newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

enum number_status {
    NUMBER_OK = 0,
    NUMBER_NOT_A_NUMBER,
    NUMBER_NEGATIVE,
    NUMBER_OVERFLOW,
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_power_of_two(uint64_t value)
{
    return value != 0 && (value & (value - 1)) == 0;
}

/* Digits only: no sign, no spaces, no hexadecimal (stoull's leniency). */
static enum number_status parse_whole_number(const char *word, uint64_t *value)
{
    if (word[0] == '-' && is_digit(word[1])) {
        enum number_status status = parse_whole_number(word + 1, value);
        return status == NUMBER_OK || status == NUMBER_OVERFLOW ? NUMBER_NEGATIVE
                                                                 : status;
    }
    if (word[0] == '\0')
        return NUMBER_NOT_A_NUMBER;
    uint64_t result = 0;
    for (const char *c = word; *c != '\0'; c++) {
        if (!is_digit(*c))
            return NUMBER_NOT_A_NUMBER;
        uint64_t digit = (uint64_t)(*c - '0');
        if (result > (UINT64_MAX - digit) / 10)
            return NUMBER_OVERFLOW;
        result = result * 10 + digit;
    }
    *value = result;
    return NUMBER_OK;
}

/* Plain decimal notation with an optional exponent ("0.5", ".5", "5e-1");
 * no sign, inf, nan or hexadecimal floats. Always read in the C locale. */
static enum number_status parse_decimal(const char *word, double *value)
{
    const char *c = word;
    bool negative = *c == '-';
    if (negative)
        c++;
    size_t mantissa_digits = 0;
    while (is_digit(*c)) {
        c++;
        mantissa_digits++;
    }
    if (*c == '.') {
        c++;
        while (is_digit(*c)) {
            c++;
            mantissa_digits++;
        }
    }
    if (mantissa_digits == 0)
        return NUMBER_NOT_A_NUMBER;
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c == '+' || *c == '-')
            c++;
        if (!is_digit(*c))
            return NUMBER_NOT_A_NUMBER;
        while (is_digit(*c))
            c++;
    }
    if (*c != '\0')
        return NUMBER_NOT_A_NUMBER;
    if (negative)
        return NUMBER_NEGATIVE;
    char *end = NULL;
    double result = strtod_l(word, &end, config_c_locale());
    if (end == NULL || *end != '\0')
        return NUMBER_NOT_A_NUMBER;
    if (!isfinite(result))
        return NUMBER_OVERFLOW;
    *value = result;
    return NUMBER_OK;
}

static int fail_value(struct config_parser *parser,
                      const struct config_key_descriptor *key, const char *what)
{
    return config_fail_entry(parser, parser->entry_start, what, "%s", key->expected);
}

static int fail_number(struct config_parser *parser,
                       const struct config_key_descriptor *key,
                       enum number_status status, const char *negative_what)
{
    const char *what = status == NUMBER_NEGATIVE   ? negative_what
                       : status == NUMBER_OVERFLOW ? "number out of range"
                                                   : "not a number";
    return fail_value(parser, key, what);
}

/* Makes sure the value is one word; lists and missing values are errors. */
static int require_word(struct config_parser *parser,
                        const struct config_key_descriptor *key)
{
    switch (parser->token.kind) {
    case TOKEN_WORD:
        return 0;
    case TOKEN_END:
    case TOKEN_COMMA:
        return fail_value(parser, key, "missing value");
    case TOKEN_OPEN_BRACKET:
        return fail_value(parser, key, "a list is not accepted here");
    default:
        return fail_value(parser, key, "unexpected character instead of a value");
    }
}

int config_parse_boolean(struct config_parser *parser,
                         const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    bool value;
    /* Exactly PyTorch's spelling: "true" and "1" are errors there too. */
    if (strcmp(parser->token.word, "True") == 0)
        value = true;
    else if (strcmp(parser->token.word, "False") == 0)
        value = false;
    else
        return fail_value(parser, key, "not a boolean");

    struct gpucache_config *config = parser->config;
    switch (key->key) {
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS: config->expandable_segments = value; break;
    case GPUCACHE_KEY_THROW_ON_CUDAMALLOC_OOM: config->throw_on_cudamalloc_oom = value; break;
    case GPUCACHE_KEY_RELEASE_LOCK_ON_CUDAMALLOC: config->release_lock_on_cudamalloc = value; break;
    case GPUCACHE_KEY_GRAPH_CAPTURE_RECORD_STREAM_REUSE:
        config->graph_capture_record_stream_reuse = value;
        break;
    case GPUCACHE_KEY_PINNED_USE_BACKGROUND_THREADS:
        config->pinned_use_background_threads = value;
        break;
    case GPUCACHE_KEY_PINNED_USE_CUDA_HOST_REGISTER:
        config->pinned_use_cuda_host_register = value;
        break;
    case GPUCACHE_KEY_PINNED_FREE_CATCH_ALL: config->pinned_free_catch_all = value; break;
    case GPUCACHE_KEY_PASSTHROUGH: config->passthrough = value; break;
    case GPUCACHE_KEY_OOM_MESSAGE: config->oom_message = value; break;
    default: break;
    }
    config_next(parser);
    return 0;
}

int config_parse_mebibytes(struct config_parser *parser,
                           const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    uint64_t megabytes = 0;
    enum number_status status = parse_whole_number(parser->token.word, &megabytes);
    if (status == NUMBER_OK && megabytes > UINT64_MAX / MEBIBYTE)
        status = NUMBER_OVERFLOW;
    if (status != NUMBER_OK)
        return fail_number(parser, key, status, "negative size");

    struct gpucache_config *config = parser->config;
    switch (key->key) {
    case GPUCACHE_KEY_MAX_SPLIT_SIZE_MB:
        /* The minimum depends on large_segment_size_mb, which may come
         * later in the string: checked once every key is read. */
        config->max_split_size = megabytes * MEBIBYTE;
        break;
    case GPUCACHE_KEY_MAX_NON_SPLIT_ROUNDING_MB:
        config->max_non_split_rounding = megabytes * MEBIBYTE;
        break;
    case GPUCACHE_KEY_LARGE_SEGMENT_SIZE_MB:
        if (megabytes <= 10)
            return fail_value(parser, key, "large_segment_size_mb too small");
        config->large_segment_size = megabytes * MEBIBYTE;
        break;
    case GPUCACHE_KEY_EXPANDABLE_SEGMENTS_SIZE_CLASS_MB:
        config->expandable_segments_size_class = megabytes * MEBIBYTE;
        break;
    case GPUCACHE_KEY_PINNED_RESERVE_SEGMENT_SIZE_MB:
        if (megabytes == 0)
            return fail_value(parser, key, "pinned reserve segment size is 0");
        config->pinned_reserve_segment_size_mb = megabytes;
        break;
    default:
        break;
    }
    config_next(parser);
    return 0;
}

int config_parse_fraction(struct config_parser *parser,
                          const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    double value = 0.0;
    enum number_status status = parse_decimal(parser->token.word, &value);
    if (status != NUMBER_OK)
        return fail_number(parser, key, status, "number out of range");

    if (key->key == GPUCACHE_KEY_GARBAGE_COLLECTION_THRESHOLD) {
        if (!(value > 0.0 && value < 1.0))
            return fail_value(parser, key, "number out of range");
        parser->config->garbage_collection_threshold = value;
    } else {
        if (!(value >= 0.0 && value <= 1.0))
            return fail_value(parser, key, "number out of range");
        parser->config->per_process_memory_fraction = value;
    }
    config_next(parser);
    return 0;
}

int config_parse_register_threads(struct config_parser *parser,
                                  const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    uint64_t threads = 0;
    enum number_status status = parse_whole_number(parser->token.word, &threads);
    if (status != NUMBER_OK)
        return fail_number(parser, key, status, "negative number");
    if (!is_power_of_two(threads))
        return fail_value(parser, key, "not a power of two");
    if (threads > 128)
        return fail_value(parser, key, "number out of range");
    parser->config->pinned_num_register_threads = (uint32_t)threads;
    config_next(parser);
    return 0;
}

int config_parse_choice(struct config_parser *parser,
                        const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    static const char *const backends[] = {"native", "cudaMallocAsync", NULL};
    static const char *const reuse_modes[] = {"async", "conservative", "relaxed", NULL};
    static const char *const meminfo_modes[] = {"cache_as_free", "raw", NULL};
    const char *const *choices = key->key == GPUCACHE_KEY_BACKEND ? backends
                                 : key->key == GPUCACHE_KEY_REUSE ? reuse_modes
                                                                  : meminfo_modes;
    int chosen = -1;
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcmp(parser->token.word, choices[i]) == 0)
            chosen = i;
    }
    if (chosen < 0)
        return fail_value(parser, key, "unknown value");

    struct gpucache_config *config = parser->config;
    if (key->key == GPUCACHE_KEY_BACKEND)
        config->backend = (enum gpucache_backend)chosen;
    else if (key->key == GPUCACHE_KEY_REUSE)
        config->reuse = (enum gpucache_reuse_mode)chosen;
    else
        config->meminfo = (enum gpucache_meminfo_mode)chosen;
    config_next(parser);
    return 0;
}

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
    enum number_status status = parse_whole_number(item->value, &divisions);
    if (status != NUMBER_OK || (divisions != 0 && !is_power_of_two(divisions)) ||
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
    status = parse_whole_number(item->name, &boundary);
    if (status != NUMBER_OK || !is_power_of_two(boundary))
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
    if (require_word(parser, key) != 0)
        return -1;
    uint64_t divisions = 0;
    enum number_status status = parse_whole_number(parser->token.word, &divisions);
    if (status != NUMBER_OK)
        return fail_number(parser, key, status, "negative number");
    if (!is_power_of_two(divisions))
        return fail_value(parser, key, "not a power of two");
    if (divisions > (UINT32_MAX >> 1) + 1)
        return fail_value(parser, key, "number out of range");
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
    enum number_status status = parse_decimal(number, &value);
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
    if (require_word(parser, key) != 0)
        return -1;
    const char *what = parse_reserve_value(parser->token.word,
                                           &parser->config->expandable_segments_reserve);
    if (what != NULL)
        return fail_value(parser, key, what);
    config_next(parser);
    return 0;
}

static bool is_class_name_character(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
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
            return fail_value(parser, key, "not a list");
        return fail_value(parser, key, "missing value");
    }
    return parse_list(parser, key, parse_reserve_class_item, NULL);
}

size_t config_utf8_sequence_length(const unsigned char *text)
{
    unsigned char lead = text[0];
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2
                                    : (lead >> 4) == 0xe ? 3
                                    : (lead >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || (length == 2 && lead < 0xc2) || (length == 4 && lead > 0xf4))
        return 0;
    for (size_t i = 1; i < length; i++) {
        if ((text[i] & 0xc0) != 0x80)
            return 0;
    }
    /* Overlong three- and four-byte forms, surrogates, above U+10FFFF. */
    if ((lead == 0xe0 && text[1] < 0xa0) || (lead == 0xed && text[1] >= 0xa0) ||
        (lead == 0xf0 && text[1] < 0x90) || (lead == 0xf4 && text[1] >= 0x90))
        return 0;
    return length;
}

/* The reason a path is unusable, or NULL. Paths end up in JSON reports and
 * in messages, so they must be text; '%' must start a known escape. */
static const char *path_problem(const char *path)
{
    for (const unsigned char *c = (const unsigned char *)path; *c != '\0';) {
        if (*c < 0x20 || *c == 0x7f)
            return "control character in the path";
        size_t length = config_utf8_sequence_length(c);
        if (length == 0)
            return "path is not UTF-8";
        if (*c == '%') {
            if (c[1] != 'p' && c[1] != '%')
                return "unknown '%' escape in the path (use %p for the pid, %% for %)";
            length = 2;
        }
        c += length;
    }
    return NULL;
}

static char *path_field(struct gpucache_config *config, enum gpucache_config_key key)
{
    switch (key) {
    case GPUCACHE_KEY_REPORT: return config->report_path;
    case GPUCACHE_KEY_SUMMARY: return config->summary_path;
    case GPUCACHE_KEY_TRACE: return config->trace_path;
    case GPUCACHE_KEY_TRACE_CSV: return config->trace_csv_path;
    default: return config->snapshot_path;
    }
}

static bool is_path_separator_token(enum config_token_kind kind)
{
    return kind == TOKEN_COLON || kind == TOKEN_OPEN_BRACKET ||
           kind == TOKEN_CLOSE_BRACKET;
}

int config_parse_path(struct config_parser *parser,
                      const struct config_key_descriptor *key)
{
    const char *separators_what = "separator character in the path";
    if (is_path_separator_token(parser->token.kind))
        return fail_value(parser, key, separators_what);
    if (require_word(parser, key) != 0)
        return -1;
    const struct config_token *token = &parser->token;
    if (token->truncated || token->length >= GPUCACHE_PATH_MAX)
        return fail_value(parser, key, "path longer than 511 bytes");
    const char *problem = path_problem(token->word);
    if (problem != NULL)
        return fail_value(parser, key, problem);
    bool to_stderr = strcmp(token->word, "stderr") == 0;
    if (to_stderr && key->key != GPUCACHE_KEY_REPORT && key->key != GPUCACHE_KEY_SUMMARY)
        return fail_value(parser, key, "stderr is only accepted for report and summary");
    snprintf(path_field(parser->config, key->key), GPUCACHE_PATH_MAX, "%s", token->word);
    /* "C:\x" or "http://x" would otherwise report a puzzling missing ','. */
    if (is_path_separator_token(config_next(parser)))
        return fail_value(parser, key, separators_what);
    return 0;
}

/* Signals a snapshot can be asked for with: catchable, not a hardware fault
 * (the program's own crash handling must keep those), not one glibc keeps
 * for itself (32 and 33). */
static bool is_snapshot_signal(long number)
{
    switch (number) {
    case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGILL:
    case SIGFPE: case SIGTRAP: case SIGSYS: case SIGABRT:
        return false;
    default:
        return (number >= 1 && number < 32) || (number >= SIGRTMIN && number <= SIGRTMAX);
    }
}

int config_parse_signal(struct config_parser *parser,
                        const struct config_key_descriptor *key)
{
    if (require_word(parser, key) != 0)
        return -1;
    const char *word = parser->token.word;
    long number = -1;
    uint64_t parsed = 0;
    enum number_status status = parse_whole_number(word, &parsed);
    if (status == NUMBER_OK) {
        number = parsed > 1000 ? -1 : (long)parsed;
    } else if (status == NUMBER_NOT_A_NUMBER) {
        const char *name = strncmp(word, "SIG", 3) == 0 ? word + 3 : word;
        for (int candidate = 1; candidate < 32; candidate++) {
            const char *abbreviation = sigabbrev_np(candidate);
            if (abbreviation != NULL && strcmp(abbreviation, name) == 0)
                number = candidate;
        }
        if (number < 0)
            return fail_value(parser, key, "unknown signal");
    }
    if (!is_snapshot_signal(number))
        return fail_value(parser, key, "signal not usable for snapshots");
    parser->config->snapshot_signal = (int)number;
    config_next(parser);
    return 0;
}

void gpucache_config_signal_name(int signal_number, char *out, size_t capacity)
{
    const char *abbreviation =
        signal_number > 0 && signal_number < 32 ? sigabbrev_np(signal_number) : NULL;
    if (signal_number == 0)
        snprintf(out, capacity, "%s", "");
    else if (abbreviation != NULL)
        snprintf(out, capacity, "SIG%s", abbreviation);
    else
        snprintf(out, capacity, "%d", signal_number);
}

/* Parsers for the kinds of value that are one word and one field, with
 * PyTorch's ranges; each rejects what PyTorch would reject and also what
 * PyTorch accepts only by accident. They store through the key's table row
 * (config_keys.def), never by naming a key. */
#include "config_internal.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

locale_t config_c_locale(void)
{
    return newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool config_is_power_of_two(uint64_t value)
{
    return value != 0 && (value & (value - 1)) == 0;
}

enum config_number_status config_whole_number(const char *word, uint64_t *value)
{
    if (word[0] == '-' && is_digit(word[1])) {
        enum config_number_status status = config_whole_number(word + 1, value);
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

enum config_number_status config_decimal(const char *word, double *value)
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

int config_fail_value(struct config_parser *parser, const struct config_key_descriptor *key,
                      const char *what)
{
    return config_fail_entry(parser, parser->entry_start, what, "%s", key->expected);
}

int config_fail_number(struct config_parser *parser, const struct config_key_descriptor *key,
                       enum config_number_status status, const char *negative_what)
{
    const char *what = status == NUMBER_NEGATIVE   ? negative_what
                       : status == NUMBER_OVERFLOW ? "number out of range"
                                                   : "not a number";
    return config_fail_value(parser, key, what);
}

int config_require_word(struct config_parser *parser, const struct config_key_descriptor *key)
{
    switch (parser->token.kind) {
    case TOKEN_WORD:
        return 0;
    case TOKEN_END:
    case TOKEN_COMMA:
        return config_fail_value(parser, key, "missing value");
    case TOKEN_OPEN_BRACKET:
        return config_fail_value(parser, key, "a list is not accepted here");
    default:
        return config_fail_value(parser, key, "unexpected character instead of a value");
    }
}

static int parse_boolean(struct config_parser *parser, const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    bool value;
    /* Exactly PyTorch's spelling: "true" and "1" are errors there too. */
    if (strcmp(parser->token.word, "True") == 0)
        value = true;
    else if (strcmp(parser->token.word, "False") == 0)
        value = false;
    else
        return config_fail_value(parser, key, "not a boolean");
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

static int parse_mebibytes(struct config_parser *parser, const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    uint64_t megabytes = 0;
    enum config_number_status status = config_whole_number(parser->token.word, &megabytes);
    if (status == NUMBER_OK && megabytes > UINT64_MAX / MEBIBYTE)
        status = NUMBER_OVERFLOW;
    if (status != NUMBER_OK)
        return config_fail_number(parser, key, status, "negative size");
    if (megabytes < key->limits.minimum)
        return config_fail_value(parser, key, key->limits.below_minimum);
    uint64_t value = key->limits.stored_in_mebibytes ? megabytes : megabytes * MEBIBYTE;
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

static int parse_fraction(struct config_parser *parser, const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    double value = 0.0;
    enum config_number_status status = config_decimal(parser->token.word, &value);
    if (status != NUMBER_OK)
        return config_fail_number(parser, key, status, "number out of range");
    bool in_range = key->limits.excludes_bounds ? value > 0.0 && value < 1.0
                                                : value >= 0.0 && value <= 1.0;
    if (!in_range)
        return config_fail_value(parser, key, "number out of range");
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

static int parse_power_of_two(struct config_parser *parser,
                              const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    uint64_t number = 0;
    enum config_number_status status = config_whole_number(parser->token.word, &number);
    if (status != NUMBER_OK)
        return config_fail_number(parser, key, status, "negative number");
    if (!config_is_power_of_two(number))
        return config_fail_value(parser, key, "not a power of two");
    if (number > key->limits.maximum)
        return config_fail_value(parser, key, "number out of range");
    uint32_t value = (uint32_t)number;
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

static int parse_whole_number(struct config_parser *parser,
                              const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    uint64_t number = 0;
    enum config_number_status status = config_whole_number(parser->token.word, &number);
    if (status != NUMBER_OK)
        return config_fail_number(parser, key, status, "negative number");
    if (number > key->limits.maximum)
        return config_fail_value(parser, key, "number out of range");
    uint32_t value = (uint32_t)number;
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

static int parse_choice(struct config_parser *parser, const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    const char *const *choices = key->limits.choices;
    int chosen = -1;
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcmp(parser->token.word, choices[i]) == 0)
            chosen = i;
    }
    if (chosen < 0)
        return config_fail_value(parser, key, "unknown value");
    /* The field is an enum whose values are the names' indices. */
    memcpy(config_field(parser->config, key), &chosen, sizeof chosen);
    config_next(parser);
    return 0;
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

static bool is_path_separator_token(enum config_token_kind kind)
{
    return kind == TOKEN_COLON || kind == TOKEN_OPEN_BRACKET ||
           kind == TOKEN_CLOSE_BRACKET;
}

static int parse_path(struct config_parser *parser, const struct config_key_descriptor *key)
{
    const char *separators_what = "separator character in the path";
    if (is_path_separator_token(parser->token.kind))
        return config_fail_value(parser, key, separators_what);
    if (config_require_word(parser, key) != 0)
        return -1;
    const struct config_token *token = &parser->token;
    if (token->truncated || token->length >= GPUCACHE_PATH_MAX)
        return config_fail_value(parser, key, "path longer than 511 bytes");
    const char *problem = path_problem(token->word);
    if (problem != NULL)
        return config_fail_value(parser, key, problem);
    bool to_stderr = strcmp(token->word, "stderr") == 0;
    if (to_stderr && !key->limits.accepts_stderr)
        return config_fail_value(parser, key, "stderr is only accepted for report and summary");
    snprintf(config_field(parser->config, key), GPUCACHE_PATH_MAX, "%s", token->word);
    /* "C:\x" or "http://x" would otherwise report a puzzling missing ','. */
    if (is_path_separator_token(config_next(parser)))
        return config_fail_value(parser, key, separators_what);
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

static int parse_signal(struct config_parser *parser, const struct config_key_descriptor *key)
{
    if (config_require_word(parser, key) != 0)
        return -1;
    const char *word = parser->token.word;
    long number = -1;
    uint64_t parsed = 0;
    enum config_number_status status = config_whole_number(word, &parsed);
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
            return config_fail_value(parser, key, "unknown signal");
    }
    if (!is_snapshot_signal(number))
        return config_fail_value(parser, key, "signal not usable for snapshots");
    int value = (int)number;
    memcpy(config_field(parser->config, key), &value, sizeof value);
    config_next(parser);
    return 0;
}

int config_parse_value(struct config_parser *parser, const struct config_key_descriptor *key)
{
    static const config_value_parser parsers[CONFIG_KIND_COUNT] = {
        [CONFIG_KIND_BOOLEAN] = parse_boolean,
        [CONFIG_KIND_MEBIBYTES] = parse_mebibytes,
        [CONFIG_KIND_FRACTION] = parse_fraction,
        [CONFIG_KIND_POWER_OF_TWO] = parse_power_of_two,
        [CONFIG_KIND_WHOLE_NUMBER] = parse_whole_number,
        [CONFIG_KIND_CHOICE] = parse_choice,
        [CONFIG_KIND_PATH] = parse_path,
        [CONFIG_KIND_SIGNAL] = parse_signal,
        [CONFIG_KIND_ROUNDUP] = config_parse_roundup,
        [CONFIG_KIND_RESERVE] = config_parse_reserve,
        [CONFIG_KIND_RESERVE_BY_CLASS] = config_parse_reserve_by_class,
    };
    return parsers[key->kind](parser, key);
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

/* Shared between the configuration parser's files; not part of the API. */
#ifndef GPUCACHE_CONFIG_INTERNAL_H
#define GPUCACHE_CONFIG_INTERNAL_H

#include "gpucache_config.h"

#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define MEBIBYTE ((uint64_t)1 << 20)
#define GIBIBYTE ((uint64_t)1 << 30)

/* Longest value token we keep: a path plus its NUL. */
#define CONFIG_WORD_MAX GPUCACHE_PATH_MAX

enum config_token_kind {
    TOKEN_END = 0,
    TOKEN_WORD,
    TOKEN_COMMA,
    TOKEN_COLON,
    TOKEN_OPEN_BRACKET,
    TOKEN_CLOSE_BRACKET,
};

/* PyTorch's tokens: ',' ':' '[' ']' stand alone, every other run of
 * characters is a word, and whitespace is dropped everywhere (so it may even
 * split a word without ending it). */
struct config_token {
    enum config_token_kind kind;
    size_t start; /* offset of the first character in the original text */
    size_t end;   /* offset just past the last non-whitespace character */
    size_t length; /* length of the word without whitespace, even if cut */
    bool truncated; /* the word did not fit in `word` */
    char word[CONFIG_WORD_MAX];
};

struct config_tokenizer {
    const char *text;
    size_t position;
};

void config_tokenizer_init(struct config_tokenizer *tokenizer, const char *text);
void config_tokenizer_next(struct config_tokenizer *tokenizer,
                           struct config_token *token);

struct config_parser {
    const char *variable;
    const char *text;
    struct config_tokenizer tokenizer;
    struct config_token token; /* the token just read */
    struct gpucache_config *config;
    struct gpucache_config_error *error;
    size_t entry_start; /* where the entry being parsed begins */
    size_t previous_entry_start;
    bool previous_entry_was_path; /* a ',' inside it would end it early */
    /* Where each key's entry was, for errors that only show once every key
     * has been read (max_split_size_mb against large_segment_size_mb). */
    size_t key_entry_start[GPUCACHE_KEY_COUNT];
};

/* Reads the next token into parser->token and returns its kind. */
enum config_token_kind config_next(struct config_parser *parser);

/* Formats the one-line error about the text from `start` to the end of the
 * current entry. `expected` completes "(expected ...)". Returns -1. */
int config_fail_entry(struct config_parser *parser, size_t start,
                      const char *what, const char *expected, ...)
    __attribute__((format(printf, 4, 5)));

/* The same, about the text from `start` to `end`. */
int config_fail_span(struct config_parser *parser, size_t start, size_t end,
                     const char *what, const char *expected, ...)
    __attribute__((format(printf, 5, 6)));

/* Offset just past the entry that begins at `start`: its next ',' outside
 * brackets, or the end of the text. */
size_t config_entry_end(const char *text, size_t start);

struct config_key_descriptor;

/* Parses the key's value, starting with the token after ':'. Leaves the
 * token after the value in parser->token. Returns 0 or -1 (error set). */
typedef int (*config_value_parser)(struct config_parser *parser,
                                   const struct config_key_descriptor *key);

/* When a key has an effect (config_keys.def). */
enum config_key_reach {
    CONFIG_REACH_ALWAYS = 0,
    CONFIG_REACH_ALLOCATOR,    /* not under passthrough:True */
    CONFIG_REACH_NATIVE_CACHE, /* nor under backend:cudaMallocAsync */
    CONFIG_REACH_NEVER,        /* accepted for PyTorch, no effect here */
};

/* How a value is read, stored and printed; config_keys.def gives each
 * kind's field type. */
enum config_value_kind {
    CONFIG_KIND_BOOLEAN = 0,
    CONFIG_KIND_MEBIBYTES,
    CONFIG_KIND_FRACTION,
    CONFIG_KIND_POWER_OF_TWO,
    CONFIG_KIND_WHOLE_NUMBER,
    CONFIG_KIND_CHOICE,
    CONFIG_KIND_PATH,
    CONFIG_KIND_SIGNAL,
    /* Stored and printed by code of their own (config_lists.c). */
    CONFIG_KIND_ROUNDUP,
    CONFIG_KIND_RESERVE,
    CONFIG_KIND_RESERVE_BY_CLASS,
    CONFIG_KIND_COUNT
};

/* What a key accepts beyond its kind's syntax; zero accepts everything the
 * kind does. */
struct config_value_limits {
    uint64_t minimum;          /* MEBIBYTES: smallest MiB accepted */
    const char *below_minimum; /* MEBIBYTES: what the message says below it */
    bool stored_in_mebibytes;  /* MEBIBYTES: the field counts MiB, not bytes */
    bool excludes_bounds;      /* FRACTION: (0,1) rather than [0,1] */
    uint64_t maximum;          /* POWER_OF_TWO, WHOLE_NUMBER: largest accepted */
    const char *const *choices; /* CHOICE: the names, NULL-terminated */
    bool accepts_stderr;       /* PATH: "stderr" is a destination */
};

struct config_key_descriptor {
    enum gpucache_config_key key;
    const char *name;
    const char *alias; /* PyTorch's other spelling, or NULL */
    const char *expected; /* what the value may be, for messages */
    enum config_value_kind kind;
    enum config_key_reach reach;
    size_t offset; /* of the field in struct gpucache_config */
    struct config_value_limits limits;
};

/* The descriptor of `key`, and the one named `name` (NULL if none). */
const struct config_key_descriptor *config_key_descriptor(enum gpucache_config_key key);
const struct config_key_descriptor *config_find_key(const char *name);

/* The key's field in `config`, of the type its kind says. */
static inline void *config_field(struct gpucache_config *config,
                                 const struct config_key_descriptor *key)
{
    return (char *)config + key->offset;
}

static inline const void *config_const_field(const struct gpucache_config *config,
                                             const struct config_key_descriptor *key)
{
    return (const char *)config + key->offset;
}

/* PyTorch's defaults, shared and never written. */
const struct gpucache_config *config_default_config(void);

/* Parses the key's value with its kind's parser (config_values.c). */
int config_parse_value(struct config_parser *parser, const struct config_key_descriptor *key);

/* The kinds with a store of their own (config_lists.c). */
int config_parse_roundup(struct config_parser *parser,
                         const struct config_key_descriptor *key);
int config_parse_reserve(struct config_parser *parser,
                         const struct config_key_descriptor *key);
int config_parse_reserve_by_class(struct config_parser *parser,
                                  const struct config_key_descriptor *key);

/* Shared by the value parsers of both files. */
enum config_number_status {
    NUMBER_OK = 0,
    NUMBER_NOT_A_NUMBER,
    NUMBER_NEGATIVE,
    NUMBER_OVERFLOW,
};

/* Digits only: no sign, no spaces, no hexadecimal (stoull's leniency). */
enum config_number_status config_whole_number(const char *word, uint64_t *value);
/* Plain decimal notation with an optional exponent ("0.5", ".5", "5e-1");
 * no sign, inf, nan or hexadecimal floats. Always read in the C locale. */
enum config_number_status config_decimal(const char *word, double *value);
bool config_is_power_of_two(uint64_t value);
/* Makes sure the value is one word; lists and missing values are errors. */
int config_require_word(struct config_parser *parser, const struct config_key_descriptor *key);
/* The error about the whole entry, with the key's "expected" text. */
int config_fail_value(struct config_parser *parser, const struct config_key_descriptor *key,
                      const char *what);
/* The error for a number that did not read, `negative_what` for a sign. */
int config_fail_number(struct config_parser *parser, const struct config_key_descriptor *key,
                       enum config_number_status status, const char *negative_what);

/* Checks between keys once all are read (minimums that depend on
 * large_segment_size_mb, snapshot_signal needing snapshot). */
int config_check_consistency(struct config_parser *parser);

/* Length of the UTF-8 sequence starting at `text`, or 0 if it is invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
size_t config_utf8_sequence_length(const unsigned char *text);

/* The C locale, for number parsing and printing that must not follow the
 * program's locale. glibc returns a static object for "C": no allocation. */
locale_t config_c_locale(void);

#endif

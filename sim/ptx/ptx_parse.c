/* PTX text to the decoded form (ptx_internal.h).
 *
 * The parser reads what nvcc emits: module directives, .global/.const/
 * .shared variables with initializers, .entry kernels with their parameters,
 * and instruction bodies. Everything is resolved while decoding, so the
 * interpreter never looks a name up: registers become slots, kernel
 * parameters offsets in the parameter buffer, variables device addresses or
 * offsets in shared or local memory, labels instruction indices.
 *
 * A kernel that uses an instruction the interpreter does not know still
 * loads (other kernels of the module may be fine) but keeps the reason, and
 * launching it fails with that line.
 *
 * One file because decoding is one pass over one token stream that resolves
 * every name as it goes; split, each part would need the parser's whole state. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_internal.h"

/* ---- a string map ------------------------------------------------------- */

struct map_entry {
    char *key;
    int64_t value;
    int64_t extra;
};

struct map {
    struct map_entry *entries;
    size_t capacity;
    size_t count;
};

static uint64_t hash_string(const char *text, size_t length)
{
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
    return hash;
}

static struct map_entry *map_find(const struct map *map, const char *key, size_t length)
{
    if (map->capacity == 0)
        return NULL;
    size_t index = hash_string(key, length) & (map->capacity - 1);
    for (;;) {
        struct map_entry *entry = &map->entries[index];
        if (entry->key == NULL)
            return NULL;
        if (strncmp(entry->key, key, length) == 0 && entry->key[length] == '\0')
            return entry;
        index = (index + 1) & (map->capacity - 1);
    }
}

static bool map_put(struct map *map, const char *key, size_t length, int64_t value, int64_t extra)
{
    struct map_entry *existing = map_find(map, key, length);
    if (existing != NULL) {
        existing->value = value;
        existing->extra = extra;
        return true;
    }
    if ((map->count + 1) * 2 > map->capacity) {
        size_t capacity = map->capacity ? map->capacity * 2 : 64;
        struct map_entry *entries = calloc(capacity, sizeof *entries);
        if (entries == NULL)
            return false;
        for (size_t i = 0; i < map->capacity; i++) {
            if (map->entries[i].key == NULL)
                continue;
            size_t index = hash_string(map->entries[i].key, strlen(map->entries[i].key)) & (capacity - 1);
            while (entries[index].key != NULL)
                index = (index + 1) & (capacity - 1);
            entries[index] = map->entries[i];
        }
        free(map->entries);
        map->entries = entries;
        map->capacity = capacity;
    }
    size_t index = hash_string(key, length) & (map->capacity - 1);
    while (map->entries[index].key != NULL)
        index = (index + 1) & (map->capacity - 1);
    char *copy = strndup(key, length);
    if (copy == NULL)
        return false;
    map->entries[index] = (struct map_entry){copy, value, extra};
    map->count++;
    return true;
}

static void map_clear(struct map *map)
{
    for (size_t i = 0; i < map->capacity; i++)
        free(map->entries[i].key);
    free(map->entries);
    *map = (struct map){0};
}

/* ---- tokens ------------------------------------------------------------- */

enum token_kind { TOK_END, TOK_WORD, TOK_NUMBER, TOK_STRING, TOK_PUNCT };

struct token {
    enum token_kind kind;
    const char *text;
    size_t length;
    unsigned line;
};

struct parser {
    const char *cursor;
    const char *end;
    unsigned line;
    struct token token; /* the current token */
    char *error;
    size_t error_size;
    bool failed;
    struct ptx_module *module;
    struct map variables; /* module scope: value = index into module->variables */
    ptx_variable_allocator allocate;
    void *allocator_context;
    /* Several texts linked into one module (ptx_module_link): this text's
     * index, and whether .extern symbols wait for another text's definition
     * (alone, an .extern variable with a size gets memory of its own). */
    unsigned text;
    bool linking;
    /* The linkage directives before the declaration being parsed. */
    bool is_visible, is_weak;
};

static void fail(struct parser *parser, const char *format, ...)
{
    if (parser->failed)
        return;
    parser->failed = true;
    int used = snprintf(parser->error, parser->error_size, "PTX line %u: ", parser->token.line);
    if (used < 0 || (size_t)used >= parser->error_size)
        return;
    if (parser->linking) {
        int more = snprintf(parser->error + used, parser->error_size - (size_t)used, "(text %u) ", parser->text);
        if (more < 0 || (size_t)(used + more) >= parser->error_size)
            return;
        used += more;
    }
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(parser->error + used, parser->error_size - (size_t)used, format, arguments);
    va_end(arguments);
}

static bool is_word_start(char c)
{
    return isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

static void skip_space(struct parser *parser)
{
    for (;;) {
        while (parser->cursor < parser->end && isspace((unsigned char)*parser->cursor)) {
            if (*parser->cursor == '\n')
                parser->line++;
            parser->cursor++;
        }
        if (parser->cursor + 1 < parser->end && parser->cursor[0] == '/' && parser->cursor[1] == '/') {
            while (parser->cursor < parser->end && *parser->cursor != '\n')
                parser->cursor++;
            continue;
        }
        if (parser->cursor + 1 < parser->end && parser->cursor[0] == '/' && parser->cursor[1] == '*') {
            parser->cursor += 2;
            while (parser->cursor + 1 < parser->end &&
                   !(parser->cursor[0] == '*' && parser->cursor[1] == '/')) {
                if (*parser->cursor == '\n')
                    parser->line++;
                parser->cursor++;
            }
            parser->cursor = parser->cursor + 2 <= parser->end ? parser->cursor + 2 : parser->end;
            continue;
        }
        /* A NUL ends the text (fatbin PTX entries are padded with them). */
        if (parser->cursor < parser->end && *parser->cursor == '\0') {
            parser->cursor = parser->end;
        }
        return;
    }
}

static void next(struct parser *parser)
{
    skip_space(parser);
    struct token *token = &parser->token;
    token->line = parser->line;
    token->text = parser->cursor;
    if (parser->cursor >= parser->end) {
        token->kind = TOK_END;
        token->length = 0;
        return;
    }
    char c = *parser->cursor;
    const char *start = parser->cursor;
    if (is_word_start(c)) {
        parser->cursor++;
        for (;;) {
            while (parser->cursor < parser->end && is_word_char(*parser->cursor))
                parser->cursor++;
            /* Cache-policy qualifiers such as L2::128B belong to the opcode. */
            if (parser->cursor + 2 < parser->end && parser->cursor[0] == ':' &&
                parser->cursor[1] == ':' && is_word_char(parser->cursor[2])) {
                parser->cursor += 2;
                continue;
            }
            break;
        }
        token->kind = TOK_WORD;
    } else if (isdigit((unsigned char)c)) {
        parser->cursor++;
        while (parser->cursor < parser->end &&
               (isalnum((unsigned char)*parser->cursor) || *parser->cursor == '.' ||
                ((*parser->cursor == '+' || *parser->cursor == '-') &&
                 (parser->cursor[-1] == 'e' || parser->cursor[-1] == 'E') &&
                 !(start[0] == '0' && (start[1] == 'x' || start[1] == 'X' || start[1] == 'f' ||
                                        start[1] == 'F' || start[1] == 'd' || start[1] == 'D')))))
            parser->cursor++;
        token->kind = TOK_NUMBER;
    } else if (c == '"') {
        parser->cursor++;
        while (parser->cursor < parser->end && *parser->cursor != '"')
            parser->cursor++;
        if (parser->cursor < parser->end)
            parser->cursor++;
        token->kind = TOK_STRING;
    } else {
        parser->cursor++;
        token->kind = TOK_PUNCT;
    }
    token->length = (size_t)(parser->cursor - start);
}

static bool is(const struct parser *parser, const char *text)
{
    size_t length = strlen(text);
    return parser->token.length == length && memcmp(parser->token.text, text, length) == 0;
}

static bool accept(struct parser *parser, const char *text)
{
    if (!is(parser, text))
        return false;
    next(parser);
    return true;
}

static bool expect(struct parser *parser, const char *text)
{
    if (accept(parser, text))
        return true;
    fail(parser, "expected '%s' but found '%.*s'", text, (int)parser->token.length, parser->token.text);
    return false;
}

/* Skips to just after the next ';' at this nesting level. */
static void skip_statement(struct parser *parser)
{
    while (parser->token.kind != TOK_END && !is(parser, ";"))
        next(parser);
    accept(parser, ";");
}

/* Skips the rest of the source line (.loc and .file end at the newline). */
static void skip_line(struct parser *parser)
{
    while (parser->cursor < parser->end && *parser->cursor != '\n')
        parser->cursor++;
    next(parser);
}

/* ---- numbers and types -------------------------------------------------- */

static bool parse_integer_text(const char *text, size_t length, int64_t *value)
{
    char buffer[80];
    if (length == 0 || length >= sizeof buffer)
        return false;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    if (length > 1 && buffer[length - 1] == 'U')
        buffer[--length] = '\0';
    char *end;
    errno = 0;
    unsigned long long parsed;
    if (buffer[0] == '0' && length > 1 && isdigit((unsigned char)buffer[1]))
        parsed = strtoull(buffer, &end, 8);
    else if (buffer[0] == '0' && (buffer[1] == 'b' || buffer[1] == 'B'))
        parsed = strtoull(buffer + 2, &end, 2);
    else
        parsed = strtoull(buffer, &end, 0);
    if (*end != '\0' || errno != 0)
        return false;
    *value = (int64_t)parsed;
    return true;
}

static enum ptx_type type_from_name(const char *name, size_t length)
{
    static const struct {
        const char *name;
        enum ptx_type type;
    } types[] = {
        {"b8", T_B8},     {"b16", T_B16},   {"b32", T_B32},     {"b64", T_B64},   {"b128", T_B128},
        {"u8", T_U8},     {"u16", T_U16},   {"u32", T_U32},     {"u64", T_U64},   {"s8", T_S8},
        {"s16", T_S16},   {"s32", T_S32},   {"s64", T_S64},     {"f16", T_F16},   {"f16x2", T_F16X2},
        {"bf16", T_BF16}, {"bf16x2", T_BF16X2}, {"f32", T_F32}, {"f64", T_F64},   {"pred", T_PRED},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == length && memcmp(types[i].name, name, length) == 0)
            return types[i].type;
    return T_NONE;
}

static size_t type_bytes(enum ptx_type type)
{
    switch (type) {
    case T_B8: case T_U8: case T_S8: case T_PRED:
        return 1;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16:
        return 2;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2:
        return 4;
    case T_B64: case T_U64: case T_S64: case T_F64:
        return 8;
    case T_B128:
        return 16;
    case T_NONE:
        break;
    }
    return 0;
}

/* Immediate operand: integers, 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX
 * (f64 bits) and decimal floats, converted to the bits of `type`. */
static bool parse_immediate(const char *text, size_t length, bool negative, enum ptx_type type,
                            int64_t *value)
{
    if (length > 2 && text[0] == '0' && (text[1] == 'f' || text[1] == 'F')) {
        int64_t bits;
        char buffer[32];
        if (length - 2 > 8)
            return false;
        snprintf(buffer, sizeof buffer, "0x%.*s", (int)(length - 2), text + 2);
        if (!parse_integer_text(buffer, strlen(buffer), &bits))
            return false;
        uint32_t single = (uint32_t)bits;
        if (negative)
            single ^= 0x80000000u;
        if (type == T_F64) {
            float f;
            memcpy(&f, &single, 4);
            double d = f;
            memcpy(value, &d, 8);
        } else {
            *value = single;
        }
        return true;
    }
    if (length > 2 && text[0] == '0' && (text[1] == 'd' || text[1] == 'D')) {
        char buffer[32];
        if (length - 2 > 16)
            return false;
        snprintf(buffer, sizeof buffer, "0x%.*s", (int)(length - 2), text + 2);
        int64_t bits;
        if (!parse_integer_text(buffer, strlen(buffer), &bits))
            return false;
        uint64_t dbits = (uint64_t)bits;
        if (negative)
            dbits ^= 0x8000000000000000ull;
        if (type == T_F32) {
            double d;
            memcpy(&d, &dbits, 8);
            float f = (float)d;
            uint32_t single;
            memcpy(&single, &f, 4);
            *value = single;
        } else {
            *value = (int64_t)dbits;
        }
        return true;
    }
    bool decimal_float = memchr(text, '.', length) != NULL ||
                         ((memchr(text, 'e', length) != NULL || memchr(text, 'E', length) != NULL) &&
                          !(length > 1 && (text[1] == 'x' || text[1] == 'X')));
    if (decimal_float || type == T_F32 || type == T_F64) {
        char buffer[80];
        if (length >= sizeof buffer)
            return false;
        memcpy(buffer, text, length);
        buffer[length] = '\0';
        char *end;
        double d = strtod(buffer, &end);
        if (*end != '\0') {
            int64_t integer;
            if (!parse_integer_text(text, length, &integer))
                return false;
            d = (double)integer;
        }
        if (negative)
            d = -d;
        if (type == T_F64) {
            memcpy(value, &d, 8);
        } else {
            float f = (float)d;
            uint32_t single;
            memcpy(&single, &f, 4);
            *value = single;
        }
        return true;
    }
    int64_t integer;
    if (!parse_integer_text(text, length, &integer))
        return false;
    /* Negated as unsigned: -9223372036854775808 is a valid immediate. */
    *value = negative ? (int64_t)(0 - (uint64_t)integer) : integer;
    return true;
}

/* ---- module-scope variables --------------------------------------------- */

static struct ptx_variable *add_variable(struct parser *parser)
{
    struct ptx_module *module = parser->module;
    struct ptx_variable *grown =
        realloc(module->variables, (module->variable_count + 1) * sizeof *module->variables);
    if (grown == NULL) {
        fail(parser, "out of memory");
        return NULL;
    }
    module->variables = grown;
    struct ptx_variable *variable = &grown[module->variable_count++];
    memset(variable, 0, sizeof *variable);
    return variable;
}

/* After the state space: [.align N] .type name[dims] [= init] ; */
struct declaration {
    enum ptx_space space;
    size_t alignment;
    enum ptx_type type;
    const char *name;
    size_t name_length;
    size_t element_count; /* 1 for scalars */
    bool unsized;         /* name[] */
    unsigned char *initial; /* malloc'd, element_count * size */
    unsigned range_count; /* name<N> for .reg */
    bool has_range;
};

static bool parse_initializer_value(struct parser *parser, enum ptx_type type, unsigned char *slot)
{
    bool negative = accept(parser, "-");
    if (parser->token.kind != TOK_NUMBER) {
        fail(parser, "unsupported initializer '%.*s' (only numbers)", (int)parser->token.length,
             parser->token.text);
        return false;
    }
    int64_t value;
    if (!parse_immediate(parser->token.text, parser->token.length, negative, type, &value)) {
        fail(parser, "bad number '%.*s'", (int)parser->token.length, parser->token.text);
        return false;
    }
    memcpy(slot, &value, type_bytes(type));
    next(parser);
    return true;
}

static bool parse_initializer_list(struct parser *parser, struct declaration *declaration,
                                   size_t *filled)
{
    size_t element = type_bytes(declaration->type);
    if (accept(parser, "{")) {
        while (!parser->failed && !is(parser, "}")) {
            if (is(parser, "{")) {
                if (!parse_initializer_list(parser, declaration, filled))
                    return false;
            } else {
                if (*filled >= declaration->element_count) {
                    fail(parser, "too many initializers");
                    return false;
                }
                if (!parse_initializer_value(parser, declaration->type,
                                             declaration->initial + *filled * element))
                    return false;
                (*filled)++;
            }
            if (!accept(parser, ","))
                break;
        }
        return expect(parser, "}");
    }
    if (*filled >= declaration->element_count) {
        fail(parser, "too many initializers");
        return false;
    }
    bool ok = parse_initializer_value(parser, declaration->type, declaration->initial + *filled * element);
    (*filled)++;
    return ok;
}

static bool parse_declaration(struct parser *parser, enum ptx_space space, struct declaration *out)
{
    memset(out, 0, sizeof *out);
    out->space = space;
    out->element_count = 1;
    for (;;) {
        if (accept(parser, ".align")) {
            int64_t alignment;
            if (parser->token.kind != TOK_NUMBER ||
                !parse_integer_text(parser->token.text, parser->token.length, &alignment)) {
                fail(parser, "bad .align");
                return false;
            }
            out->alignment = (size_t)alignment;
            next(parser);
            continue;
        }
        if (is(parser, ".v2") || is(parser, ".v4")) {
            out->element_count *= parser->token.text[2] == '2' ? 2 : 4;
            next(parser);
            continue;
        }
        if (is(parser, ".ptr") || is(parser, ".global") || is(parser, ".const") ||
            is(parser, ".shared") || is(parser, ".local") || is(parser, ".attribute")) {
            next(parser);
            continue;
        }
        break;
    }
    if (parser->token.kind != TOK_WORD || parser->token.text[0] != '.') {
        fail(parser, "expected a type, found '%.*s'", (int)parser->token.length, parser->token.text);
        return false;
    }
    out->type = type_from_name(parser->token.text + 1, parser->token.length - 1);
    if (out->type == T_NONE) {
        fail(parser, "unsupported variable type '%.*s'", (int)parser->token.length, parser->token.text);
        return false;
    }
    next(parser);
    if (parser->token.kind != TOK_WORD) {
        fail(parser, "expected a name");
        return false;
    }
    out->name = parser->token.text;
    out->name_length = parser->token.length;
    next(parser);
    if (accept(parser, "<")) {
        int64_t count;
        if (parser->token.kind != TOK_NUMBER ||
            !parse_integer_text(parser->token.text, parser->token.length, &count)) {
            fail(parser, "bad register count");
            return false;
        }
        next(parser);
        out->range_count = (unsigned)count;
        out->has_range = true;
        if (!expect(parser, ">"))
            return false;
    }
    while (accept(parser, "[")) {
        if (accept(parser, "]")) {
            out->unsized = true;
            continue;
        }
        int64_t count;
        if (parser->token.kind != TOK_NUMBER ||
            !parse_integer_text(parser->token.text, parser->token.length, &count)) {
            fail(parser, "bad array size");
            return false;
        }
        next(parser);
        out->element_count *= (size_t)count;
        if (!expect(parser, "]"))
            return false;
    }
    if (out->alignment == 0)
        out->alignment = type_bytes(out->type) ? type_bytes(out->type) : 1;
    if (accept(parser, "=")) {
        if (out->unsized) {
            fail(parser, "initializer on an unsized array");
            return false;
        }
        out->initial = calloc(out->element_count, type_bytes(out->type));
        if (out->initial == NULL) {
            fail(parser, "out of memory");
            return false;
        }
        size_t filled = 0;
        if (!parse_initializer_list(parser, out, &filled)) {
            free(out->initial);
            out->initial = NULL;
            return false;
        }
    }
    return true;
}

static bool parse_module_variable(struct parser *parser, enum ptx_space space, bool is_extern)
{
    struct declaration declaration;
    if (!parse_declaration(parser, space, &declaration)) {
        free(declaration.initial);
        return false;
    }
    struct ptx_variable *variable = add_variable(parser);
    if (variable == NULL) {
        free(declaration.initial);
        return false;
    }
    variable->name = strndup(declaration.name, declaration.name_length);
    variable->space = space;
    variable->size = declaration.unsized ? 0 : declaration.element_count * type_bytes(declaration.type);
    variable->alignment = declaration.alignment;
    variable->is_extern = is_extern || declaration.unsized;
    variable->visible = parser->is_visible;
    variable->weak = parser->is_weak;
    variable->text = parser->text;
    if (variable->name == NULL ||
        !map_put(&parser->variables, declaration.name, declaration.name_length,
                 (int64_t)(parser->module->variable_count - 1), 0)) {
        free(declaration.initial);
        fail(parser, "out of memory");
        return false;
    }
    if ((space == S_GLOBAL || space == S_CONST) && parser->linking && variable->is_extern) {
        /* Another text defines it: resolve_extern_variables() gives it that
         * definition's address. */
        free(declaration.initial);
        return expect(parser, ";");
    }
    if (space == S_GLOBAL || space == S_CONST) {
        if (variable->is_extern && variable->size == 0) {
            free(declaration.initial);
            fail(parser, "extern .global variable '%s' needs linking (cuLinkCreate) with the text defining it",
                 variable->name);
            return false;
        }
        variable->address = parser->allocate(parser->allocator_context, variable->name, variable->size,
                                             variable->alignment, declaration.initial,
                                             space == S_CONST);
        if (variable->address == 0) {
            free(declaration.initial);
            fail(parser, "no device memory for variable '%s'", variable->name);
            return false;
        }
    }
    free(declaration.initial);
    return expect(parser, ";");
}

/* ---- function bodies ---------------------------------------------------- */

/* Per function decoding state. */
struct function_builder {
    struct ptx_function *function;
    struct map registers; /* name -> slot; prefix ranges: value = base, extra = count */
    struct map labels;    /* name -> instruction index */
    struct map locals;    /* name -> (space, offset): value = offset, extra = space */
    struct map params;    /* kernel params: name -> index */
    size_t capacity;
    /* Branches and shared symbols resolved once the body is complete. */
    struct label_fixup {
        uint32_t instruction;
        char *label;
        unsigned line;
    } *label_fixups;
    size_t label_fixup_count;
    struct shared_fixup {
        uint32_t instruction;
        uint8_t operand;
        size_t variable; /* module variable index */
    } *shared_fixups;
    size_t shared_fixup_count;
    size_t *shared_offsets; /* per module variable: offset + 1, 0 = not placed */
    bool uses_dynamic_shared;
    char *decode_error;
};

static uint32_t new_slot(struct function_builder *builder)
{
    return builder->function->register_count++;
}

static bool declare_registers(struct parser *parser, struct function_builder *builder,
                              const struct declaration *declaration)
{
    if (declaration->has_range) {
        uint32_t base = builder->function->register_count;
        builder->function->register_count += declaration->range_count;
        if (!map_put(&builder->registers, declaration->name, declaration->name_length, base,
                     declaration->range_count + 1)) {
            fail(parser, "out of memory");
            return false;
        }
        return true;
    }
    if (!map_put(&builder->registers, declaration->name, declaration->name_length, new_slot(builder), 0)) {
        fail(parser, "out of memory");
        return false;
    }
    return true;
}

static const struct {
    const char *name;
    enum ptx_special special;
} special_registers[] = {
    {"%tid.x", SR_TID_X},       {"%tid.y", SR_TID_Y},         {"%tid.z", SR_TID_Z},
    {"%ntid.x", SR_NTID_X},     {"%ntid.y", SR_NTID_Y},       {"%ntid.z", SR_NTID_Z},
    {"%ctaid.x", SR_CTAID_X},   {"%ctaid.y", SR_CTAID_Y},     {"%ctaid.z", SR_CTAID_Z},
    {"%nctaid.x", SR_NCTAID_X}, {"%nctaid.y", SR_NCTAID_Y},   {"%nctaid.z", SR_NCTAID_Z},
    {"%laneid", SR_LANEID},     {"%warpid", SR_WARPID},       {"%nwarpid", SR_NWARPID},
    {"%smid", SR_SMID},         {"%nsmid", SR_NSMID},         {"%gridid", SR_GRIDID},
    {"%lanemask_eq", SR_LANEMASK_EQ}, {"%lanemask_lt", SR_LANEMASK_LT},
    {"%lanemask_le", SR_LANEMASK_LE}, {"%lanemask_gt", SR_LANEMASK_GT},
    {"%lanemask_ge", SR_LANEMASK_GE}, {"%dynamic_smem_size", SR_DYNAMIC_SMEM_SIZE},
    {"%total_smem_size", SR_TOTAL_SMEM_SIZE}, {"%clusterid.x", SR_CLUSTERID_X},
    {"%clusterid.y", SR_ZERO}, {"%clusterid.z", SR_ZERO},
    {"%cluster_ctaid.x", SR_CLUSTER_CTAID_X}, {"%cluster_ctaid.y", SR_ZERO},
    {"%cluster_ctaid.z", SR_ZERO}, {"%cluster_nctaid.x", SR_CLUSTER_NCTAID_X},
    {"%cluster_nctaid.y", SR_CLUSTER_NCTAID_X}, {"%cluster_nctaid.z", SR_CLUSTER_NCTAID_X},
    {"%cluster_nctarank", SR_CLUSTER_NCTARANK}, {"%cluster_ctarank", SR_CLUSTER_CTARANK},
};

/* %envreg0..%envreg31, values the driver passes to a kernel: %envreg1 and
 * %envreg2 hold the grid barrier of a cooperative launch (0 otherwise),
 * the rest read 0. The performance counters %pm0..%pm7 and
 * %pm0_64..%pm7_64 read 0 too: nothing counts events on the simulator.
 * -1: not one of these. */
static bool is_zero_special(const char *name, size_t length);

static int environment_special(const char *name, size_t length)
{
    if (length == 8 && memcmp(name, "%envreg1", 8) == 0)
        return SR_GRID_WORKSPACE_HIGH;
    if (length == 8 && memcmp(name, "%envreg2", 8) == 0)
        return SR_GRID_WORKSPACE_LOW;
    return is_zero_special(name, length) ? SR_ZERO : -1;
}

static bool is_zero_special(const char *name, size_t length)
{
    static const char envreg[] = "%envreg", counter[] = "%pm";
    size_t prefix = sizeof envreg - 1;
    if (length > prefix && length <= prefix + 2 && memcmp(name, envreg, prefix) == 0) {
        unsigned index = 0;
        for (size_t i = prefix; i < length; i++) {
            if (!isdigit((unsigned char)name[i]) || (i == prefix && name[i] == '0' && length > prefix + 1))
                return false;
            index = index * 10 + (unsigned)(name[i] - '0');
        }
        return index < 32;
    }
    prefix = sizeof counter - 1;
    if (length > prefix && memcmp(name, counter, prefix) == 0 && name[prefix] >= '0' &&
        name[prefix] <= '7')
        return length == prefix + 1 || (length == prefix + 4 && memcmp(name + prefix + 1, "_64", 3) == 0);
    return false;
}

/* Slot of a register or special register name; PTX_NO_REGISTER if none. */
static uint32_t lookup_register(struct function_builder *builder, const char *name, size_t length)
{
    struct map_entry *entry = map_find(&builder->registers, name, length);
    if (entry != NULL && entry->extra == 0)
        return (uint32_t)entry->value;
    size_t digits = 0;
    while (digits < length && isdigit((unsigned char)name[length - 1 - digits]))
        digits++;
    if (digits > 0 && digits < length) {
        entry = map_find(&builder->registers, name, length - digits);
        if (entry != NULL && entry->extra > 0) {
            int64_t index = strtoll(name + length - digits, NULL, 10);
            if (index < entry->extra - 1)
                return (uint32_t)(entry->value + index);
        }
    }
    int special = -1;
    for (size_t i = 0; i < sizeof special_registers / sizeof special_registers[0] && special < 0; i++)
        if (strlen(special_registers[i].name) == length &&
            memcmp(special_registers[i].name, name, length) == 0)
            special = special_registers[i].special;
    if (special < 0)
        special = environment_special(name, length);
    if (special < 0)
        return PTX_NO_REGISTER;
    uint32_t slot = new_slot(builder);
    struct ptx_function *function = builder->function;
    struct ptx_special_slot *grown =
        realloc(function->specials, (function->special_count + 1) * sizeof *grown);
    if (grown == NULL)
        return PTX_NO_REGISTER;
    function->specials = grown;
    grown[function->special_count++] = (struct ptx_special_slot){slot, (uint8_t)special};
    map_put(&builder->registers, name, length, slot, 0);
    return slot;
}

/* The opcode word split at its dots. */
#define MAX_MODIFIERS 12
struct opcode_word {
    char name[32];
    char modifiers[MAX_MODIFIERS][24];
    unsigned modifier_count;
};

static void split_opcode(const char *text, size_t length, struct opcode_word *word)
{
    memset(word, 0, sizeof *word);
    size_t position = 0;
    size_t part = 0;
    while (position < length && text[position] != '.' && part + 1 < sizeof word->name)
        word->name[part++] = text[position++];
    while (position < length && word->modifier_count < MAX_MODIFIERS) {
        position++; /* the dot */
        char *modifier = word->modifiers[word->modifier_count++];
        part = 0;
        while (position < length && text[position] != '.' && part + 1 < sizeof word->modifiers[0])
            modifier[part++] = text[position++];
        while (position < length && text[position] != '.')
            position++;
    }
}

static const struct {
    const char *name;
    uint8_t op;
} opcode_names[] = {
    {"mov", OP_MOV},       {"ld", OP_LD},         {"ldu", OP_LD},        {"st", OP_ST},
    {"cvta", OP_CVTA},     {"add", OP_ADD},       {"addc", OP_ADD},      {"sub", OP_SUB},
    {"subc", OP_SUB},      {"mul", OP_MUL},       {"mad", OP_MAD},       {"madc", OP_MAD},
    {"mul24", OP_MUL24},   {"mad24", OP_MAD24},   {"sad", OP_SAD},       {"div", OP_DIV},
    {"rem", OP_REM},       {"abs", OP_ABS},       {"neg", OP_NEG},       {"min", OP_MIN},
    {"max", OP_MAX},       {"and", OP_AND},       {"or", OP_OR},         {"xor", OP_XOR},
    {"not", OP_NOT},       {"cnot", OP_CNOT},     {"shl", OP_SHL},       {"shr", OP_SHR},
    {"popc", OP_POPC},     {"clz", OP_CLZ},       {"brev", OP_BREV},     {"bfe", OP_BFE},
    {"bfi", OP_BFI},       {"prmt", OP_PRMT},     {"lop3", OP_LOP3},     {"shf", OP_SHF},
    {"bfind", OP_BFIND},   {"setp", OP_SETP},     {"selp", OP_SELP},
    {"set", OP_SET},       {"slct", OP_SLCT},     {"cvt", OP_CVT},       {"fma", OP_FMA},
    {"rcp", OP_RCP},       {"sqrt", OP_SQRT},     {"rsqrt", OP_RSQRT},   {"sin", OP_SIN},
    {"cos", OP_COS},       {"lg2", OP_LG2},       {"ex2", OP_EX2},       {"tanh", OP_TANH},
    {"testp", OP_TESTP},   {"copysign", OP_COPYSIGN}, {"bra", OP_BRA},
    {"ret", OP_RET},       {"exit", OP_EXIT},     {"bar", OP_BAR},       {"barrier", OP_BAR},
    {"membar", OP_NOP},    {"fence", OP_NOP},     {"atom", OP_ATOM},     {"red", OP_RED},
    {"redux", OP_REDUX},   {"shfl", OP_SHFL},     {"vote", OP_VOTE},     {"activemask", OP_ACTIVEMASK},
    {"match", OP_MATCH},   {"call", OP_CALL_VPRINTF}, {"trap", OP_TRAP}, {"brkpt", OP_TRAP},
    {"nanosleep", OP_NOP}, {"prefetch", OP_NOP},  {"prefetchu", OP_NOP}, {"pmevent", OP_NOP},
    {"discard", OP_NOP},   {"applypriority", OP_NOP}, {"createpolicy", OP_NOP},
    {"cp", OP_CP_ASYNC},   {"dp4a", OP_DP4A},
};

static const char *const compare_names[] = {
    "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
    "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
};

static const char *const atom_names[] = {"add", "min", "max", "inc", "dec", "cas", "exch", "and", "or", "xor"};

/* Modifiers that change nothing the interpreter models (caching, memory
 * ordering and scope: every access is sequentially consistent here). */
static bool is_ignored_modifier(const char *modifier)
{
    static const char *const ignored[] = {
        "nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "acquire", "release",
        "acq_rel", "sc", "gpu", "cta", "sys", "cluster", "uni", "sync", "aligned", "weak", "mmio",
        "noftz", "unified", "full",
    };
    if (strstr(modifier, "::") != NULL || strncmp(modifier, "L1", 2) == 0 || strncmp(modifier, "L2", 2) == 0)
        return true;
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        if (strcmp(modifier, ignored[i]) == 0)
            return true;
    return false;
}

/* Operand as written, before its meaning is known. */
struct raw_operand {
    enum { RAW_WORD, RAW_NUMBER, RAW_VECTOR, RAW_ADDRESS, RAW_SINK } kind;
    bool negate;    /* !%p, or a leading '-' on a number */
    const char *text;
    size_t length;
    /* RAW_VECTOR */
    const char *elements[4];
    size_t element_lengths[4];
    unsigned element_count;
    /* RAW_ADDRESS: [base + offset] */
    int64_t offset;
    bool has_base;
    /* second destination after '|' */
    const char *pair;
    size_t pair_length;
};

#define MAX_RAW_OPERANDS 8

static bool parse_raw_operand(struct parser *parser, struct raw_operand *operand)
{
    memset(operand, 0, sizeof *operand);
    if (accept(parser, "!"))
        operand->negate = true;
    if (accept(parser, "{")) {
        operand->kind = RAW_VECTOR;
        while (!parser->failed && !is(parser, "}")) {
            if (operand->element_count == 4 || parser->token.kind != TOK_WORD) {
                fail(parser, "bad vector operand");
                return false;
            }
            operand->elements[operand->element_count] = parser->token.text;
            operand->element_lengths[operand->element_count++] = parser->token.length;
            next(parser);
            if (!accept(parser, ","))
                break;
        }
        return expect(parser, "}");
    }
    if (accept(parser, "[")) {
        operand->kind = RAW_ADDRESS;
        if (parser->token.kind == TOK_WORD) {
            operand->text = parser->token.text;
            operand->length = parser->token.length;
            operand->has_base = true;
            next(parser);
        }
        bool first_term = !operand->has_base;
        while (!parser->failed && !is(parser, "]")) {
            bool negative = false;
            if (accept(parser, "+")) {
            } else if (!first_term && !is(parser, "-")) {
                fail(parser, "bad address expression");
                return false;
            }
            while (is(parser, "-")) {
                negative = !negative;
                next(parser);
            }
            first_term = false;
            int64_t value;
            if (parser->token.kind != TOK_NUMBER ||
                !parse_integer_text(parser->token.text, parser->token.length, &value)) {
                fail(parser, "bad address offset '%.*s'", (int)parser->token.length, parser->token.text);
                return false;
            }
            operand->offset = (int64_t)((uint64_t)operand->offset + (negative ? 0 - (uint64_t)value : (uint64_t)value));
            next(parser);
        }
        return expect(parser, "]");
    }
    if (accept(parser, "-")) {
        operand->negate = true;
    }
    if (parser->token.kind == TOK_NUMBER) {
        operand->kind = RAW_NUMBER;
    } else if (parser->token.kind == TOK_WORD) {
        operand->kind = (parser->token.length == 1 && parser->token.text[0] == '_') ? RAW_SINK : RAW_WORD;
    } else {
        fail(parser, "unexpected operand '%.*s'", (int)parser->token.length, parser->token.text);
        return false;
    }
    operand->text = parser->token.text;
    operand->length = parser->token.length;
    next(parser);
    if (accept(parser, "|")) {
        if (parser->token.kind != TOK_WORD) {
            fail(parser, "bad second destination");
            return false;
        }
        operand->pair = parser->token.text;
        operand->pair_length = parser->token.length;
        next(parser);
    }
    return true;
}

static void decode_error(struct function_builder *builder, unsigned line, const char *format, ...)
{
    if (builder->decode_error != NULL)
        return;
    char message[240];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    size_t size = strlen(message) + 64;
    builder->decode_error = malloc(size);
    if (builder->decode_error != NULL)
        snprintf(builder->decode_error, size, "PTX line %u: %s", line, message);
}

struct decode {
    struct parser *parser;
    struct function_builder *builder;
    struct ptx_instruction *instruction;
    uint32_t index;
    unsigned line;
};

/* Remembers that operand `operand` of instruction `instruction` holds an
 * offset in local memory or the call scratch. */
static bool add_offset_fixup(struct function_builder *builder, uint32_t instruction, unsigned operand, uint8_t space)
{
    struct ptx_function *function = builder->function;
    struct ptx_offset_fixup *grown =
        realloc(function->offset_fixups, (function->offset_fixup_count + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    function->offset_fixups = grown;
    grown[function->offset_fixup_count++] = (struct ptx_offset_fixup){instruction, (uint8_t)operand, space};
    return true;
}

/* Resolves a word operand (register, symbol) into `out`. */
static bool resolve_word(struct decode *decode, const char *text, size_t length, struct ptx_operand *out,
                         unsigned operand_index)
{
    struct function_builder *builder = decode->builder;
    uint32_t slot = lookup_register(builder, text, length);
    if (slot != PTX_NO_REGISTER) {
        out->kind = K_REG;
        out->reg = slot;
        return true;
    }
    struct map_entry *entry = map_find(&builder->locals, text, length);
    if (entry != NULL) {
        out->kind = K_IMM;
        out->imm = entry->value;
        if ((entry->extra == S_LOCAL || entry->extra == S_CALL_PARAM) &&
            !add_offset_fixup(builder, decode->index, operand_index, (uint8_t)entry->extra))
            return false;
        return true;
    }
    entry = map_find(&builder->params, text, length);
    if (entry != NULL) {
        out->kind = K_IMM;
        out->imm = (int64_t)builder->function->params[entry->value].offset;
        return true;
    }
    entry = map_find(&decode->parser->variables, text, length);
    if (entry != NULL) {
        struct ptx_variable *variable = &decode->parser->module->variables[entry->value];
        out->kind = K_IMM;
        if (variable->space == S_SHARED) {
            struct shared_fixup *grown = realloc(builder->shared_fixups,
                                                 (builder->shared_fixup_count + 1) * sizeof *grown);
            if (grown == NULL)
                return false;
            builder->shared_fixups = grown;
            grown[builder->shared_fixup_count++] =
                (struct shared_fixup){decode->index, (uint8_t)operand_index, (size_t)entry->value};
            out->imm = 0;
        } else if (decode->parser->linking && variable->is_extern) {
            struct ptx_function *function = builder->function;
            struct ptx_symbol_fixup *grown =
                realloc(function->symbol_fixups, (function->symbol_fixup_count + 1) * sizeof *grown);
            if (grown == NULL)
                return false;
            function->symbol_fixups = grown;
            grown[function->symbol_fixup_count++] =
                (struct ptx_symbol_fixup){decode->index, (uint8_t)operand_index, (size_t)entry->value};
            out->imm = 0;
        } else {
            out->imm = (int64_t)variable->address;
        }
        return true;
    }
    decode_error(builder, decode->line, "unknown name '%.*s'", (int)length, text);
    return false;
}

/* Decodes a generic operand. Address symbols give the state space they name
 * through `space` (S_CALL_PARAM for a call's .param scratch). */
static bool decode_operand(struct decode *decode, const struct raw_operand *raw, enum ptx_type type,
                           struct ptx_operand *out, unsigned operand_index, uint8_t *space)
{
    memset(out, 0, sizeof *out);
    struct function_builder *builder = decode->builder;
    switch (raw->kind) {
    case RAW_SINK:
        out->kind = K_REG;
        out->reg = new_slot(builder);
        return true;
    case RAW_NUMBER:
        out->kind = K_IMM;
        if (!parse_immediate(raw->text, raw->length, raw->negate, type, &out->imm)) {
            decode_error(builder, decode->line, "bad immediate '%.*s'", (int)raw->length, raw->text);
            return false;
        }
        return true;
    case RAW_WORD:
        if (!resolve_word(decode, raw->text, raw->length, out, operand_index))
            return false;
        out->negate = raw->negate;
        if (raw->negate && out->kind == K_IMM)
            out->imm = (int64_t)(0 - (uint64_t)out->imm);
        return true;
    case RAW_VECTOR:
        out->kind = K_VEC;
        out->count = (uint8_t)raw->element_count;
        for (unsigned i = 0; i < raw->element_count; i++) {
            if (raw->element_lengths[i] == 1 && raw->elements[i][0] == '_') {
                out->vec[i] = new_slot(builder);
                continue;
            }
            uint32_t slot = lookup_register(builder, raw->elements[i], raw->element_lengths[i]);
            if (slot == PTX_NO_REGISTER) {
                decode_error(builder, decode->line, "unknown register '%.*s'",
                             (int)raw->element_lengths[i], raw->elements[i]);
                return false;
            }
            out->vec[i] = slot;
        }
        return true;
    case RAW_ADDRESS:
        out->kind = K_ADDR;
        out->reg = PTX_NO_REGISTER;
        out->imm = raw->offset;
        if (raw->has_base) {
            uint32_t slot = lookup_register(builder, raw->text, raw->length);
            if (slot != PTX_NO_REGISTER) {
                out->reg = slot;
                return true;
            }
            struct map_entry *entry = map_find(&builder->locals, raw->text, raw->length);
            if (entry != NULL && space != NULL && entry->extra == S_CALL_PARAM)
                *space = S_CALL_PARAM;
            struct ptx_operand symbol;
            if (!resolve_word(decode, raw->text, raw->length, &symbol, operand_index))
                return false;
            out->imm += symbol.imm;
            /* A shared fixup patches o[operand].imm: it adds the variable's
             * offset to what the offset in brackets already put there. */
        }
        return true;
    }
    return false;
}

static enum ptx_space space_from_modifier(const char *modifier)
{
    if (strcmp(modifier, "global") == 0)
        return S_GLOBAL;
    if (strcmp(modifier, "shared") == 0 || strncmp(modifier, "shared::", 8) == 0)
        return S_SHARED;
    if (strcmp(modifier, "local") == 0)
        return S_LOCAL;
    if (strcmp(modifier, "const") == 0)
        return S_CONST;
    if (strcmp(modifier, "param") == 0 || strncmp(modifier, "param::", 7) == 0)
        return S_PARAM;
    return S_GENERIC;
}

static bool is_space_modifier(const char *modifier)
{
    return strcmp(modifier, "global") == 0 || strcmp(modifier, "shared") == 0 ||
           strncmp(modifier, "shared::", 8) == 0 || strcmp(modifier, "local") == 0 ||
           strcmp(modifier, "const") == 0 || strcmp(modifier, "param") == 0 ||
           strncmp(modifier, "param::", 7) == 0;
}

static struct ptx_instruction *push_instruction(struct parser *parser, struct function_builder *builder)
{
    struct ptx_function *function = builder->function;
    if (function->code_count == builder->capacity) {
        size_t capacity = builder->capacity ? builder->capacity * 2 : 256;
        struct ptx_instruction *grown = realloc(function->code, capacity * sizeof *grown);
        if (grown == NULL) {
            fail(parser, "out of memory");
            return NULL;
        }
        function->code = grown;
        builder->capacity = capacity;
    }
    struct ptx_instruction *instruction = &function->code[function->code_count++];
    memset(instruction, 0, sizeof *instruction);
    instruction->guard = PTX_NO_REGISTER;
    instruction->vector = 1;
    return instruction;
}

/* Decodes one instruction statement: the opcode word is the current token. */
static void parse_instruction(struct parser *parser, struct function_builder *builder)
{
    uint32_t guard = PTX_NO_REGISTER;
    bool negate_guard = false;
    unsigned line = parser->token.line;
    if (accept(parser, "@")) {
        negate_guard = accept(parser, "!");
        if (parser->token.kind != TOK_WORD) {
            fail(parser, "bad guard predicate");
            return;
        }
        guard = lookup_register(builder, parser->token.text, parser->token.length);
        if (guard == PTX_NO_REGISTER)
            decode_error(builder, line, "unknown predicate '%.*s'", (int)parser->token.length,
                         parser->token.text);
        next(parser);
    }
    if (parser->token.kind != TOK_WORD) {
        fail(parser, "expected an instruction, found '%.*s'", (int)parser->token.length, parser->token.text);
        return;
    }
    struct opcode_word word;
    const char *opcode_text = parser->token.text;
    size_t opcode_length = parser->token.length;
    split_opcode(opcode_text, opcode_length, &word);
    next(parser);

    /* The operands as written. call's (ret), name, (args) are flattened. */
    struct raw_operand raw[MAX_RAW_OPERANDS];
    unsigned raw_count = 0;
    while (!parser->failed && !is(parser, ";") && parser->token.kind != TOK_END) {
        if (accept(parser, "(") || accept(parser, ")") || accept(parser, ","))
            continue;
        if (raw_count == MAX_RAW_OPERANDS) {
            fail(parser, "too many operands");
            return;
        }
        if (!parse_raw_operand(parser, &raw[raw_count++]))
            return;
    }
    if (!expect(parser, ";"))
        return;

    struct ptx_instruction *instruction = push_instruction(parser, builder);
    if (instruction == NULL)
        return;
    instruction->guard = guard;
    if (negate_guard)
        instruction->flags |= F_NEG_GUARD;
    instruction->line = (uint16_t)(line > 65535 ? 65535 : line);
    struct decode decode = {parser, builder, instruction, builder->function->code_count - 1, line};

    int op = -1;
    for (size_t i = 0; i < sizeof opcode_names / sizeof opcode_names[0]; i++)
        if (strcmp(opcode_names[i].name, word.name) == 0)
            op = opcode_names[i].op;
    if (op < 0) {
        decode_error(builder, line, "unsupported instruction '%.*s'", (int)opcode_length, opcode_text);
        instruction->op = OP_TRAP;
        return;
    }
    instruction->op = (uint8_t)op;
    if (strcmp(word.name, "addc") == 0 || strcmp(word.name, "subc") == 0 || strcmp(word.name, "madc") == 0)
        instruction->flags |= F_CARRY_IN;

    /* Modifiers. */
    enum ptx_type types[3] = {T_NONE, T_NONE, T_NONE};
    unsigned type_count = 0;
    bool compare_seen = false;
    for (unsigned m = 0; m < word.modifier_count; m++) {
        const char *modifier = word.modifiers[m];
        enum ptx_type type = type_from_name(modifier, strlen(modifier));
        if (type != T_NONE) {
            if (type_count < 3)
                types[type_count++] = type;
            continue;
        }
        if (is_space_modifier(modifier)) {
            instruction->space = (uint8_t)space_from_modifier(modifier);
            continue;
        }
        if (strcmp(modifier, "v2") == 0 || strcmp(modifier, "v4") == 0) {
            instruction->vector = (uint8_t)(modifier[1] - '0');
            continue;
        }
        if (strcmp(modifier, "ftz") == 0) { instruction->flags |= F_FTZ; continue; }
        if (strcmp(modifier, "sat") == 0) { instruction->flags |= F_SAT; continue; }
        if (strcmp(modifier, "approx") == 0) { instruction->flags |= F_APPROX; continue; }
        if (strcmp(modifier, "cc") == 0) { instruction->flags |= F_CC; continue; }
        if (strcmp(modifier, "lo") == 0 && op != OP_SETP && op != OP_SET) { instruction->mode = MUL_LO; continue; }
        if (strcmp(modifier, "hi") == 0 && op != OP_SETP && op != OP_SET) { instruction->mode = MUL_HI; continue; }
        if (strcmp(modifier, "wide") == 0) { instruction->mode = MUL_WIDE; continue; }
        static const char *const roundings[] = {"", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"};
        bool matched = false;
        for (unsigned r = 1; r < 9; r++)
            if (strcmp(modifier, roundings[r]) == 0) {
                instruction->rounding = (uint8_t)r;
                matched = true;
            }
        if (matched)
            continue;
        if (op == OP_SETP || op == OP_SET) {
            if (!compare_seen) {
                for (unsigned c = 0; c < sizeof compare_names / sizeof compare_names[0]; c++)
                    if (strcmp(modifier, compare_names[c]) == 0) {
                        instruction->mode = (uint8_t)c;
                        compare_seen = matched = true;
                    }
                if (matched)
                    continue;
            }
            if (strcmp(modifier, "and") == 0) { instruction->boolop = BOOL_AND; continue; }
            if (strcmp(modifier, "or") == 0) { instruction->boolop = BOOL_OR; continue; }
            if (strcmp(modifier, "xor") == 0) { instruction->boolop = BOOL_XOR; continue; }
        }
        if (op == OP_ATOM || op == OP_RED || op == OP_REDUX) {
            for (unsigned a = 0; a < sizeof atom_names / sizeof atom_names[0]; a++)
                if (strcmp(modifier, atom_names[a]) == 0) {
                    instruction->mode = (uint8_t)a;
                    matched = true;
                }
            if (matched)
                continue;
        }
        if (op == OP_SHFL) {
            if (strcmp(modifier, "up") == 0) { instruction->mode = SHFL_UP; continue; }
            if (strcmp(modifier, "down") == 0) { instruction->mode = SHFL_DOWN; continue; }
            if (strcmp(modifier, "bfly") == 0) { instruction->mode = SHFL_BFLY; continue; }
            if (strcmp(modifier, "idx") == 0) { instruction->mode = SHFL_IDX; continue; }
        }
        if (op == OP_VOTE) {
            if (strcmp(modifier, "all") == 0) { instruction->mode = VOTE_ALL; continue; }
            if (strcmp(modifier, "any") == 0) { instruction->mode = VOTE_ANY; continue; }
            if (strcmp(modifier, "uni") == 0) { instruction->mode = VOTE_UNI; continue; }
            if (strcmp(modifier, "ballot") == 0) { instruction->mode = VOTE_BALLOT; continue; }
        }
        if (op == OP_SHF) {
            if (strcmp(modifier, "l") == 0) { instruction->mode = (uint8_t)(instruction->mode & 1); continue; }
            if (strcmp(modifier, "r") == 0) { instruction->mode = (uint8_t)(instruction->mode | 2); continue; }
            if (strcmp(modifier, "wrap") == 0) { instruction->mode = (uint8_t)(instruction->mode & 2); continue; }
            if (strcmp(modifier, "clamp") == 0) { instruction->mode = (uint8_t)(instruction->mode | 1); continue; }
        }
        if (op == OP_TESTP) {
            static const char *const tests[] = {"finite", "infinite", "number", "notanumber", "normal", "subnormal"};
            for (unsigned t = 0; t < 6; t++)
                if (strcmp(modifier, tests[t]) == 0) {
                    instruction->mode = (uint8_t)t;
                    matched = true;
                }
            if (matched)
                continue;
        }
        if (op == OP_BAR) {
            if (strcmp(modifier, "sync") == 0 || strcmp(modifier, "aligned") == 0 || strcmp(modifier, "cta") == 0)
                continue;
            if (strcmp(modifier, "warp") == 0) { instruction->op = OP_BAR_WARP; continue; }
            if (strcmp(modifier, "arrive") == 0) { instruction->flags |= F_BAR_ARRIVE; continue; }
            if (strcmp(modifier, "red") == 0) continue;
            if (strcmp(modifier, "popc") == 0) { instruction->mode = BAR_RED_POPC; continue; }
            if (strcmp(modifier, "and") == 0) { instruction->mode = BAR_RED_AND; continue; }
            if (strcmp(modifier, "or") == 0) { instruction->mode = BAR_RED_OR; continue; }
        }
        if (op == OP_DIV && strcmp(modifier, "full") == 0)
            continue;
        if (op == OP_CVTA && strcmp(modifier, "to") == 0) {
            instruction->op = OP_CVTA_TO; /* generic to state space, the other way */
            continue;
        }
        if (op == OP_BFIND && strcmp(modifier, "shiftamt") == 0) {
            instruction->mode = 1; /* the left shift that brings that bit to the top */
            continue;
        }
        if (op == OP_MATCH && (strcmp(modifier, "any") == 0 || strcmp(modifier, "all") == 0)) {
            instruction->mode = modifier[1] == 'l';
            continue;
        }
        if (op == OP_CP_ASYNC) {
            /* cp.async copies at once, so its groups are complete as soon
             * as they are committed: waiting is nothing. */
            if (strcmp(modifier, "async") == 0)
                continue;
            if (strcmp(modifier, "commit_group") == 0 || strcmp(modifier, "wait_group") == 0 ||
                strcmp(modifier, "wait_all") == 0) {
                instruction->op = OP_NOP;
                continue;
            }
        }
        if (instruction->op == OP_NOP || op == OP_TRAP)
            continue;
        if (is_ignored_modifier(modifier))
            continue;
        decode_error(builder, line, "unsupported instruction form '%.*s' (modifier .%s)",
                     (int)opcode_length, opcode_text, modifier);
        instruction->op = OP_TRAP;
        return;
    }
    if (types[0] == T_B128 || types[1] == T_B128) {
        /* 128-bit registers and accesses (sm_90 ld/st.b128) are not modelled. */
        decode_error(builder, line, "unsupported instruction form '%.*s' (.b128)", (int)opcode_length, opcode_text);
        instruction->op = OP_TRAP;
        return;
    }
    instruction->type = (uint8_t)types[0];
    if (op == OP_CVT || op == OP_SET || op == OP_SLCT || op == OP_DP4A)
        instruction->type2 = (uint8_t)types[1];
    if (op == OP_ATOM && instruction->space == S_GENERIC)
        instruction->space = S_GENERIC;

    /* Operands. */
    enum ptx_type operand_type = types[0];
    if (op == OP_CVT)
        operand_type = T_NONE;
    unsigned out = 0;
    uint8_t space = instruction->space;

    if (op == OP_CALL_VPRINTF) {
        /* call[.uni] [(ret),] name, (arguments): the callee is the first
         * operand that is not one of the call's .param variables. Only the
         * CUDA runtime's device functions can be called, vprintf (printf)
         * and __assertfail (assert): nvcc inlines user device functions,
         * and separately compiled ones are linked by ptx_module_link(). */
        unsigned name_index = 0;
        while (name_index < raw_count && raw[name_index].kind == RAW_WORD) {
            struct map_entry *entry = map_find(&builder->locals, raw[name_index].text, raw[name_index].length);
            if (entry == NULL || entry->extra != S_CALL_PARAM)
                break;
            name_index++;
        }
        bool is_vprintf = name_index < raw_count && raw[name_index].length == 7 &&
                          memcmp(raw[name_index].text, "vprintf", 7) == 0;
        bool is_assert = name_index < raw_count && raw[name_index].length == 12 &&
                         memcmp(raw[name_index].text, "__assertfail", 12) == 0;
        unsigned arguments = raw_count - name_index - 1;
        if (name_index >= raw_count || raw[name_index].kind != RAW_WORD || name_index > 1) {
            decode_error(builder, line, "unsupported call form '%.*s'", (int)opcode_length, opcode_text);
            instruction->op = OP_TRAP;
            return;
        }
        if (!is_vprintf && !is_assert) {
            /* A device function of this module: linked once the whole
             * module is read (its body may come later). */
            struct ptx_function *function = builder->function;
            if (arguments > PTX_MAX_CALL_ARGUMENTS) {
                decode_error(builder, line, "call with %u arguments", arguments);
                instruction->op = OP_TRAP;
                return;
            }
            struct ptx_call_site *grown =
                realloc(function->call_sites, (function->call_site_count + 1) * sizeof *grown);
            if (grown == NULL) {
                fail(parser, "out of memory");
                return;
            }
            function->call_sites = grown;
            struct ptx_call_site *site = &grown[function->call_site_count];
            memset(site, 0, sizeof *site);
            site->callee = strndup(raw[name_index].text, raw[name_index].length);
            site->text = parser->text;
            site->argument_count = arguments;
            /* Counted at once, so the function frees it whatever follows. */
            unsigned site_index = function->call_site_count++;
            for (unsigned i = 0; i <= arguments; i++) {
                const struct raw_operand *operand = i < arguments ? &raw[name_index + 1 + i] : name_index ? &raw[0] : NULL;
                if (operand == NULL)
                    break;
                struct map_entry *entry = map_find(&builder->locals, operand->text, operand->length);
                if (entry == NULL || entry->extra != S_CALL_PARAM) {
                    decode_error(builder, line, "call argument '%.*s' is not a .param", (int)operand->length,
                                 operand->text);
                    instruction->op = OP_TRAP;
                    return;
                }
                if (i < arguments)
                    site->from[i] = (uint32_t)entry->value;
                else {
                    site->has_return = true;
                    site->return_to = (uint32_t)entry->value;
                }
            }
            instruction->op = OP_CALL_FUNCTION;
            instruction->target = site_index;
            return;
        }
        if (!(is_vprintf && arguments == 2) && !(is_assert && arguments == 5 && name_index == 0)) {
            decode_error(builder, line, "unsupported call of '%.*s' with %u arguments", (int)raw[name_index].length,
                         raw[name_index].text, arguments);
            instruction->op = OP_TRAP;
            return;
        }
        instruction->op = is_assert ? OP_CALL_ASSERT : OP_CALL_VPRINTF;
        /* Operands: each argument's offset in the call scratch, then (for
         * vprintf) the return value's, K_NONE when there is none. */
        const struct raw_operand *slots[6] = {0};
        unsigned slot_count = 0;
        for (unsigned i = name_index + 1; i < raw_count; i++)
            slots[slot_count++] = &raw[i];
        if (is_vprintf)
            slots[slot_count++] = name_index == 1 ? &raw[0] : NULL;
        for (unsigned i = 0; i < slot_count; i++) {
            instruction->o[i].kind = K_NONE;
            if (slots[i] == NULL)
                continue;
            struct map_entry *entry = map_find(&builder->locals, slots[i]->text, slots[i]->length);
            if (entry == NULL || entry->extra != S_CALL_PARAM) {
                decode_error(builder, line, "call argument '%.*s' is not a .param",
                             (int)slots[i]->length, slots[i]->text);
                instruction->op = OP_TRAP;
                return;
            }
            instruction->o[i].kind = K_IMM;
            instruction->o[i].imm = entry->value;
            if (!add_offset_fixup(builder, decode.index, i, S_CALL_PARAM)) {
                fail(parser, "out of memory");
                return;
            }
        }
        instruction->operand_count = (uint8_t)slot_count;
        return;
    }

    if (op == OP_BRA) {
        if (raw_count != 1 || raw[0].kind != RAW_WORD) {
            decode_error(builder, line, "bad branch");
            return;
        }
        struct label_fixup *grown = realloc(builder->label_fixups,
                                            (builder->label_fixup_count + 1) * sizeof *grown);
        if (grown == NULL) {
            fail(parser, "out of memory");
            return;
        }
        builder->label_fixups = grown;
        grown[builder->label_fixup_count++] =
            (struct label_fixup){decode.index, strndup(raw[0].text, raw[0].length), line};
        return;
    }

    if (op == OP_MOV && raw_count == 2 && raw[1].kind == RAW_WORD) {
        static const struct {
            const char *name;
            uint8_t mode;
        } clocks[] = {{"%clock", CLOCK_32}, {"%clock64", CLOCK_64}, {"%globaltimer", CLOCK_GLOBALTIMER},
                      {"%globaltimer_lo", CLOCK_GLOBALTIMER_LO}, {"%globaltimer_hi", CLOCK_GLOBALTIMER_HI},
                      {"%clock_hi", CLOCK_32}};
        for (size_t c = 0; c < sizeof clocks / sizeof clocks[0]; c++)
            if (strlen(clocks[c].name) == raw[1].length && memcmp(clocks[c].name, raw[1].text, raw[1].length) == 0) {
                instruction->op = OP_CLOCK;
                instruction->mode = clocks[c].mode;
                if (!decode_operand(&decode, &raw[0], operand_type, &instruction->o[0], 0, NULL))
                    return;
                instruction->operand_count = 1;
                return;
            }
    }

    for (unsigned i = 0; i < raw_count; i++) {
        enum ptx_type this_type = operand_type;
        if (op == OP_CVT)
            this_type = i == 0 ? types[0] : types[1];
        if ((op == OP_SETP || op == OP_SET) && i >= 1)
            this_type = op == OP_SET ? types[1] : types[0];
        if (op == OP_SHFL && (i == 2 || i == 3 || i == 4))
            this_type = T_B32;
        if ((op == OP_SHL || op == OP_SHR) && i == 2)
            this_type = T_U32;
        if (op == OP_SELP && i == 3)
            this_type = T_PRED;
        if (out >= 6) {
            decode_error(builder, line, "too many operands for '%.*s'", (int)opcode_length, opcode_text);
            return;
        }
        if (!decode_operand(&decode, &raw[i], this_type, &instruction->o[out], out,
                            (op == OP_LD || op == OP_ST) ? &space : NULL))
            return;
        out++;
        if (raw[i].pair != NULL) {
            if (out >= 6)
                return;
            if (i == 0)
                instruction->has_pair = 1;
            struct raw_operand pair = {.kind = RAW_WORD, .text = raw[i].pair, .length = raw[i].pair_length};
            if (pair.length == 1 && pair.text[0] == '_')
                pair.kind = RAW_SINK;
            if (!decode_operand(&decode, &pair, T_PRED, &instruction->o[out], out, NULL))
                return;
            out++;
        }
    }
    instruction->space = space;
    instruction->operand_count = (uint8_t)out;
    /* bar[.red] [d,] a[, b][, {!}c]: the count b is there when the plain
     * form has two operands or the reducing form four. */
    if (op == OP_BAR && instruction->operand_count >= (instruction->mode != BAR_PLAIN ? 4 : 2))
        instruction->flags |= F_HAS_COUNT;
    bool writes_first = instruction->op != OP_ST && instruction->op != OP_RED &&
                        instruction->op != OP_CP_ASYNC &&
                        !(instruction->op == OP_BAR && instruction->mode == BAR_PLAIN) &&
                        instruction->op != OP_CALL_ASSERT && instruction->op != OP_CALL_VPRINTF &&
                        instruction->op != OP_RET && instruction->op != OP_EXIT &&
                        instruction->op != OP_BAR_WARP &&
                        instruction->op != OP_NOP && instruction->op != OP_TRAP;
    if (writes_first && (out == 0 || (instruction->o[0].kind != K_REG && instruction->o[0].kind != K_VEC)))
        decode_error(builder, line, "'%.*s' needs a register destination", (int)opcode_length, opcode_text);
    if ((op == OP_LD || op == OP_ST) && instruction->type == T_NONE)
        decode_error(builder, line, "'%.*s' has no type", (int)opcode_length, opcode_text);
}

/* A parameter list: a kernel's parameters (offsets in the parameter
 * buffer), or a device function's formals or return values (`returns`),
 * which live in the thread's call scratch like the .param variables of
 * its call sites. */
static bool parse_param_list(struct parser *parser, struct function_builder *builder, bool is_entry, bool returns)
{
    if (!accept(parser, "("))
        return true;
    struct ptx_function *function = builder->function;
    size_t offset = 0;
    if (!is_entry) {
        while (!parser->failed && !is(parser, ")")) {
            if (!expect(parser, ".param"))
                return false;
            struct declaration declaration;
            if (!parse_declaration(parser, S_CALL_PARAM, &declaration))
                return false;
            free(declaration.initial);
            size_t size = declaration.element_count * type_bytes(declaration.type);
            size_t alignment = declaration.alignment ? declaration.alignment : 1;
            function->call_param_bytes = (function->call_param_bytes + alignment - 1) / alignment * alignment;
            struct ptx_param **list = returns ? &function->returns : &function->params;
            unsigned *count = returns ? &function->return_count : &function->param_count;
            struct ptx_param *grown = realloc(*list, (*count + 1) * sizeof *grown);
            if (grown == NULL) {
                fail(parser, "out of memory");
                return false;
            }
            *list = grown;
            grown[*count] = (struct ptx_param){strndup(declaration.name, declaration.name_length),
                                               function->call_param_bytes, size};
            (*count)++;
            map_put(&builder->locals, declaration.name, declaration.name_length, (int64_t)function->call_param_bytes,
                    S_CALL_PARAM);
            function->call_param_bytes += size;
            if (!accept(parser, ","))
                break;
        }
        return expect(parser, ")");
    }
    while (!parser->failed && !is(parser, ")")) {
        if (!expect(parser, ".param") && !parser->failed)
            return false;
        struct declaration declaration;
        if (!parse_declaration(parser, S_PARAM, &declaration))
            return false;
        free(declaration.initial);
        size_t size = declaration.element_count * type_bytes(declaration.type);
        size_t alignment = declaration.alignment ? declaration.alignment : 1;
        offset = (offset + alignment - 1) / alignment * alignment;
        if (is_entry) {
            struct ptx_param *grown = realloc(function->params, (function->param_count + 1) * sizeof *grown);
            if (grown == NULL) {
                fail(parser, "out of memory");
                return false;
            }
            function->params = grown;
            grown[function->param_count] =
                (struct ptx_param){strndup(declaration.name, declaration.name_length), offset, size};
            map_put(&builder->params, declaration.name, declaration.name_length, function->param_count, 0);
            function->param_count++;
        }
        offset += size;
        if (!accept(parser, ","))
            break;
    }
    function->param_bytes = offset;
    return expect(parser, ")");
}

static void finish_function(struct parser *parser, struct function_builder *builder)
{
    struct ptx_function *function = builder->function;
    for (size_t i = 0; i < builder->label_fixup_count; i++) {
        struct label_fixup *fixup = &builder->label_fixups[i];
        struct map_entry *entry = fixup->label ? map_find(&builder->labels, fixup->label, strlen(fixup->label)) : NULL;
        if (entry == NULL)
            decode_error(builder, fixup->line, "unknown label '%s'", fixup->label ? fixup->label : "?");
        else
            function->code[fixup->instruction].target = (uint32_t)entry->value;
        free(fixup->label);
        fixup->label = NULL;
    }
    /* Static shared variables in order of first use, then dynamic shared
     * memory (extern arrays) after them, 16-byte aligned as on the GPU. */
    size_t shared_end = function->static_shared_bytes;
    for (size_t i = 0; i < builder->shared_fixup_count; i++) {
        struct ptx_variable *variable = &parser->module->variables[builder->shared_fixups[i].variable];
        if (variable->is_extern)
            continue;
        size_t *placed = &builder->shared_offsets[builder->shared_fixups[i].variable];
        if (*placed == 0) {
            size_t alignment = variable->alignment ? variable->alignment : 1;
            shared_end = (shared_end + alignment - 1) / alignment * alignment;
            *placed = shared_end + 1;
            shared_end += variable->size;
        }
    }
    function->static_shared_bytes = shared_end;
    size_t dynamic_base = (shared_end + 15) / 16 * 16;
    for (size_t i = 0; i < builder->shared_fixup_count; i++) {
        struct shared_fixup *fixup = &builder->shared_fixups[i];
        struct ptx_variable *variable = &parser->module->variables[fixup->variable];
        size_t offset = variable->is_extern ? dynamic_base : builder->shared_offsets[fixup->variable] - 1;
        function->code[fixup->instruction].o[fixup->operand].imm += (int64_t)offset;
    }
    function->local_bytes = (function->local_bytes + 15) / 16 * 16;
    function->call_param_bytes = (function->call_param_bytes + 15) / 16 * 16;
}

static void free_builder(struct function_builder *builder)
{
    for (size_t i = 0; i < builder->label_fixup_count; i++)
        free(builder->label_fixups[i].label);
    map_clear(&builder->registers);
    map_clear(&builder->labels);
    map_clear(&builder->locals);
    map_clear(&builder->params);
    free(builder->label_fixups);
    free(builder->shared_fixups);
    free(builder->shared_offsets);
}

/* The function body: the current token is '{'. */
static void parse_body(struct parser *parser, struct function_builder *builder)
{
    struct ptx_function *function = builder->function;
    int depth = 0;
    do {
        if (accept(parser, "{")) {
            depth++;
            continue;
        }
        if (accept(parser, "}")) {
            depth--;
            continue;
        }
        if (parser->token.kind == TOK_END) {
            fail(parser, "unterminated function body");
            return;
        }
        if (is(parser, ".reg")) {
            next(parser);
            for (;;) {
                struct declaration declaration;
                if (!parse_declaration(parser, S_GENERIC, &declaration))
                    return;
                free(declaration.initial);
                if (!declare_registers(parser, builder, &declaration))
                    return;
                if (!accept(parser, ","))
                    break;
                /* .reg .b32 a, b, c: later names take the same type. */
                if (parser->token.kind == TOK_WORD && parser->token.text[0] != '.') {
                    declaration.name = parser->token.text;
                    declaration.name_length = parser->token.length;
                    declaration.has_range = false;
                    next(parser);
                    if (!declare_registers(parser, builder, &declaration))
                        return;
                    while (accept(parser, ",")) {
                        declaration.name = parser->token.text;
                        declaration.name_length = parser->token.length;
                        next(parser);
                        if (!declare_registers(parser, builder, &declaration))
                            return;
                    }
                    break;
                }
            }
            expect(parser, ";");
            continue;
        }
        if (is(parser, ".local") || is(parser, ".param") || is(parser, ".shared")) {
            enum ptx_space space = is(parser, ".local") ? S_LOCAL : is(parser, ".param") ? S_CALL_PARAM : S_SHARED;
            next(parser);
            struct declaration declaration;
            if (!parse_declaration(parser, space, &declaration))
                return;
            free(declaration.initial);
            size_t size = declaration.element_count * type_bytes(declaration.type);
            size_t alignment = declaration.alignment ? declaration.alignment : 1;
            size_t *end = space == S_LOCAL ? &function->local_bytes
                          : space == S_CALL_PARAM ? &function->call_param_bytes
                                                  : &function->static_shared_bytes;
            *end = (*end + alignment - 1) / alignment * alignment;
            map_put(&builder->locals, declaration.name, declaration.name_length, (int64_t)*end, space);
            *end += size;
            expect(parser, ";");
            continue;
        }
        if (is(parser, ".loc") || is(parser, ".file")) {
            skip_line(parser);
            continue;
        }
        if (is(parser, ".pragma") || (parser->token.kind == TOK_WORD && parser->token.text[0] == '.')) {
            skip_statement(parser);
            continue;
        }
        /* A label. */
        if (parser->token.kind == TOK_WORD) {
            const char *after = parser->cursor;
            while (after < parser->end && (*after == ' ' || *after == '\t'))
                after++;
            if (after < parser->end && *after == ':') {
                map_put(&builder->labels, parser->token.text, parser->token.length, function->code_count, 0);
                parser->cursor = after + 1;
                next(parser);
                continue;
            }
        }
        parse_instruction(parser, builder);
    } while (!parser->failed && depth > 0);
}

static void free_function(struct ptx_function *function)
{
    free(function->name);
    free(function->code);
    free(function->specials);
    free(function->decode_error);
    for (unsigned p = 0; p < function->param_count; p++)
        free(function->params[p].name);
    free(function->params);
    for (unsigned p = 0; p < function->return_count; p++)
        free(function->returns[p].name);
    free(function->returns);
    for (unsigned s = 0; s < function->call_site_count; s++)
        free(function->call_sites[s].callee);
    free(function->call_sites);
    free(function->offset_fixups);
    free(function->symbol_fixups);
    memset(function, 0, sizeof *function);
}

static void parse_function(struct parser *parser, bool is_entry)
{
    struct ptx_module *module = parser->module;
    struct function_builder builder = {0};
    struct ptx_function scratch = {0};
    builder.function = &scratch;
    builder.shared_offsets = calloc(module->variable_count + 1, sizeof *builder.shared_offsets);
    if (builder.shared_offsets == NULL) {
        fail(parser, "out of memory");
        return;
    }
    /* .func has an optional return-value list before the name. */
    if (!is_entry && !parse_param_list(parser, &builder, false, true)) {
        free_builder(&builder);
        free_function(&scratch);
        return;
    }
    if (parser->token.kind != TOK_WORD) {
        fail(parser, "expected a function name");
        free_builder(&builder);
        free_function(&scratch);
        return;
    }
    scratch.name = strndup(parser->token.text, parser->token.length);
    scratch.entry = is_entry;
    scratch.visible = parser->is_visible;
    scratch.weak = parser->is_weak;
    scratch.text = parser->text;
    scratch.max_threads = 1024;
    next(parser);
    if (!parse_param_list(parser, &builder, is_entry, false)) {
        free_builder(&builder);
        free_function(&scratch);
        return;
    }
    /* Performance directives up to the body or ';'. */
    while (!parser->failed && !is(parser, "{") && !is(parser, ";") && parser->token.kind != TOK_END) {
        if (is(parser, ".maxntid") || is(parser, ".reqntid")) {
            next(parser);
            unsigned product = 1;
            for (;;) {
                int64_t value;
                if (parser->token.kind == TOK_NUMBER &&
                    parse_integer_text(parser->token.text, parser->token.length, &value))
                    product *= (unsigned)value;
                next(parser);
                if (!accept(parser, ","))
                    break;
            }
            scratch.max_threads = product;
            continue;
        }
        next(parser);
    }
    if (accept(parser, ";")) {
        /* A declaration (vprintf's, or a prototype): nothing to run. */
        free_builder(&builder);
        free_function(&scratch);
        return;
    }
    parse_body(parser, &builder);
    if (!parser->failed) {
        if (!is_entry && (builder.shared_fixup_count > 0 || scratch.static_shared_bytes > 0))
            scratch.uses_shared = true;
        finish_function(parser, &builder);
    }
    struct ptx_function **list = is_entry ? &module->functions : &module->device_functions;
    size_t *count = is_entry ? &module->function_count : &module->device_function_count;
    if (!parser->failed) {
        struct ptx_function *grown = realloc(*list, (*count + 1) * sizeof *grown);
        if (grown == NULL) {
            fail(parser, "out of memory");
        } else {
            *list = grown;
            scratch.decode_error = builder.decode_error;
            builder.decode_error = NULL;
            scratch.own_code_count = scratch.code_count;
            grown[(*count)++] = scratch;
            scratch = (struct ptx_function){0};
        }
    }
    free(builder.decode_error);
    free_function(&scratch);
    free_builder(&builder);
}

/* ---- linking device-function calls --------------------------------------- */

/* The device function a call in text `text` means by `name`: that text's
 * own private one, else the .visible definition of any text, else a .weak
 * one. Alone, a module has one text and its names are unique. */
static struct ptx_function *device_function(struct ptx_module *module, const char *name, unsigned text)
{
    struct ptx_function *weak = NULL;
    for (size_t i = 0; i < module->device_function_count; i++) {
        struct ptx_function *function = &module->device_functions[i];
        if (strcmp(function->name, name) != 0 || (function->text != text && !function->visible))
            continue;
        if ((function->text == text && !function->visible) || !function->weak)
            return function;
        if (weak == NULL)
            weak = function;
    }
    return weak;
}

static void link_error(struct ptx_function *kernel, const char *format, const char *name)
{
    if (kernel->decode_error != NULL)
        return;
    size_t size = strlen(format) + strlen(name) + 16;
    kernel->decode_error = malloc(size);
    if (kernel->decode_error != NULL)
        snprintf(kernel->decode_error, size, format, name);
}

struct link_state {
    struct ptx_module *module;
    struct ptx_function *kernel;
    /* Per device function: its first instruction in the kernel and the base
     * of its call scratch, or UINT32_MAX when not appended (yet). */
    uint32_t *entry;
    uint32_t *scratch_base;
    bool *in_progress;
};

static bool append_callee(struct link_state *state, struct ptx_function *callee, uint32_t *entry,
                          uint32_t *scratch_base);

/* Resolves the call sites [first, first + count) of the kernel's table,
 * appending their callees. */
static bool resolve_call_sites(struct link_state *state, unsigned first, unsigned count)
{
    for (unsigned i = first; i < first + count; i++) {
        struct ptx_call_site *site = &state->kernel->call_sites[i];
        struct ptx_function *callee = device_function(state->module, site->callee, site->text);
        if (callee == NULL) {
            link_error(state->kernel, "calls '%s', which this module does not define (separately compiled "
                                      "device code needs linking with cuLinkCreate)", site->callee);
            return false;
        }
        uint32_t entry, base;
        if (!append_callee(state, callee, &entry, &base))
            return false;
        site = &state->kernel->call_sites[i]; /* the table may have moved */
        if (site->argument_count != callee->param_count ||
            (site->has_return && callee->return_count != 1)) {
            link_error(state->kernel, "calls '%s' with the wrong number of arguments", site->callee);
            return false;
        }
        site->entry = entry;
        for (unsigned a = 0; a < site->argument_count; a++) {
            site->to[a] = base + (uint32_t)callee->params[a].offset;
            site->size[a] = (uint32_t)callee->params[a].size;
        }
        if (site->has_return) {
            site->return_from = base + (uint32_t)callee->returns[0].offset;
            site->return_size = (uint32_t)callee->returns[0].size;
        }
    }
    return true;
}

/* Appends `callee` (once) to the kernel's code: its registers after the
 * kernel's, its local memory and call scratch after the kernel's, its
 * branch targets and call sites rebased. */
static bool append_callee(struct link_state *state, struct ptx_function *callee, uint32_t *entry,
                          uint32_t *scratch_base)
{
    size_t index = (size_t)(callee - state->module->device_functions);
    struct ptx_function *kernel = state->kernel;
    /* One copy of a callee's registers serves every call, which a call
     * still in progress (recursion) would overwrite. */
    if (state->in_progress[index]) {
        link_error(kernel, "calls '%s' recursively, which the simulator does not support", callee->name);
        return false;
    }
    if (state->entry[index] != UINT32_MAX) {
        *entry = state->entry[index];
        *scratch_base = state->scratch_base[index];
        return true;
    }
    if (callee->decode_error != NULL) {
        link_error(kernel, "%s", callee->decode_error);
        return false;
    }
    if (callee->uses_shared) {
        link_error(kernel, "calls '%s', a device function using shared memory, which the simulator does not "
                           "support", callee->name);
        return false;
    }
    state->in_progress[index] = true;
    uint32_t code_base = kernel->code_count, register_base = kernel->register_count;
    size_t local_base = (kernel->local_bytes + 15) / 16 * 16;
    size_t call_base = (kernel->call_param_bytes + 15) / 16 * 16;
    if ((size_t)code_base + callee->code_count > 65000) {
        link_error(kernel, "calls '%s', which makes the kernel too long", callee->name);
        return false;
    }
    struct ptx_instruction *code = realloc(kernel->code, (code_base + callee->code_count) * sizeof *code);
    struct ptx_special_slot *specials =
        realloc(kernel->specials, (kernel->special_count + callee->special_count + 1) * sizeof *specials);
    struct ptx_call_site *sites =
        realloc(kernel->call_sites, (kernel->call_site_count + callee->call_site_count + 1) * sizeof *sites);
    if (code != NULL)
        kernel->code = code;
    if (specials != NULL)
        kernel->specials = specials;
    if (sites != NULL)
        kernel->call_sites = sites;
    if (code == NULL || specials == NULL || sites == NULL) {
        link_error(kernel, "out of memory linking '%s'", callee->name);
        return false;
    }
    unsigned site_base = kernel->call_site_count;
    for (uint32_t i = 0; i < callee->code_count; i++) {
        struct ptx_instruction *instruction = &code[code_base + i];
        *instruction = callee->code[i];
        if (instruction->guard != PTX_NO_REGISTER)
            instruction->guard += register_base;
        for (unsigned o = 0; o < 6; o++) {
            struct ptx_operand *operand = &instruction->o[o];
            if (operand->kind == K_REG || (operand->kind == K_ADDR && operand->reg != PTX_NO_REGISTER))
                operand->reg += register_base;
            else if (operand->kind == K_VEC)
                for (unsigned e = 0; e < operand->count; e++)
                    operand->vec[e] += register_base;
        }
        if (instruction->op == OP_BRA)
            instruction->target += code_base;
        else if (instruction->op == OP_CALL_FUNCTION)
            instruction->target += site_base;
    }
    for (unsigned f = 0; f < callee->offset_fixup_count; f++) {
        const struct ptx_offset_fixup *fixup = &callee->offset_fixups[f];
        code[code_base + fixup->instruction].o[fixup->operand].imm +=
            (int64_t)(fixup->space == S_LOCAL ? local_base : call_base);
    }
    for (unsigned s = 0; s < callee->special_count; s++) {
        specials[kernel->special_count + s] = callee->specials[s];
        specials[kernel->special_count + s].slot += register_base;
    }
    for (unsigned s = 0; s < callee->call_site_count; s++) {
        struct ptx_call_site *site = &sites[site_base + s];
        *site = callee->call_sites[s];
        site->callee = strdup(callee->call_sites[s].callee);
        for (unsigned a = 0; a < site->argument_count; a++)
            site->from[a] += (uint32_t)call_base;
        site->return_to += (uint32_t)call_base;
    }
    kernel->code_count = code_base + callee->code_count;
    kernel->special_count += callee->special_count;
    kernel->call_site_count = site_base + callee->call_site_count;
    kernel->register_count = register_base + callee->register_count;
    kernel->local_bytes = local_base + callee->local_bytes;
    kernel->call_param_bytes = call_base + callee->call_param_bytes;
    state->entry[index] = code_base;
    state->scratch_base[index] = (uint32_t)call_base;
    *entry = code_base;
    *scratch_base = (uint32_t)call_base;
    bool linked = resolve_call_sites(state, site_base, callee->call_site_count);
    state->in_progress[index] = false;
    return linked;
}

/* Links every kernel's calls. A kernel whose calls cannot be linked keeps
 * the reason and fails its launch, like one with an unknown instruction. */
static void link_module(struct parser *parser)
{
    struct ptx_module *module = parser->module;
    size_t count = module->device_function_count;
    for (size_t k = 0; k < module->function_count; k++) {
        struct ptx_function *kernel = &module->functions[k];
        if (kernel->call_site_count == 0 || kernel->decode_error != NULL)
            continue;
        /* The kernel's own code must not run on into the callees. */
        struct ptx_instruction *code = realloc(kernel->code, (kernel->code_count + 1) * sizeof *code);
        if (code == NULL) {
            fail(parser, "out of memory");
            return;
        }
        kernel->code = code;
        memset(&code[kernel->code_count], 0, sizeof *code);
        code[kernel->code_count].op = OP_EXIT;
        code[kernel->code_count].guard = PTX_NO_REGISTER;
        code[kernel->code_count].line = code[kernel->code_count ? kernel->code_count - 1 : 0].line;
        kernel->code_count++;
        struct link_state state = {
            .module = module, .kernel = kernel,
            .entry = malloc((count + 1) * sizeof(uint32_t)),
            .scratch_base = malloc((count + 1) * sizeof(uint32_t)),
            .in_progress = calloc(count + 1, sizeof(bool)),
        };
        if (state.entry == NULL || state.scratch_base == NULL || state.in_progress == NULL) {
            free(state.entry);
            free(state.scratch_base);
            free(state.in_progress);
            fail(parser, "out of memory");
            return;
        }
        for (size_t i = 0; i < count; i++)
            state.entry[i] = UINT32_MAX;
        resolve_call_sites(&state, 0, kernel->call_site_count);
        kernel->local_bytes = (kernel->local_bytes + 15) / 16 * 16;
        kernel->call_param_bytes = (kernel->call_param_bytes + 15) / 16 * 16;
        free(state.entry);
        free(state.scratch_base);
        free(state.in_progress);
    }
}

static void parse_module(struct parser *parser)
{
    next(parser);
    while (!parser->failed && parser->token.kind != TOK_END) {
        if (is(parser, ".version") || is(parser, ".target") || is(parser, ".address_size")) {
            bool is_address_size = is(parser, ".address_size");
            next(parser);
            if (is_address_size && !is(parser, "64")) {
                fail(parser, "only .address_size 64 is supported");
                return;
            }
            /* Their arguments are on the same line, without ';'. */
            while (parser->token.kind != TOK_END && (parser->token.kind == TOK_NUMBER ||
                   (parser->token.kind == TOK_WORD && parser->token.text[0] != '.') || is(parser, ",")))
                next(parser);
            continue;
        }
        if (is(parser, ".file") || is(parser, ".loc")) {
            skip_line(parser);
            continue;
        }
        if (is(parser, ".section")) {
            /* Debug sections: skip the braced block. */
            while (parser->token.kind != TOK_END && !is(parser, "{"))
                next(parser);
            int depth = 0;
            do {
                if (is(parser, "{"))
                    depth++;
                else if (is(parser, "}"))
                    depth--;
                next(parser);
            } while (depth > 0 && parser->token.kind != TOK_END);
            continue;
        }
        bool is_extern = false;
        parser->is_visible = parser->is_weak = false;
        while (is(parser, ".visible") || is(parser, ".extern") || is(parser, ".weak") || is(parser, ".common")) {
            if (is(parser, ".extern"))
                is_extern = true;
            else
                parser->is_visible = true;
            if (is(parser, ".weak") || is(parser, ".common"))
                parser->is_weak = true;
            next(parser);
        }
        if (accept(parser, ".entry")) {
            parse_function(parser, true);
            continue;
        }
        if (accept(parser, ".func")) {
            parse_function(parser, false);
            continue;
        }
        if (is(parser, ".global") || is(parser, ".const") || is(parser, ".shared")) {
            enum ptx_space space = is(parser, ".global") ? S_GLOBAL : is(parser, ".const") ? S_CONST : S_SHARED;
            next(parser);
            parse_module_variable(parser, space, is_extern);
            continue;
        }
        if (is(parser, ".pragma")) {
            skip_statement(parser);
            continue;
        }
        fail(parser, "unsupported directive '%.*s'", (int)parser->token.length, parser->token.text);
    }
}

struct ptx_module *ptx_module_parse(const char *text, size_t length, ptx_variable_allocator allocate,
                                    void *allocator_context, char *error, size_t error_size)
{
    struct ptx_module *module = calloc(1, sizeof *module);
    if (module == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    struct parser parser = {
        .cursor = text, .end = text + length, .line = 1, .error = error, .error_size = error_size,
        .module = module, .allocate = allocate, .allocator_context = allocator_context,
    };
    if (error_size > 0)
        error[0] = '\0';
    parse_module(&parser);
    if (!parser.failed)
        link_module(&parser);
    map_clear(&parser.variables);
    if (parser.failed) {
        ptx_module_free(module);
        return NULL;
    }
    return module;
}

/* ---- linking several texts ---------------------------------------------- */

static void link_fail(char *error, size_t error_size, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error, error_size, format, arguments);
    va_end(arguments);
}

static bool is_module_variable(const struct ptx_variable *variable)
{
    return variable->space == S_GLOBAL || variable->space == S_CONST;
}

/* Two texts defining the same .visible symbol (.weak ones aside) is the
 * "multiple definition" a linker refuses: which one a reference means
 * would depend on link order. */
static bool check_duplicates(struct ptx_module *module, char *error, size_t error_size)
{
    struct map seen = {0};
    bool ok = true;
    for (unsigned kind = 0; kind < 3 && ok; kind++) {
        size_t count = kind == 0 ? module->function_count
                       : kind == 1 ? module->device_function_count : module->variable_count;
        for (size_t i = 0; i < count && ok; i++) {
            const char *name;
            unsigned text;
            if (kind < 2) {
                const struct ptx_function *function =
                    kind == 0 ? &module->functions[i] : &module->device_functions[i];
                if (!function->visible || function->weak)
                    continue;
                name = function->name;
                text = function->text;
            } else {
                const struct ptx_variable *variable = &module->variables[i];
                if (!is_module_variable(variable) || !variable->visible || variable->weak || variable->is_extern)
                    continue;
                name = variable->name;
                text = variable->text;
            }
            struct map_entry *entry = map_find(&seen, name, strlen(name));
            if (entry != NULL) {
                link_fail(error, error_size, "duplicate definition of '%s' in PTX texts %u and %u", name,
                          (unsigned)entry->value, text);
                ok = false;
            } else if (!map_put(&seen, name, strlen(name), text, kind)) {
                link_fail(error, error_size, "out of memory");
                ok = false;
            }
        }
    }
    map_clear(&seen);
    return ok;
}

/* The definition an .extern variable of text `text` names: a private one of
 * its own text, else the .visible one, else a .weak one. */
static const struct ptx_variable *variable_definition(const struct ptx_module *module, const char *name,
                                                      unsigned text)
{
    const struct ptx_variable *weak = NULL;
    for (size_t i = 0; i < module->variable_count; i++) {
        const struct ptx_variable *variable = &module->variables[i];
        if (!is_module_variable(variable) || variable->is_extern || strcmp(variable->name, name) != 0 ||
            (variable->text != text && !variable->visible))
            continue;
        if ((variable->text == text && !variable->visible) || !variable->weak)
            return variable;
        if (weak == NULL)
            weak = variable;
    }
    return weak;
}

/* Gives every .extern .global/.const its definition's address and patches
 * the instructions that use it, before callees are copied into kernels. */
static bool resolve_extern_variables(struct ptx_module *module, char *error, size_t error_size)
{
    for (size_t i = 0; i < module->variable_count; i++) {
        struct ptx_variable *variable = &module->variables[i];
        if (!is_module_variable(variable) || !variable->is_extern)
            continue;
        const struct ptx_variable *definition = variable_definition(module, variable->name, variable->text);
        if (definition == NULL) {
            link_fail(error, error_size, "undefined symbol '%s' (an .extern variable of PTX text %u)",
                      variable->name, variable->text);
            return false;
        }
        variable->address = definition->address;
        variable->size = definition->size;
    }
    for (unsigned kind = 0; kind < 2; kind++) {
        size_t count = kind == 0 ? module->function_count : module->device_function_count;
        for (size_t f = 0; f < count; f++) {
            struct ptx_function *function = kind == 0 ? &module->functions[f] : &module->device_functions[f];
            for (unsigned x = 0; x < function->symbol_fixup_count; x++) {
                const struct ptx_symbol_fixup *fixup = &function->symbol_fixups[x];
                function->code[fixup->instruction].o[fixup->operand].imm +=
                    (int64_t)module->variables[fixup->variable].address;
            }
        }
    }
    return true;
}

/* Device functions the driver provides to every module: a call to one is
 * not an unresolved symbol (the interpreter runs vprintf and __assertfail
 * itself and says at launch that it cannot run the others). */
static bool is_driver_function(const char *name)
{
    return strcmp(name, "malloc") == 0 || strcmp(name, "free") == 0;
}

/* Every call must reach a definition: unlike a single text, whose kernels
 * fail at launch when one cannot, a link refuses the whole module. */
static bool check_calls(struct ptx_module *module, char *error, size_t error_size)
{
    for (unsigned kind = 0; kind < 2; kind++) {
        size_t count = kind == 0 ? module->function_count : module->device_function_count;
        for (size_t f = 0; f < count; f++) {
            const struct ptx_function *function = kind == 0 ? &module->functions[f] : &module->device_functions[f];
            for (unsigned c = 0; c < function->call_site_count; c++) {
                const struct ptx_call_site *site = &function->call_sites[c];
                if (device_function(module, site->callee, site->text) == NULL &&
                    !is_driver_function(site->callee)) {
                    link_fail(error, error_size, "undefined symbol '%s' (a function '%s' of PTX text %u calls)",
                              site->callee, function->name, site->text);
                    return false;
                }
            }
        }
    }
    return true;
}

struct ptx_module *ptx_module_link(const struct ptx_source *sources, size_t count, ptx_variable_allocator allocate,
                                   void *allocator_context, char *error, size_t error_size,
                                   enum ptx_link_failure *failure)
{
    enum ptx_link_failure ignored;
    if (failure == NULL)
        failure = &ignored;
    *failure = PTX_LINK_INVALID;
    if (error_size > 0)
        error[0] = '\0';
    struct ptx_module *module = calloc(1, sizeof *module);
    if (module == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    if (count == 0) {
        snprintf(error, error_size, "nothing to link");
        ptx_module_free(module);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        struct parser parser = {
            .cursor = sources[i].text, .end = sources[i].text + sources[i].length, .line = 1,
            .error = error, .error_size = error_size, .module = module, .allocate = allocate,
            .allocator_context = allocator_context, .text = (unsigned)i, .linking = true,
        };
        parse_module(&parser);
        map_clear(&parser.variables);
        if (parser.failed) {
            ptx_module_free(module);
            return NULL;
        }
    }
    if (!check_duplicates(module, error, error_size)) {
        *failure = PTX_LINK_DUPLICATE;
        ptx_module_free(module);
        return NULL;
    }
    if (!resolve_extern_variables(module, error, error_size) || !check_calls(module, error, error_size)) {
        *failure = PTX_LINK_UNRESOLVED;
        ptx_module_free(module);
        return NULL;
    }
    struct parser linker = {.error = error, .error_size = error_size, .module = module};
    link_module(&linker);
    if (linker.failed) {
        ptx_module_free(module);
        return NULL;
    }
    return module;
}

void ptx_module_free(struct ptx_module *module)
{
    if (module == NULL)
        return;
    for (size_t i = 0; i < module->function_count; i++)
        free_function(&module->functions[i]);
    free(module->functions);
    for (size_t i = 0; i < module->device_function_count; i++)
        free_function(&module->device_functions[i]);
    free(module->device_functions);
    for (size_t i = 0; i < module->variable_count; i++)
        free(module->variables[i].name);
    free(module->variables);
    free(module);
}

const struct ptx_function *ptx_module_function(const struct ptx_module *module, const char *name)
{
    for (size_t i = 0; i < module->function_count; i++)
        if (strcmp(module->functions[i].name, name) == 0)
            return &module->functions[i];
    return NULL;
}

size_t ptx_module_function_count(const struct ptx_module *module)
{
    return module->function_count;
}

const struct ptx_function *ptx_module_function_at(const struct ptx_module *module, size_t index)
{
    return index < module->function_count ? &module->functions[index] : NULL;
}

bool ptx_module_variable(const struct ptx_module *module, const char *name, uint64_t *address, size_t *size)
{
    /* A linked module may hold the name several times (declarations, other
     * texts' private variables): the .visible definition is the one every
     * text shares. Alone, a text declares each name once. */
    const struct ptx_variable *best = NULL;
    int best_rank = 0;
    for (size_t i = 0; i < module->variable_count; i++) {
        const struct ptx_variable *variable = &module->variables[i];
        if (!is_module_variable(variable) || strcmp(variable->name, name) != 0)
            continue;
        int rank = variable->is_extern ? 1 : variable->visible && !variable->weak ? 4 : variable->visible ? 3 : 2;
        if (rank > best_rank) {
            best = variable;
            best_rank = rank;
        }
    }
    if (best == NULL)
        return false;
    *address = best->address;
    *size = best->size;
    return true;
}

size_t ptx_module_variable_count(const struct ptx_module *module)
{
    return module->variable_count;
}

void ptx_module_variable_at(const struct ptx_module *module, size_t index, const char **name,
                            uint64_t *address, size_t *size)
{
    const struct ptx_variable *variable = &module->variables[index];
    *name = variable->name;
    *address = variable->space == S_GLOBAL || variable->space == S_CONST ? variable->address : 0;
    *size = variable->size;
}

const char *ptx_function_name(const struct ptx_function *function)
{
    return function->name;
}

unsigned ptx_function_param_count(const struct ptx_function *function)
{
    return function->param_count;
}

void ptx_function_param(const struct ptx_function *function, unsigned index, size_t *offset, size_t *size)
{
    *offset = function->params[index].offset;
    *size = function->params[index].size;
}

size_t ptx_function_param_bytes(const struct ptx_function *function)
{
    return function->param_bytes;
}

size_t ptx_function_static_shared_bytes(const struct ptx_function *function)
{
    return function->static_shared_bytes;
}

size_t ptx_function_local_bytes(const struct ptx_function *function)
{
    return function->local_bytes;
}

unsigned ptx_function_register_count(const struct ptx_function *function)
{
    return function->register_count;
}

unsigned ptx_function_max_threads(const struct ptx_function *function)
{
    return function->max_threads;
}

const char *ptx_function_decode_error(const struct ptx_function *function)
{
    return function->decode_error;
}

/* Splits a configuration string into PyTorch's tokens without allocating:
 * the library parses in every process it is preloaded into, before main. */
#include "config_internal.h"

#include <string.h>

static bool is_config_whitespace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_single_character_token(char c)
{
    return c == ',' || c == ':' || c == '[' || c == ']';
}

void config_tokenizer_init(struct config_tokenizer *tokenizer, const char *text)
{
    tokenizer->text = text;
    tokenizer->position = 0;
}

void config_tokenizer_next(struct config_tokenizer *tokenizer,
                           struct config_token *token)
{
    const char *text = tokenizer->text;
    size_t position = tokenizer->position;
    while (text[position] != '\0' && is_config_whitespace(text[position]))
        position++;

    token->start = position;
    token->end = position;
    token->length = 0;
    token->truncated = false;
    token->word[0] = '\0';

    char c = text[position];
    if (c == '\0') {
        token->kind = TOKEN_END;
        tokenizer->position = position;
        return;
    }
    if (is_single_character_token(c)) {
        token->kind = c == ',' ? TOKEN_COMMA
                    : c == ':' ? TOKEN_COLON
                    : c == '[' ? TOKEN_OPEN_BRACKET
                               : TOKEN_CLOSE_BRACKET;
        token->word[0] = c;
        token->word[1] = '\0';
        token->length = 1;
        token->end = position + 1;
        tokenizer->position = position + 1;
        return;
    }

    token->kind = TOKEN_WORD;
    for (; text[position] != '\0' && !is_single_character_token(text[position]); position++) {
        c = text[position];
        if (is_config_whitespace(c))
            continue;
        if (token->length + 1 < sizeof token->word)
            token->word[token->length] = c;
        else
            token->truncated = true;
        token->length++;
        token->end = position + 1;
    }
    token->word[token->truncated ? sizeof token->word - 1 : token->length] = '\0';
    tokenizer->position = position;
}

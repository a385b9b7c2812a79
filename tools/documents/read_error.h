/* The complaint of a reader (a trace, a JSON report, a pickle): one message
 * naming the position and the problem, for the command to print with the
 * file's name. */
#ifndef GPUCACHE_READ_ERROR_H
#define GPUCACHE_READ_ERROR_H

#include <stdbool.h>
#include <stddef.h>

/* "<position>: <problem>", without the file name. */
struct read_error {
    char message[512];
};

/* Fills `error` printf-style; always returns false so readers can
 * `return read_fail(...)`. */
bool read_fail(struct read_error *error, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Quotes input text for a message: 'text', at most 40 bytes of it (then
 * "..."), bytes that are not printable ASCII written as \xNN. Returns
 * `buffer`; 170 bytes hold any quote whole. */
const char *read_quote(const char *text, size_t length, char *buffer, size_t size);

#endif

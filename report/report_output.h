/* A buffered writer to a file descriptor for the report writers: output is
 * collected in a heap buffer and written with write(2) in large pieces. A
 * failure (no memory, a write error) is remembered and reported once, by
 * report_output_finish. */
#ifndef GPUCACHE_REPORT_OUTPUT_H
#define GPUCACHE_REPORT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct report_output {
    int fd;
    char *buffer;
    size_t used;
    size_t capacity;
    bool failed;
};

/* Starts writing to `fd`. */
void report_output_init(struct report_output *output, int fd);

/* Appends `length` bytes. */
void report_output_bytes(struct report_output *output, const void *bytes, size_t length);

/* Appends a NUL-terminated string. */
void report_output_string(struct report_output *output, const char *text);

/* Appends printf-style text. */
void report_output_format(struct report_output *output, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends `text` as a JSON string literal, quotes included. */
void report_output_json_string(struct report_output *output, const char *text);

/* Writes what is buffered, frees the buffer, and returns true when every
 * byte reached the descriptor. */
bool report_output_finish(struct report_output *output);

#endif

#include "report_output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucache_json.h"

/* Large enough that a snapshot of thousands of events costs few write(2)s. */
#define OUTPUT_BUFFER_BYTES (256 * 1024)

void report_output_init(struct report_output *output, int fd)
{
    *output = (struct report_output){.fd = fd};
    output->buffer = malloc(OUTPUT_BUFFER_BYTES);
    if (output->buffer)
        output->capacity = OUTPUT_BUFFER_BYTES;
    else
        output->failed = true;
}

static void flush(struct report_output *output)
{
    size_t done = 0;
    while (done < output->used && !output->failed) {
        ssize_t written = write(output->fd, output->buffer + done, output->used - done);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            output->failed = true;
        else
            done += (size_t)written;
    }
    output->used = 0;
}

void report_output_bytes(struct report_output *output, const void *bytes, size_t length)
{
    const char *from = bytes;
    while (length && !output->failed) {
        if (output->used == output->capacity)
            flush(output);
        size_t room = output->capacity - output->used;
        size_t piece = length < room ? length : room;
        memcpy(output->buffer + output->used, from, piece);
        output->used += piece;
        from += piece;
        length -= piece;
    }
}

void report_output_string(struct report_output *output, const char *text)
{
    report_output_bytes(output, text, strlen(text));
}

void report_output_format(struct report_output *output, const char *format, ...)
{
    char line[512];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    if (length < 0) {
        output->failed = true;
        return;
    }
    if ((size_t)length < sizeof line) {
        report_output_bytes(output, line, (size_t)length);
        return;
    }
    char *long_line = malloc((size_t)length + 1);
    if (!long_line) {
        output->failed = true;
        return;
    }
    va_start(arguments, format);
    vsnprintf(long_line, (size_t)length + 1, format, arguments);
    va_end(arguments);
    report_output_bytes(output, long_line, (size_t)length);
    free(long_line);
}

static void output_bytes(void *sink, const char *bytes, size_t length)
{
    report_output_bytes(sink, bytes, length);
}

void report_output_json_string(struct report_output *output, const char *text)
{
    gpucache_json_string(text, output_bytes, output);
}

bool report_output_finish(struct report_output *output)
{
    flush(output);
    free(output->buffer);
    output->buffer = NULL;
    output->capacity = 0;
    return !output->failed;
}

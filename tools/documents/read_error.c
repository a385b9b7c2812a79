#include "read_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool read_fail(struct read_error *error, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->message, sizeof error->message, format, arguments);
    va_end(arguments);
    return false;
}

const char *read_quote(const char *text, size_t length, char *buffer, size_t size)
{
    enum { SHOWN = 40 };
    size_t used = 0;
    if (size < 8)
        return buffer;
    buffer[used++] = '\'';
    for (size_t index = 0; index < length && index < SHOWN && used + 9 < size; index++) {
        unsigned char byte = (unsigned char)text[index];
        if (byte >= 0x20 && byte < 0x7f)
            buffer[used++] = (char)byte;
        else
            used += (size_t)snprintf(buffer + used, size - used, "\\x%02x", byte);
    }
    if (length > SHOWN && used + 5 < size) {
        memcpy(buffer + used, "...", 3);
        used += 3;
    }
    buffer[used++] = '\'';
    buffer[used] = '\0';
    return buffer;
}

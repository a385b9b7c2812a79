/* Device printf. nvcc turns printf(format, ...) into vprintf(format, buffer)
 * where buffer holds the arguments one after another, each aligned to its
 * own size (8 bytes for double, pointers and 64-bit integers, 4 for int;
 * float arguments are promoted to double as in any variadic call). The
 * conversions are read from the format to know each argument's size, and
 * each is formatted by the host's printf, so the output matches. */
#include <stdio.h>
#include <string.h>

#include "ptx_internal.h"

static const unsigned char *aligned(const unsigned char *base, const unsigned char *cursor, size_t size)
{
    size_t offset = (size_t)(cursor - base);
    return base + (offset + size - 1) / size * size;
}

int ptx_vprintf(const char *format, const unsigned char *arguments)
{
    char output[4096];
    size_t used = 0;
    int parsed = 0; /* what CUDA's printf returns: the arguments it read */
    const unsigned char *cursor = arguments;
    for (const char *p = format; *p != '\0' && used < sizeof output - 1;) {
        if (*p != '%') {
            output[used++] = *p++;
            continue;
        }
        if (p[1] == '%') {
            output[used++] = '%';
            p += 2;
            continue;
        }
        /* One conversion: flags, width, precision, length, conversion. */
        char specification[64];
        size_t length = 0;
        specification[length++] = *p++;
        while (*p != '\0' && strchr("-+ #0123456789.", *p) != NULL && length < sizeof specification - 8)
            specification[length++] = *p++;
        int longs = 0;
        bool half = false;
        while (*p == 'l' || *p == 'h' || *p == 'z' || *p == 'j' || *p == 't' || *p == 'L') {
            if (*p == 'l' || *p == 'z' || *p == 'j' || *p == 't' || *p == 'L')
                longs++;
            else
                half = true;
            p++;
        }
        char conversion = *p;
        if (conversion == '\0')
            break;
        p++;
        size_t room = sizeof output - used;
        int written = 0;
        if (strchr("diouxXc", conversion) != NULL) {
            if (longs > 0) {
                cursor = aligned(arguments, cursor, 8);
                long long value;
                memcpy(&value, cursor, 8);
                cursor += 8;
                memcpy(specification + length, "ll", 2);
                specification[length + 2] = conversion;
                specification[length + 3] = '\0';
                written = snprintf(output + used, room, specification, value);
            } else {
                cursor = aligned(arguments, cursor, 4);
                int value;
                memcpy(&value, cursor, 4);
                cursor += 4;
                (void)half;
                specification[length] = conversion;
                specification[length + 1] = '\0';
                written = snprintf(output + used, room, specification, value);
            }
        } else if (strchr("fFeEgGaA", conversion) != NULL) {
            cursor = aligned(arguments, cursor, 8);
            double value;
            memcpy(&value, cursor, 8);
            cursor += 8;
            specification[length] = conversion;
            specification[length + 1] = '\0';
            written = snprintf(output + used, room, specification, value);
        } else if (conversion == 's' || conversion == 'p') {
            cursor = aligned(arguments, cursor, 8);
            const void *value;
            memcpy(&value, cursor, 8);
            cursor += 8;
            specification[length] = conversion;
            specification[length + 1] = '\0';
            if (conversion == 's' && value == NULL)
                value = "(null)";
            written = snprintf(output + used, room, specification, value);
        } else {
            /* Unknown conversion: copied as written, like the device does. */
            specification[length] = conversion;
            specification[length + 1] = '\0';
            written = snprintf(output + used, room, "%s", specification);
        }
        if (written < 0)
            return -2;
        if (strchr("diouxXcfFeEgGaAsp", conversion) != NULL)
            parsed++;
        used += (size_t)written < room ? (size_t)written : room - 1;
    }
    output[used] = '\0';
    /* One string per call, so lines of concurrent threads do not mix. */
    flockfile(stdout);
    fputs(output, stdout);
    funlockfile(stdout);
    return parsed;
}

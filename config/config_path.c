/* Output path patterns: "%p" is replaced at write time, so each process of
 * a multi-process job (and a child after fork) gets its own file. */
#include "config_internal.h"

#include <stdio.h>

size_t gpucache_config_expand_path(const char *pattern, long pid,
                                   char *out, size_t capacity)
{
    size_t length = 0;
    char pid_text[24];
    int pid_length = snprintf(pid_text, sizeof pid_text, "%ld", pid);
    for (const char *c = pattern; *c != '\0'; c++) {
        const char *piece = c;
        size_t piece_length = 1;
        if (c[0] == '%' && c[1] == 'p') {
            piece = pid_text;
            piece_length = (size_t)pid_length;
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            c++;
        }
        for (size_t i = 0; i < piece_length; i++, length++) {
            if (length + 1 < capacity)
                out[length] = piece[i];
        }
    }
    if (capacity > 0)
        out[length < capacity ? length : capacity - 1] = '\0';
    return length;
}

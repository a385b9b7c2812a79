#include "gpucache_json.h"

#include <stdio.h>

void gpucache_json_string(const char *text, gpucache_json_sink *put, void *sink)
{
    put(sink, "\"", 1);
    const char *run = text;
    for (const char *at = text;; at++) {
        unsigned char c = (unsigned char)*at;
        if (c != '\0' && c != '"' && c != '\\' && c >= 0x20)
            continue;
        /* Plain bytes go out in runs, not one call each. */
        if (at > run)
            put(sink, run, (size_t)(at - run));
        if (c == '\0')
            break;
        char escaped[8];
        int length = c < 0x20 ? snprintf(escaped, sizeof escaped, "\\u%04x", c)
                              : snprintf(escaped, sizeof escaped, "\\%c", c);
        put(sink, escaped, (size_t)length);
        run = at + 1;
    }
    put(sink, "\"", 1);
}

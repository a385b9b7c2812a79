/* The one JSON string writer every JSON output of gpucache uses (the
 * configuration, reports and snapshots, the commands' --json). It lives in
 * the lowest layer so that each of them can reach it. */
#ifndef GPUCACHE_JSON_H
#define GPUCACHE_JSON_H

#include <stddef.h>

/* Receives the bytes of the written string, in order. */
typedef void gpucache_json_sink(void *sink, const char *bytes, size_t length);

/* Writes `text` as a quoted JSON string through `put`: '"' and '\' are
 * escaped, control bytes become \u00XX, every other byte is passed as is. */
void gpucache_json_string(const char *text, gpucache_json_sink *put, void *sink);

#endif

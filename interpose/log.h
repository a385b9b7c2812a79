/* Logging for code that runs inside hooks: formats into a stack buffer and
 * writes each line with one write(2), so it never allocates, never takes a
 * stdio lock (which fork could leave held) and never re-enters CUDA. */
#ifndef GPUCACHE_INTERPOSE_LOG_H
#define GPUCACHE_INTERPOSE_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* Formats like a small printf (%s %d %u %ld %lu %lld %llu %zu %x %lx %llx %p
 * %%) into `out` (always NUL-terminated). Returns the length written. */
size_t gpucache_vformat(char *out, size_t capacity, const char *format, va_list args);

/* Writes "gpucache: <message>\n" to stderr in a single write. */
void gpucache_log(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Like gpucache_log, but only the first time `once_flag` is seen zero. */
void gpucache_log_once(int *once_flag, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#endif

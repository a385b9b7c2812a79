/* A printf subset without malloc or locks: hooks may run inside a forked
 * child, in signal-unsafe corners of the CUDA runtime, or while the program's
 * stdio is locked, so stdio is not an option. */
#include "log.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

struct output {
    char *text;
    size_t capacity;
    size_t length;
};

static void put_char(struct output *out, char c)
{
    if (out->length + 1 < out->capacity)
        out->text[out->length] = c;
    out->length++;
}

static void put_string(struct output *out, const char *s)
{
    if (!s)
        s = "(null)";
    while (*s)
        put_char(out, *s++);
}

static void put_unsigned(struct output *out, unsigned long long value, unsigned base)
{
    char digits[24];
    size_t count = 0;
    do {
        digits[count++] = "0123456789abcdef"[value % base];
        value /= base;
    } while (value);
    while (count)
        put_char(out, digits[--count]);
}

static void put_signed(struct output *out, long long value)
{
    if (value < 0) {
        put_char(out, '-');
        put_unsigned(out, 0ULL - (unsigned long long)value, 10);
    } else {
        put_unsigned(out, (unsigned long long)value, 10);
    }
}

size_t gpucache_vformat(char *text, size_t capacity, const char *format, va_list args)
{
    struct output out = {text, capacity, 0};
    for (const char *p = format; *p; p++) {
        if (*p != '%') {
            put_char(&out, *p);
            continue;
        }
        p++;
        int longs = 0;
        bool size_type = false;
        while (*p == 'l') {
            longs++;
            p++;
        }
        if (*p == 'z') {
            size_type = true;
            p++;
        }
        switch (*p) {
        case 's':
            put_string(&out, va_arg(args, const char *));
            break;
        case 'd':
            if (size_type)
                put_signed(&out, (long long)va_arg(args, ptrdiff_t));
            else if (longs >= 2)
                put_signed(&out, va_arg(args, long long));
            else if (longs == 1)
                put_signed(&out, va_arg(args, long));
            else
                put_signed(&out, va_arg(args, int));
            break;
        case 'u':
        case 'x': {
            unsigned base = *p == 'x' ? 16 : 10;
            if (size_type)
                put_unsigned(&out, va_arg(args, size_t), base);
            else if (longs >= 2)
                put_unsigned(&out, va_arg(args, unsigned long long), base);
            else if (longs == 1)
                put_unsigned(&out, va_arg(args, unsigned long), base);
            else
                put_unsigned(&out, va_arg(args, unsigned), base);
            break;
        }
        case 'p':
            put_string(&out, "0x");
            put_unsigned(&out, (uintptr_t)va_arg(args, void *), 16);
            break;
        case '%':
            put_char(&out, '%');
            break;
        case '\0':
            p--;
            break;
        default:
            put_char(&out, '%');
            put_char(&out, *p);
            break;
        }
    }
    if (capacity)
        text[out.length < capacity ? out.length : capacity - 1] = '\0';
    return out.length < capacity ? out.length : (capacity ? capacity - 1 : 0);
}

static void log_line(const char *format, va_list args)
{
    char line[512];
    static const char prefix[] = "gpucache: ";
    memcpy(line, prefix, sizeof prefix - 1);
    size_t length = sizeof prefix - 1;
    length += gpucache_vformat(line + length, sizeof line - length - 1, format, args);
    line[length++] = '\n';
    /* One write per line keeps lines from different threads whole. */
    ssize_t ignored = write(STDERR_FILENO, line, length);
    (void)ignored;
}

void gpucache_log(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    log_line(format, args);
    va_end(args);
}

void gpucache_log_once(int *once_flag, const char *format, ...)
{
    if (__atomic_exchange_n(once_flag, 1, __ATOMIC_RELAXED))
        return;
    va_list args;
    va_start(args, format);
    log_line(format, args);
    va_end(args);
}

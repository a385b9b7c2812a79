#include "trace_loader.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rmm_csv_reader.h"
#include "snapshot_reader.h"

bool trace_read_file(const char *path, uint8_t **data, size_t *length, struct read_error *error)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return read_fail(error, "cannot open: %s", strerror(errno));
    /* A regular file is read in one go into a buffer of its size and a
     * byte more (no copy as the buffer grows); a pipe grows from 64 KiB. */
    size_t capacity = 1 << 16, used = 0;
    struct stat status;
    if (fstat(fileno(file), &status) == 0 && S_ISREG(status.st_mode) && status.st_size > 0 &&
        (uintmax_t)status.st_size < SIZE_MAX / 2)
        capacity = (size_t)status.st_size + 1;
    uint8_t *buffer = malloc(capacity);
    while (buffer) {
        used += fread(buffer + used, 1, capacity - used, file);
        if (used < capacity)
            break;
        uint8_t *bigger = realloc(buffer, capacity * 2);
        if (!bigger) {
            free(buffer);
            buffer = NULL;
            break;
        }
        buffer = bigger;
        capacity *= 2;
    }
    bool failed = ferror(file);
    int saved = errno;
    fclose(file);
    if (!buffer)
        return read_fail(error, "out of host memory while reading the file");
    if (failed) {
        free(buffer);
        return read_fail(error, "cannot read: %s", strerror(saved));
    }
    /* The loop stops with room to spare: the text readers want a NUL. */
    buffer[used] = '\0';
    *data = buffer;
    *length = used;
    return true;
}

bool trace_load(const char *path, int device, struct replay_trace *trace,
                struct read_error *error)
{
    uint8_t *data = NULL;
    size_t length = 0;
    if (!trace_read_file(path, &data, &length, error))
        return false;
    bool ok = snapshot_recognised(data, length)
                  ? snapshot_read(data, length, device, trace, error)
                  : rmm_csv_read((const char *)data, length, trace, error);
    free(data);
    return ok;
}

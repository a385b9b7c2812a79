#include "compact_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpucache_report.h"
#include "rmm_csv_reader.h"
#include "trace_loader.h"

static const char magic[] = "gpucache-trace ";

bool compact_trace_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return false;
    char start[sizeof magic - 1];
    bool match = fread(start, 1, sizeof start, file) == sizeof start &&
                 memcmp(start, magic, sizeof start) == 0;
    fclose(file);
    return match;
}

bool compact_trace_load(const char *path, int device, struct replay_trace *trace,
                        struct read_error *error)
{
    uint8_t *data = NULL;
    size_t length = 0;
    if (!trace_read_file(path, &data, &length, error))
        return false;
    char *text = (char *)data;
    size_t count = 0;
    char message[256] = "";
    struct gpucache_event *events = gpucache_trace_read_compact(text, &count, message, sizeof message);
    free(text);
    if (!events && message[0])
        return read_fail(error, "%s (read as the library's trace, as trace: writes it)", message);
    /* One device's events: the CSV has no device column. */
    int chosen = device;
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (chosen < 0)
            chosen = events[i].device;
        else if (device < 0 && events[i].device != chosen) {
            int other = events[i].device;
            free(events);
            return read_fail(error, "the trace holds devices %d and %d (choose one with --device)",
                               chosen, other);
        }
        if (events[i].device == chosen)
            events[kept++] = events[i];
    }
    if (device >= 0 && kept == 0 && count > 0) {
        free(events);
        return read_fail(error, "the trace holds no event of device %d", device);
    }
    count = kept;
    int fd = memfd_create("gpucache-trace-csv", MFD_CLOEXEC);
    bool written = fd >= 0 && gpucache_trace_write_rmm_csv(fd, events, count);
    free(events);
    off_t size = written ? lseek(fd, 0, SEEK_CUR) : -1;
    char *csv = size >= 0 ? malloc((size_t)size + 1) : NULL;
    bool ok = csv && pread(fd, csv, (size_t)size, 0) == size;
    if (fd >= 0)
        close(fd);
    if (!ok) {
        free(csv);
        return read_fail(error, "cannot convert the library's trace (out of host memory)");
    }
    csv[size] = '\0';
    ok = rmm_csv_read(csv, (size_t)size, trace, error);
    free(csv);
    if (ok)
        trace->format = "gpucache trace";
    return ok;
}

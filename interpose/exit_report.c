/* The report a run asks for with report:PATH (or report:stderr): at exit,
 * the statistics of every device the library served, as JSON with PyTorch's
 * memory_stats() names. Written with write(2) and no driver call: at exit
 * the CUDA context may already be gone. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_state.h"
#include "gpucache_config.h"
#include "gpucache_public.h"
#include "library_lifecycle.h"
#include "log.h"
#include "real_driver.h"

static void write_all(int fd, const char *text, size_t length)
{
    while (length) {
        ssize_t written = write(fd, text, length);
        if (written <= 0)
            return;
        text += written;
        length -= (size_t)written;
    }
}

static int open_report(const char *pattern)
{
    if (strcmp(pattern, "stderr") == 0)
        return STDERR_FILENO;
    char path[GPUCACHE_PATH_MAX + 32];
    gpucache_config_expand_path(pattern, (long)getpid(), path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        gpucache_log("cannot write the report to %s", path);
    return fd;
}

__attribute__((destructor)) static void write_exit_report(void)
{
    const struct gpucache_config *config = library_config();
    /* A process that never used CUDA (a shell or `timeout` in front of the
     * program) writes nothing: it would overwrite the program's report. */
    if (!config->report_path[0] || library_passes_everything_through() ||
        !real_driver_activated())
        return;
    int fd = open_report(config->report_path);
    if (fd < 0)
        return;
    size_t capacity = 64 * 1024;
    char *json = malloc(capacity);
    if (!json) {
        if (fd != STDERR_FILENO)
            close(fd);
        return;
    }
    char header[128];
    size_t length = gpucache_format(header, sizeof header, "{\"pid\": %ld, \"devices\": [",
                                    (long)getpid());
    write_all(fd, header, length);
    bool first = true;
    for (int device = 0; device < device_count_limit(); device++) {
        struct gpucache_stats stats;
        if (gpucache_device_stats(device, &stats) != 0)
            continue;
        length = gpucache_format(header, sizeof header, "%s{\"device\": %d, \"stats\": ",
                                 first ? "" : ", ", device);
        write_all(fd, header, length);
        size_t needed = gpucache_stats_to_json(&stats, json, capacity);
        write_all(fd, json, needed < capacity ? needed : capacity - 1);
        write_all(fd, "}", 1);
        first = false;
    }
    write_all(fd, "]}\n", 3);
    free(json);
    if (fd != STDERR_FILENO)
        close(fd);
}

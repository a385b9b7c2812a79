/* Creating report files: never through a symlink, never over a file that
 * exists (it may be the user's, or another process's report), and a failure
 * is one line on stderr, never a change to the program's behaviour. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucache_config.h"
#include "gpucache_report.h"

static void say(const char *what, const char *path, const char *reason)
{
    char line[GPUCACHE_PATH_MAX + 256];
    int length = snprintf(line, sizeof line, "gpucache: cannot write the %s to %s: %s\n", what,
                          path, reason);
    if (length > 0) {
        size_t size = (size_t)length < sizeof line ? (size_t)length : sizeof line - 1;
        ssize_t ignored = write(STDERR_FILENO, line, size);
        (void)ignored;
    }
}

int gpucache_report_open(const char *pattern, long pid, bool stderr_allowed, const char *what)
{
    if (stderr_allowed && strcmp(pattern, "stderr") == 0)
        return STDERR_FILENO;
    char path[GPUCACHE_PATH_MAX + 32];
    if (gpucache_config_expand_path(pattern, pid, path, sizeof path) >= sizeof path) {
        say(what, pattern, "the path is too long");
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int error = errno;
        struct stat status;
        bool is_link = lstat(path, &status) == 0 && S_ISLNK(status.st_mode);
        const char *reason = is_link || error == ELOOP ? "the path is a symbolic link"
                             : error == EEXIST ? "the file exists (gpucache never overwrites a "
                                                 "file; remove it or put %p in the path)"
                                               : strerror(error);
        say(what, path, reason);
    }
    return fd;
}

bool gpucache_report_tagged_path(const char *path, const char *tag, char *out, size_t size)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || dot == path || (slash && dot <= slash + 1))
        dot = path + strlen(path);
    int length = snprintf(out, size, "%.*s%s%s", (int)(dot - path), path, tag, dot);
    return length >= 0 && (size_t)length < size;
}

void gpucache_report_close(int fd)
{
    if (fd > STDERR_FILENO)
        close(fd);
}

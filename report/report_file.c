/* Creating output files: every file gpucache writes (the library's reports,
 * traces and snapshots, the commands' charts, snapshots and captured program
 * output) is created by gpucache_output_create, so none is ever written
 * through a symlink or over a file that exists (it may be the user's, or
 * another process's report). A failure is one line on stderr, never a change
 * to the program's behaviour. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucache_config.h"
#include "gpucache_report.h"

static const char EXISTS_REASON[] =
    "the file exists (gpucache never overwrites a file; remove it or put %p in the path)";
static const char LINK_REASON[] = "the path is a symbolic link (gpucache never follows one)";

/* write(2), not stdio: the library may be reporting from a destructor or
 * after the program's own stdio state went bad. */
static void say(const char *what, const char *path, const char *reason)
{
    char line[GPUCACHE_PATH_MAX + 256];
    int length = snprintf(line, sizeof line, "gpucache: cannot write the %s to %s: %s\n", what,
                          path, reason);
    if (length > 0) {
        size_t size = (size_t)length < sizeof line ? (size_t)length : sizeof line - 1;
        if (size == sizeof line - 1)
            line[size - 1] = '\n';
        ssize_t ignored = write(STDERR_FILENO, line, size);
        (void)ignored;
    }
}

/* The reason an existing name is refused: a symlink (dangling or not) gets
 * its own words, since the user may not know the name is one. */
static const char *existing_reason(const char *path)
{
    struct stat status;
    return lstat(path, &status) == 0 && S_ISLNK(status.st_mode) ? LINK_REASON : EXISTS_REASON;
}

int gpucache_output_create(const char *path, const char *what)
{
    /* With O_CREAT|O_EXCL, open fails with EEXIST on any existing name,
     * a symlink included, and never follows it; O_NOFOLLOW adds nothing
     * then but says the intent, and turns a symlink into ELOOP should the
     * flags ever change. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int error = errno;
        say(what, path,
            error == EEXIST  ? existing_reason(path)
            : error == ELOOP ? LINK_REASON
                             : strerror(error));
    }
    return fd;
}

static bool expand(const char *pattern, long pid, char *path, size_t size, const char *what)
{
    if (gpucache_config_expand_path(pattern, pid, path, size) < size)
        return true;
    say(what, pattern, "the path is too long");
    return false;
}

int gpucache_report_open(const char *pattern, long pid, bool stderr_allowed, const char *what)
{
    if (stderr_allowed && strcmp(pattern, "stderr") == 0)
        return STDERR_FILENO;
    char path[GPUCACHE_PATH_MAX + 32];
    if (!expand(pattern, pid, path, sizeof path, what))
        return -1;
    return gpucache_output_create(path, what);
}

bool gpucache_report_path_is_free(const char *pattern, long pid, const char *what)
{
    char path[GPUCACHE_PATH_MAX + 32];
    if (!expand(pattern, pid, path, sizeof path, what))
        return false;
    struct stat status;
    if (lstat(path, &status) == 0) {
        say(what, path, S_ISLNK(status.st_mode) ? LINK_REASON : EXISTS_REASON);
        return false;
    }
    if (errno != ENOENT) {
        say(what, path, strerror(errno));
        return false;
    }
    /* The name is free; its directory must exist and take a new file. */
    char directory[sizeof path];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(directory, sizeof directory, ".");
    else
        snprintf(directory, sizeof directory, "%.*s", slash == path ? 1 : (int)(slash - path),
                 path);
    if (access(directory, W_OK | X_OK) != 0) {
        say(what, path, strerror(errno));
        return false;
    }
    return true;
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

/* program_run: fork, exec with LD_PRELOAD and GPUCACHE_ALLOC_CONF pointing
 * the library's report, trace and snapshot into a private directory, wait,
 * then read those files back. */
#include "program_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "data_tree.h"
#include "gpucache_config.h"
#include "gpucache_report.h"
#include "json_reader.h"
#include "library_location.h"

bool program_configuration_usable(const char *configuration, char *why, size_t why_size)
{
    struct gpucache_config config;
    struct gpucache_config_error error;
    gpucache_config_defaults(&config);
    if (gpucache_config_parse(NULL, configuration, &config, &error) != 0) {
        snprintf(why, why_size, "%s", error.message);
        return false;
    }
    static const enum gpucache_config_key owned[] = {GPUCACHE_KEY_REPORT, GPUCACHE_KEY_TRACE,
                                                     GPUCACHE_KEY_SUMMARY, GPUCACHE_KEY_SNAPSHOT};
    for (size_t index = 0; index < sizeof owned / sizeof *owned; index++) {
        if (config.key_from_string[owned[index]]) {
            snprintf(why, why_size,
                     "--conf '%s' sets %s, which the command sets itself (run the program with "
                     "LD_PRELOAD=libgpucache.so to choose the files)",
                     configuration, gpucache_config_key_name(owned[index]));
            return false;
        }
    }
    return true;
}

bool program_make_directory(char *path, size_t size)
{
    /* Paths are tokens of the configuration string: no , : [ ] or spaces. */
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strpbrk(base, ",:[] \t\n") || strlen(base) > 200)
        base = "/tmp";
    if ((size_t)snprintf(path, size, "%s/gpucache-XXXXXX", base) >= size)
        return false;
    return mkdtemp(path) != NULL;
}

void program_remove_directory(const char *path)
{
    DIR *directory = opendir(path);
    if (!directory)
        return;
    struct dirent *entry;
    while ((entry = readdir(directory))) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char file[PATH_MAX + 300];
        snprintf(file, sizeof file, "%s/%s", path, entry->d_name);
        unlink(file);
    }
    closedir(directory);
    rmdir(path);
}

char *program_read_file(const char *path, size_t *length)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *text = NULL;
    size_t size = 0, capacity = 0;
    for (;;) {
        if (size + 65536 + 1 > capacity) {
            capacity = (size + 65536 + 1) * 2;
            char *bigger = realloc(text, capacity);
            if (!bigger) {
                free(text);
                fclose(file);
                return NULL;
            }
            text = bigger;
        }
        size_t got = fread(text + size, 1, 65536, file);
        size += got;
        if (got == 0)
            break;
    }
    fclose(file);
    text[size] = '\0';
    if (length)
        *length = size;
    return text;
}

static uint64_t stat_value(const struct data_value *stats, const char *name)
{
    const struct data_value *value = data_dict_get(stats, name);
    return value && value->kind == DATA_INT && value->integer > 0 ? (uint64_t)value->integer : 0;
}

/* Adds one report file's figures to `figures`. */
static void add_report(const char *path, struct program_figures *figures)
{
    size_t length;
    char *text = program_read_file(path, &length);
    if (!text)
        return;
    struct data_document document = {0};
    struct read_error error;
    if (json_read(text, length, &document, &error)) {
        const struct data_value *devices = data_dict_get(document.root, "devices");
        for (size_t index = 0; devices && devices->kind == DATA_LIST &&
                               index < devices->sequence.count;
             index++) {
            const struct data_value *stats = data_dict_get(devices->sequence.items[index], "stats");
            if (!stats)
                continue;
            figures->reported = true;
            uint64_t allocated = stat_value(stats, "allocated_bytes.all.peak");
            uint64_t reserved = stat_value(stats, "reserved_bytes.all.peak");
            figures->peak_allocated += allocated;
            /* Without the cache (pass-through) the driver holds what was asked. */
            figures->peak_reserved += reserved ? reserved : allocated;
            figures->device_allocations += stat_value(stats, "num_device_alloc");
            figures->device_frees += stat_value(stats, "num_device_free");
            figures->synchronizations += stat_value(stats, "gpucache.num_device_synchronizations") +
                                         stat_value(stats, "gpucache.num_fence_waits");
            figures->retries += stat_value(stats, "num_alloc_retries");
            figures->ooms += stat_value(stats, "num_ooms");
        }
        const struct data_value *passthrough = data_dict_get(document.root, "passthrough_calls");
        for (size_t index = 1; passthrough && passthrough->kind == DATA_DICT &&
                               index < 2 * passthrough->sequence.count;
             index += 2) {
            const struct data_value *count = passthrough->sequence.items[index];
            if (count->kind == DATA_INT && count->integer > 0)
                figures->passthrough_calls += (uint64_t)count->integer;
        }
    }
    data_document_destroy(&document);
    free(text);
}

static void read_results(const struct program_request *request, pid_t child,
                         struct program_result *result)
{
    DIR *directory = opendir(request->directory);
    if (!directory)
        return;
    struct dirent *entry;
    while ((entry = readdir(directory))) {
        if (strncmp(entry->d_name, "report-", 7) == 0) {
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s", request->directory, entry->d_name);
            add_report(path, &result->figures);
        }
    }
    closedir(directory);
    /* The trace and snapshot of the program's own process (a child process
     * it starts writes its own files; the program's are the ones compared). */
    if (request->trace) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/trace-%ld.txt", request->directory, (long)child);
        char *text = program_read_file(path, NULL);
        char error[256];
        size_t count = 0;
        struct gpucache_event *events =
            text ? gpucache_trace_read_compact(text, &count, error, sizeof error) : NULL;
        result->samples = gpucache_memory_curve(events, count, &result->sample_count);
        free(events);
        free(text);
    }
    if (request->snapshot_suffix) {
        snprintf(result->snapshot, sizeof result->snapshot, "%s/snapshot-%ld%s",
                 request->directory, (long)child, request->snapshot_suffix);
        if (access(result->snapshot, R_OK) != 0)
            result->snapshot[0] = '\0';
    }
}

/* GPUCACHE_ALLOC_CONF for the child: the user's keys, then ours. */
static bool child_configuration(const struct program_request *request, char *out, size_t size)
{
    const char *directory = request->directory;
    int length = snprintf(out, size, "%s%sreport:%s/report-%%p.json", request->configuration,
                          request->configuration[0] ? "," : "", directory);
    if (request->trace)
        length += snprintf(out + length, size - (size_t)length, ",trace:%s/trace-%%p.txt",
                           directory);
    if (request->summary)
        length += snprintf(out + length, size - (size_t)length, ",summary:%s/summary-%%p.txt",
                           directory);
    if (request->snapshot_suffix)
        length += snprintf(out + length, size - (size_t)length, ",snapshot:%s/snapshot-%%p%s",
                           directory, request->snapshot_suffix);
    return length > 0 && (size_t)length < size;
}

static double now_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

bool program_run(const struct program_request *request, struct program_result *result,
                 char *why, size_t why_size)
{
    memset(result, 0, sizeof *result);
    char configuration[8192];
    if (!child_configuration(request, configuration, sizeof configuration)) {
        snprintf(why, why_size, "the configuration string is too long");
        return false;
    }
    /* After what is preloaded already: a sanitizer runtime must stay first. */
    char preload[PATH_MAX * 2];
    const char *existing = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", existing && *existing ? existing : "",
             existing && *existing ? ":" : "", request->library);
    /* The program's output goes to a new file in the run's private
     * directory, created here so a failure is the command's, not the
     * child's. */
    int output = -1, errors = -1;
    if (request->capture_output || request->capture_streams) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", request->directory,
                 request->capture_streams ? "stdout" : "output");
        output = gpucache_output_create(path, "program's output");
        if (output < 0) {
            snprintf(why, why_size, "cannot capture the program's output in %s", path);
            return false;
        }
    }
    if (request->capture_streams) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/stderr", request->directory);
        errors = gpucache_output_create(path, "program's error output");
        if (errors < 0) {
            snprintf(why, why_size, "cannot capture the program's error output in %s", path);
            close(output);
            return false;
        }
    } else {
        errors = output >= 0 ? dup(output) : -1;
    }
    /* The child tells a failed exec through this pipe (closed on success). */
    int status_pipe[2];
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "cannot create a pipe: %s", strerror(errno));
        if (output >= 0)
            close(output);
        if (errors >= 0)
            close(errors);
        return false;
    }
    fflush(NULL);
    double start = now_seconds();
    pid_t child = fork();
    if (child < 0) {
        snprintf(why, why_size, "cannot start a process: %s", strerror(errno));
        close(status_pipe[0]);
        close(status_pipe[1]);
        if (output >= 0)
            close(output);
        if (errors >= 0)
            close(errors);
        return false;
    }
    if (child > 0) {
        if (output >= 0)
            close(output);
        if (errors >= 0)
            close(errors);
    }
    if (child == 0) {
        close(status_pipe[0]);
        if (!request->without_library) {
            setenv("LD_PRELOAD", preload, 1);
            setenv("GPUCACHE_ALLOC_CONF", configuration, 1);
        }
        for (char *const *setting = request->environment; setting && *setting; setting++) {
            const char *equals = strchr(*setting, '=');
            if (equals == NULL)
                continue;
            char name[256];
            size_t length = (size_t)(equals - *setting);
            if (length == 0 || length >= sizeof name)
                continue;
            memcpy(name, *setting, length);
            name[length] = '\0';
            setenv(name, equals + 1, 1);
        }
        if (output >= 0)
            dup2(output, STDOUT_FILENO);
        if (errors >= 0)
            dup2(errors, STDERR_FILENO);
        execvp(request->argv[0], request->argv);
        int error = errno;
        ssize_t ignored = write(status_pipe[1], &error, sizeof error);
        (void)ignored;
        _exit(127);
    }
    close(status_pipe[1]);
    int exec_error = 0;
    ssize_t got = read(status_pipe[0], &exec_error, sizeof exec_error);
    close(status_pipe[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        continue;
    result->seconds = now_seconds() - start;
    if (got == (ssize_t)sizeof exec_error) {
        snprintf(why, why_size, "cannot run %s: %s", request->argv[0], strerror(exec_error));
        return false;
    }
    result->started = true;
    if (WIFSIGNALED(status))
        result->signal = WTERMSIG(status);
    else
        result->exit_status = WEXITSTATUS(status);
    read_results(request, child, result);
    return true;
}

bool program_succeeded(const struct program_result *result)
{
    return result->started && result->signal == 0 && result->exit_status == 0;
}

const char *program_status_text(const struct program_result *result, char *buffer, size_t size)
{
    if (!result->started)
        snprintf(buffer, size, "not started");
    else if (result->signal) {
        const char *name = sigabbrev_np(result->signal);
        if (name)
            snprintf(buffer, size, "SIG%s", name);
        else
            snprintf(buffer, size, "signal %d", result->signal);
    } else
        snprintf(buffer, size, "exit %d", result->exit_status);
    return buffer;
}

bool program_sim_settings(struct program_sim_settings *settings, const char *memory,
                          bool racecheck, char *why, size_t why_size)
{
    char folder[PATH_MAX];
    if (!library_location_find_sim(folder, sizeof folder, why, why_size))
        return false;
    size_t count = 0;
    const char *existing = getenv("LD_LIBRARY_PATH");
    snprintf(settings->storage[count], sizeof settings->storage[count],
             "LD_LIBRARY_PATH=%s:%s/runtime%s%s", folder, folder, existing && *existing ? ":" : "",
             existing && *existing ? existing : "");
    settings->environment[count] = settings->storage[count];
    count++;
    snprintf(settings->storage[count], sizeof settings->storage[count], "GPUSIM_RACECHECK=%s",
             racecheck ? "1" : "0");
    settings->environment[count] = settings->storage[count];
    count++;
    if (memory) {
        snprintf(settings->storage[count], sizeof settings->storage[count], "GPUSIM_MEMORY=%s",
                 memory);
        settings->environment[count] = settings->storage[count];
        count++;
    }
    settings->environment[count] = NULL;
    return true;
}

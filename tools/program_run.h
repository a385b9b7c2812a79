/* Running a program under libgpucache.so and collecting what the library
 * reported about it: the machinery shared by `gpucache run` and
 * `gpucache ab`. */
#ifndef GPUCACHE_PROGRAM_RUN_H
#define GPUCACHE_PROGRAM_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpucache_report.h"

/* What the library's reports say, summed over devices and processes. */
struct program_figures {
    bool reported; /* at least one report was written */
    uint64_t peak_allocated;
    uint64_t peak_reserved;
    uint64_t device_allocations;
    uint64_t device_frees;
    uint64_t synchronizations; /* device synchronizations and fence waits we issued */
    uint64_t retries;
    uint64_t ooms;
    uint64_t passthrough_calls;
};

struct program_request {
    const char *library;
    const char *configuration; /* the user's string; "" for the defaults */
    char *const *argv;         /* the program and its arguments */
    const char *directory;     /* an empty directory for this run's reports */
    bool trace;                /* also record the trace (for charts) */
    bool summary;              /* also write the memory_summary() tables */
    const char *snapshot_suffix; /* ".json" or ".pickle" to write a snapshot; NULL: none */
    bool capture_output;       /* send the program's stdout and stderr to DIRECTORY/output */
    bool capture_streams;      /* stdout to DIRECTORY/stdout, stderr to DIRECTORY/stderr */
    bool without_library;      /* run the program as it is (no LD_PRELOAD, no reports) */
    char *const *environment;  /* NAME=VALUE settings for the program; NULL-terminated or NULL */
};

struct program_result {
    bool started;    /* the program could be executed */
    int exit_status; /* when it exited */
    int signal;      /* when a signal ended it; 0 otherwise */
    double seconds;  /* wall time */
    struct program_figures figures;
    struct gpucache_memory_sample *samples; /* from the trace, when asked; caller frees */
    size_t sample_count;
    char snapshot[PATH_MAX]; /* the snapshot file written, or "" */
};

/* What puts a program on the simulated device of this build. */
struct program_sim_settings {
    char storage[3][PATH_MAX * 2 + 64];
    char *environment[4]; /* for program_request.environment */
};

/* Fills `settings` for runs on the simulated device: its driver and runtime
 * first on LD_LIBRARY_PATH, its race detector on or off, its memory
 * (GPUSIM_MEMORY syntax; NULL: the sim's default). False with one line in
 * `why` when the simulated device cannot be found. */
bool program_sim_settings(struct program_sim_settings *settings, const char *memory,
                          bool racecheck, char *why, size_t why_size);

/* The whole file, NUL-terminated (its length in `length` unless NULL), or
 * NULL when it cannot be read. */
char *program_read_file(const char *path, size_t *length);

/* Runs the program and waits for it. Returns false (with `why`) only when
 * it could not be started at all; a program that fails is a result. */
bool program_run(const struct program_request *request, struct program_result *result,
                 char *why, size_t why_size);

/* The keys the command adds itself; a --conf that sets one is refused with
 * a line in `why`. Also refuses a string the parser rejects. */
bool program_configuration_usable(const char *configuration, char *why, size_t why_size);

/* "exit 0", "exit 3", "SIGSEGV", "not started". */
const char *program_status_text(const struct program_result *result, char *buffer, size_t size);

/* True when the run ended with exit status 0. */
bool program_succeeded(const struct program_result *result);

/* A new empty directory under $TMPDIR (or /tmp) whose path is usable inside
 * a configuration string; false when none can be made. */
bool program_make_directory(char *path, size_t size);

/* Removes a directory made by program_make_directory and its files. */
void program_remove_directory(const char *path);

#endif

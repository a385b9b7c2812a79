/* What `gpucache ab` prints: its options and results, shared by the command
 * (command_ab.c) and its table and JSON (ab_output.c). */
#ifndef GPUCACHE_AB_OUTPUT_H
#define GPUCACHE_AB_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "program_run.h"

#define AB_MAX_REPEAT 1000

struct ab_options {
    const char **configurations;
    size_t configuration_count;
    bool baseline;
    unsigned repeat;
    const char *svg_path;
    const char *snapshot_path;
    bool json;
    bool sim;
    bool racecheck;
    const char *sim_memory;
    char **program;
};

struct ab_column {
    const char *label;
    const char *configuration;
    bool baseline;
    struct program_result *runs; /* `repeat` of them */
    size_t runs_done;
    char output_tail[512];       /* of the last failed run */
    char directory[PATH_MAX];    /* of the last successful run, kept for its files */
};

/* The table, a column per configuration, with each failed run's output tail. */
void ab_print_table(FILE *out, const struct ab_options *options,
                    const struct ab_column *columns, size_t column_count);

/* The same results as JSON: every run and each configuration's medians. */
void ab_print_json(FILE *out, const struct ab_options *options,
                   const struct ab_column *columns, size_t column_count);

#endif

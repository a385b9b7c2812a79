/* The `gpucache` command: `gpucache <command> [arguments]` runs
 * tools/command_<command>.c. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

#include "command_replay.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *summary;
};

static const struct command commands[] = {
    {"config", command_config, "config [STRING]",
     "print the effective configuration as JSON (STRING, else the environment)"},
    {"replay", command_replay, "replay ...",
     "replay a recorded trace offline through one or more configurations"},
    {"run", command_run, "run ... -- PROGRAM", "run a program under the library, print its report"},
    {"ab", command_ab, "ab ... -- PROGRAM",
     "compare configurations on a program, side by side"},
    {"check", command_check, "check ... -- PROGRAM",
     "run a program alone and under the library; PASS only if it behaves the same"},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static int print_help(FILE *out)
{
    fprintf(out, "usage: gpucache <command> [arguments]\n\ncommands:\n");
    fprintf(out, "  %-18s %s\n", "help", "show this list");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-18s %s\n", commands[i].usage, commands[i].summary);
    fprintf(out, "\nThe configuration is read from GPUCACHE_ALLOC_CONF, else "
                 "PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF.\n");
    return 0;
}

static void print_command_names(FILE *out)
{
    fprintf(out, "help");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, ", %s", commands[i].name);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "gpucache: missing command (expected one of ");
        print_command_names(stderr);
        fprintf(stderr, "; try 'gpucache help')\n");
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return print_help(stdout);
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "gpucache: unknown command '%s' (expected one of ", name);
    print_command_names(stderr);
    fprintf(stderr, ")\n");
    return 2;
}

/* The `gpucache` sub-commands. Each takes the arguments after its own name
 * (argv[0] is the command's name) and returns the process exit status:
 * 0 on success, 2 for bad usage or a bad configuration string. */
#ifndef GPUCACHE_TOOLS_COMMANDS_H
#define GPUCACHE_TOOLS_COMMANDS_H

/* `gpucache config [STRING]`: the effective configuration as JSON. */
int command_config(int argc, char **argv);

/* `gpucache run [--conf STRING] -- PROGRAM ARGS...`: runs a program under
 * libgpucache.so and prints the library's report. */
int command_run(int argc, char **argv);

/* `gpucache ab [--conf STRING]... [--baseline] [--repeat N] [--svg FILE]
 * [--snapshot FILE] [--json] -- PROGRAM ARGS...`: a side-by-side comparison. */
int command_ab(int argc, char **argv);

/* `gpucache check [--conf STRING]... [--ignore REGEX]... [--sim] -- PROGRAM
 * ARGS...`: runs the program alone and under the library in each
 * configuration; one PASS/FAIL line each, exit 1 on any difference. */
int command_check(int argc, char **argv);

#endif

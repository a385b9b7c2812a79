/* `gpucache replay`: replays an allocation trace (RMM replay CSV or PyTorch
 * memory snapshot) through one or more allocator configurations on a
 * simulated device, with no GPU, and prints the results side by side. */
#ifndef GPUCACHE_COMMAND_REPLAY_H
#define GPUCACHE_COMMAND_REPLAY_H

/* Runs the command; argv[0] is the sub-command's name, options follow.
 * Returns the exit status: 0 when every configuration was replayed (running
 * out of memory is a result), 2 for bad options or an unreadable trace. */
int command_replay(int argc, char **argv);

#endif

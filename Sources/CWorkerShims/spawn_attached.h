// Internal to CWorkerShims: the one way it starts a program (spawn.c).
#ifndef LUNETTE_CWORKERSHIMS_SPAWN_H
#define LUNETTE_CWORKERSHIMS_SPAWN_H

/// Starts `path` with `input` as its standard input and `output` as its
/// standard output (-1: /dev/null), the caller's standard error and no
/// other descriptor of the caller's, in a process group of its own, no
/// signal blocked, SIGPIPE and SIGCHLD at their defaults. Its pid, or -1
/// with errno; the caller reaps it.
int lunette_spawn_attached(const char *path, char *const argv[], char *const envp[], int input, int output);

/// After a spawn that gave the child `child_end`: closes it (the child has
/// its copy); then, when the spawn failed (`pid` < 0), closes `host_end`
/// too and returns -1 with the spawn's errno; else hands `host_end` to
/// *host_out and returns `pid`.
int lunette_spawn_hand_over(int pid, int child_end, int host_end, int *host_out);

#endif

// Starting a worker process without Foundation's Process: the host keeps
// the only handles on it (two pipes and its pid, which it alone reaps), and
// the worker inherits no other descriptor of the host's.
#define _GNU_SOURCE
#include "CWorkerShims.h"
#include "spawn_attached.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

// See spawn_attached.h. Shared by workers and the fork server (fork_server.c).
int lunette_spawn_attached(const char *path, char *const argv[], char *const envp[], int input, int output) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_adddup2(&actions, input, 0);
    if (output >= 0) posix_spawn_file_actions_adddup2(&actions, output, 1);
    else posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#if defined(__APPLE__)
    // Every descriptor not named in the file actions is closed.
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
    posix_spawn_file_actions_addinherit_np(&actions, 2);
#else
    // Every descriptor above standard error is closed (glibc 2.34 and later).
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    posix_spawnattr_setflags(&attributes, flags);
    posix_spawnattr_setpgroup(&attributes, 0);           // a process group of its own
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);                        // the host ignores it; the child need not
    sigaddset(&defaults, SIGCHLD);                        // never SIG_IGN, which would reap a child's children unasked
    posix_spawnattr_setsigdefault(&attributes, &defaults);

    pid_t pid;
    int status = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (status != 0) {
        errno = status;
        return -1;
    }
    return pid;
}

int lunette_spawn_worker(const char *path, char *const argv[], char *const envp[], int *to_child, int *from_child) {
    int in[2], out[2];
    if (pipe(in) != 0) return -1;
    if (pipe(out) != 0) { int e = errno; close(in[0]); close(in[1]); errno = e; return -1; }
    // The host's ends never reach the child.
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    int pid = lunette_spawn_attached(path, argv, envp, in[0], out[1]);
    int e = errno;
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        errno = e;
        return -1;
    }
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

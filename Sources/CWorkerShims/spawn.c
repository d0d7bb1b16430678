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

// What every child the host starts shares: a process group of its own, no
// signal blocked, SIGPIPE and SIGCHLD at their defaults, and no descriptor
// of the host's but those `actions` name (and standard error, with
// `keep_error`). Destroys `actions`. Returns the pid, or -1 with errno.
static int lunette_spawn_with(const char *path, char *const argv[], char *const envp[],
                              posix_spawn_file_actions_t *actions, int keep_error) {
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#if defined(__APPLE__)
    // Every descriptor not named in the file actions is closed.
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
    if (keep_error) posix_spawn_file_actions_addinherit_np(actions, 2);
#else
    // Every descriptor above standard error is closed (glibc 2.34 and later).
    (void)keep_error;
    posix_spawn_file_actions_addclosefrom_np(actions, 3);
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
    int status = posix_spawn(&pid, path, actions, &attributes, argv, envp);
    posix_spawn_file_actions_destroy(actions);
    posix_spawnattr_destroy(&attributes);
    if (status != 0) {
        errno = status;
        return -1;
    }
    return pid;
}

// See spawn_attached.h. Shared by workers and the fork server (fork_server.c).
int lunette_spawn_attached(const char *path, char *const argv[], char *const envp[], int input, int output) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, input, 0);
    if (output >= 0) posix_spawn_file_actions_adddup2(&actions, output, 1);
    else posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    return lunette_spawn_with(path, argv, envp, &actions, 1);
}

int lunette_spawn_worker(const char *path, char *const argv[], char *const envp[], int *to_child, int *from_child) {
    int in[2], out[2];
    if (pipe(in) != 0) return -1;
    if (pipe(out) != 0) { int e = errno; close(in[0]); close(in[1]); errno = e; return -1; }
    // The host's ends never reach the child.
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    int pid = lunette_spawn_attached(path, argv, envp, in[0], out[1]);
    pid = lunette_spawn_hand_over(pid, in[0], in[1], to_child);
    return lunette_spawn_hand_over(pid, out[1], out[0], from_child);
}

int lunette_spawn_hand_over(int pid, int child_end, int host_end, int *host_out) {
    int e = errno;
    close(child_end);
    if (pid < 0) {
        close(host_end);
        errno = e;
        return -1;
    }
    *host_out = host_end;
    return pid;
}

int lunette_spawn_tool(const char *path, char *const argv[], char *const envp[], const char *directory, int error_fd, int *from_child) {
    int out[2];
    if (pipe(out) != 0) return -1;
    fcntl(out[0], F_SETFD, FD_CLOEXEC);                  // the host's end never reaches the child
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // Standard error first: were `error_fd` 1, standard output's pipe would replace it.
    posix_spawn_file_actions_adddup2(&actions, error_fd, 2);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addchdir_np(&actions, directory);
    return lunette_spawn_hand_over(lunette_spawn_with(path, argv, envp, &actions, 0), out[1], out[0], from_child);
}

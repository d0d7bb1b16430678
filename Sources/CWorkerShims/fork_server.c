// A worker fork server (Linux): one `lunette worker --fork-server` process,
// started once, that forks a worker for each request of its host. A worker
// started this way skips exec, the dynamic loader and the Swift runtime's
// start (what most of a worker's cold start is); it begins life as a copy of
// a process that has done them, and serves its host as a spawned one does.
//
// The protocol, over a SOCK_SEQPACKET socket pair (one datagram a message):
//   server → host  'Y' + 0, once, when its warm-up is done and it serves
//   host → server  'S' + lockdown byte, with two descriptors (SCM_RIGHTS):
//                  the worker's standard input and output
//   server → host  'P' + pid (int32)  |  'E' + errno (int32)
//   host → server  'R' + pid (int32): reap that worker (it has exited)
//   server → host  'W' + wait status (int32)  |  'E' + errno (int32)
// The server reaps a worker only when asked, so a worker's pid stays its
// own while the host may still signal it or read its CPU time; the host
// signals through a pidfd all the same. The end of the socket ends the
// server, which leaves its workers running (each ends with its host's pipe).
#define _GNU_SOURCE
#include "CWorkerShims.h"
#include "spawn_attached.h"

#include <errno.h>

#if defined(__linux__)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// MARK: - Host side

int lunette_fork_server_spawn(const char *path, char *const argv[], char *const envp[], int *sock) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    // Standard input is the socket; standard output goes nowhere (each
    // worker gets its own); standard error is the host's, as a worker's.
    return lunette_spawn_hand_over(lunette_spawn_attached(path, argv, envp, pair[1], -1), pair[1], pair[0], sock);
}

// Sends `message` (5 bytes) with `fds` (0 or 2 descriptors).
static int lunette_send_message(int sock, const unsigned char message[5], const int *fds, int nfds) {
    struct iovec io = { (void *)message, 5 };
    union { struct cmsghdr header; char bytes[CMSG_SPACE(2 * sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr m = { 0 };
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    if (nfds > 0) {
        m.msg_control = control.bytes;
        m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    ssize_t n;
    do { n = sendmsg(sock, &m, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    if (n == 5) return 0;
    if (n >= 0) errno = EPROTO;
    return -1;
}

static void lunette_put32(unsigned char *p, int32_t v) { memcpy(p, &v, 4); }
static int32_t lunette_get32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }

// Receives a 5-byte answer tagged `expected` (or 'E') within `timeout_ms`;
// its number in *value. -1 with errno: the server's error, EPIPE when it is
// gone, ETIMEDOUT when it did not answer in time.
static int lunette_receive_answer(int sock, unsigned char expected, int32_t *value, int timeout_ms) {
    struct pollfd ready = { sock, POLLIN, 0 };
    int r;
    do { r = poll(&ready, 1, timeout_ms); } while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    if (r == 0) { errno = ETIMEDOUT; return -1; }
    unsigned char answer[5];
    ssize_t n;
    do { n = recv(sock, answer, sizeof answer, 0); } while (n < 0 && errno == EINTR);
    if (n == 0) { errno = EPIPE; return -1; }
    if (n < 0) return -1;
    if (n != 5) { errno = EPROTO; return -1; }
    int32_t v = lunette_get32(answer + 1);
    if (answer[0] == 'E') { errno = v > 0 ? v : EPROTO; return -1; }
    if (answer[0] != expected) { errno = EPROTO; return -1; }
    *value = v;
    return 0;
}

int lunette_fork_server_start(int sock, int lockdown, int timeout_ms, int *to_child, int *from_child) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return -1;
    if (pipe2(out, O_CLOEXEC) != 0) { int e = errno; close(in[0]); close(in[1]); errno = e; return -1; }
    unsigned char request[5] = { 'S', (unsigned char)lockdown, 0, 0, 0 };
    int fds[2] = { in[0], out[1] };
    int sent = lunette_send_message(sock, request, fds, 2);
    int e = errno;
    close(in[0]);   // the server has its own copies now (or none: it failed)
    close(out[1]);
    int32_t pid = -1;
    if (sent != 0 || lunette_receive_answer(sock, 'P', &pid, timeout_ms) != 0) {
        if (sent == 0) e = errno;
        close(in[1]);
        close(out[0]);
        errno = e;
        return -1;
    }
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

int lunette_fork_server_ready(int sock, int timeout_ms, int32_t *word) {
    if (lunette_receive_answer(sock, 'Y', word, timeout_ms) == 0) return 1;
    return errno == ETIMEDOUT ? 0 : -1;
}

int lunette_fork_server_reap(int sock, int pid, int timeout_ms, int *status) {
    unsigned char request[5] = { 'R' };
    lunette_put32(request + 1, pid);
    int32_t value;
    if (lunette_send_message(sock, request, NULL, 0) != 0 || lunette_receive_answer(sock, 'W', &value, timeout_ms) != 0) return -1;
    *status = value;
    return 0;
}

int lunette_pidfd_open(int pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

int lunette_pidfd_send_signal(int pidfd, int sig) {
#ifdef SYS_pidfd_send_signal
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
    (void)pidfd; (void)sig;
    errno = ENOSYS;
    return -1;
#endif
}

// MARK: - Server side

int lunette_fork_server_threads(void) {
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[1024];
    ssize_t n = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (n <= 0) return -1;
    buffer[n] = '\0';
    // Field 20; the command (field 2) may hold spaces, so count from its ')'.
    char *p = strrchr(buffer, ')');
    if (p == NULL) return -1;
    int field = 2;
    for (p++; *p != '\0'; p++) {
        if (*p == ' ' && ++field == 20) return atoi(p + 1);
    }
    return -1;
}

static void lunette_answer(int sock, unsigned char tag, int32_t value) {
    unsigned char answer[5] = { tag };
    lunette_put32(answer + 1, value);
    (void)lunette_send_message(sock, answer, NULL, 0);
}

int lunette_fork_server_serve(int sock, int32_t ready) {
    lunette_answer(sock, 'Y', ready);
    for (;;) {
        unsigned char request[5];
        struct iovec io = { request, sizeof request };
        union { struct cmsghdr header; char bytes[CMSG_SPACE(2 * sizeof(int))]; } control;
        struct msghdr m = { 0 };
        m.msg_iov = &io;
        m.msg_iovlen = 1;
        m.msg_control = control.bytes;
        m.msg_controllen = sizeof control.bytes;
        ssize_t n;
        do { n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC); } while (n < 0 && errno == EINTR);
        // The host closed its end (with the ready message unread, the
        // close is a reset).
        if (n == 0 || (n < 0 && errno == ECONNRESET)) return -1;
        if (n < 0) return -2;
        int fds[2] = { -1, -1 };
        int nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < 2) fds[nfds++] = fd; else close(fd);
            }
        }
        if (n != 5 || (m.msg_flags & MSG_CTRUNC)) {
            for (int i = 0; i < nfds; i++) close(fds[i]);
            lunette_answer(sock, 'E', EPROTO);
            continue;
        }
        if (request[0] == 'R') {
            for (int i = 0; i < nfds; i++) close(fds[i]);
            // Asked once the worker has exited (its pidfd said so): no
            // wait here, so a wrong request costs an error, not the server.
            pid_t worker = (pid_t)lunette_get32(request + 1);
            if (worker <= 0) { lunette_answer(sock, 'E', EINVAL); continue; }   // never "any child"
            int status = 0;
            pid_t r;
            do { r = waitpid(worker, &status, WNOHANG); } while (r < 0 && errno == EINTR);
            if (r < 0) lunette_answer(sock, 'E', errno);
            else if (r == 0) lunette_answer(sock, 'E', EBUSY);
            else lunette_answer(sock, 'W', status);
            continue;
        }
        if (request[0] != 'S' || nfds != 2) {
            for (int i = 0; i < nfds; i++) close(fds[i]);
            lunette_answer(sock, 'E', EPROTO);
            continue;
        }
        // One thread (the caller checked, and this loop starts none): a
        // fork copies only the thread that calls it.
        pid_t pid = fork();
        if (pid == 0) {
            // The worker: the pipes become its standard input and output,
            // nothing else of the server's stays open, and it leads a
            // process group of its own, as a spawned worker does.
            if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0) _exit(3);
            // close_range (Linux 5.9), else /proc/self/fd, else it aborts:
            // never a worker with a descriptor of the server's.
            closefrom(3);
            if (setpgid(0, 0) != 0) _exit(3);
            return request[1];
        }
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        if (pid < 0) lunette_answer(sock, 'E', e); else lunette_answer(sock, 'P', pid);
    }
}
#else
int lunette_fork_server_spawn(const char *path, char *const argv[], char *const envp[], int *sock) {
    (void)path; (void)argv; (void)envp; (void)sock;
    errno = ENOSYS;
    return -1;
}
int lunette_fork_server_start(int sock, int lockdown, int timeout_ms, int *to_child, int *from_child) {
    (void)sock; (void)lockdown; (void)timeout_ms; (void)to_child; (void)from_child;
    errno = ENOSYS;
    return -1;
}
int lunette_fork_server_reap(int sock, int pid, int timeout_ms, int *status) {
    (void)sock; (void)pid; (void)timeout_ms; (void)status;
    errno = ENOSYS;
    return -1;
}
int lunette_fork_server_ready(int sock, int timeout_ms) { (void)sock; (void)timeout_ms; errno = ENOSYS; return -1; }
int lunette_pidfd_open(int pid) { (void)pid; errno = ENOSYS; return -1; }
int lunette_pidfd_send_signal(int pidfd, int sig) { (void)pidfd; (void)sig; errno = ENOSYS; return -1; }
int lunette_fork_server_serve(int sock) { (void)sock; return -2; }
int lunette_fork_server_threads(void) { return -1; }
#endif

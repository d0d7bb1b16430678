#ifndef LUNETTE_CWORKERSHIMS_H
#define LUNETTE_CWORKERSHIMS_H

#include <stdint.h>

/// What a worker process drops once it is ready (docs/plugins.md, "Worker
/// processes"). Each returns 0 when it holds, -1 with errno when the kernel
/// refused it, and -2 where the system has no such thing (not Linux, or a
/// processor this filter does not know).

/// prctl(PR_SET_NO_NEW_PRIVS): no exec can ever give this process more privileges.
int lunette_worker_no_new_privs(void);

/// A seccomp filter: from now on this process cannot open files (open,
/// openat, openat2, creat, open_by_handle_at), make sockets (socket,
/// socketpair), run programs (execve, execveat) or start processes (fork,
/// vfork, clone without CLONE_THREAD), signal any process but itself (kill,
/// tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: allowed only with its own pid;
/// tkill never), change another process's limits (prlimit64), or reach
/// another process's memory or descriptors (ptrace, process_vm_readv,
/// process_vm_writev, pidfd_open, pidfd_getfd, pidfd_send_signal, kcmp);
/// each fails with EPERM. clone3 fails with ENOSYS, so that threads are made
/// with clone. Needs no_new_privs first (or CAP_SYS_ADMIN).
int lunette_worker_seccomp(void);

/// 1 in a build with AddressSanitizer or ThreadSanitizer, whose runtime
/// needs a vast address space and opens its report files when it reports.
int lunette_worker_sanitized(void);

/// Starts the program at `path` (argv, envp: NULL-terminated) as a worker:
/// its standard input reads a new pipe whose write end goes to *to_child,
/// its standard output writes a new pipe whose read end goes to
/// *from_child, its standard error is the caller's, and no other descriptor
/// of the caller's reaches it; it leads a process group of its own, with no
/// signal blocked and SIGPIPE at its default. Returns its pid, or -1 with
/// errno. The caller reaps it (waitpid).
int lunette_spawn_worker(const char *path, char *const argv[], char *const envp[], int *to_child, int *from_child);

/// Starts the program at `path` (absolute: the child changes folder first;
/// argv, envp: NULL-terminated) as a tool
/// whose output the host reads (luacheck): in `directory`, its standard
/// input /dev/null, its standard output a new pipe whose read end goes to
/// *from_child, its standard error `error_fd`, and no other descriptor of
/// the caller's; it leads a process group of its own, with no signal
/// blocked and SIGPIPE at its default. Returns its pid, or -1 with errno.
/// The caller reaps it (waitpid).
int lunette_spawn_tool(const char *path, char *const argv[], char *const envp[], const char *directory, int error_fd, int *from_child);

/// Names the calling thread (cut to the system's limit, 15 bytes on Linux,
/// at a character's boundary).
void lunette_name_this_thread(const char *name);

/// The processor the calling thread runs on, or -1 where that is not known.
int lunette_current_cpu(void);

/// Lets process `pid` run on processor `cpu` only (sched_setaffinity); with
/// `cpu` -1, on the processors the calling thread may use.
/// 0, -1 with errno, or -2 where the system has no such thing.
int lunette_pin_to_cpu(int pid, int cpu);

/// The worker fork server (Linux; fork_server.c, docs/plugins.md "How
/// workers start"). Elsewhere each returns -1 with errno ENOSYS (serve: -2).
///
/// Starts `path` (argv, envp) as a fork server: its standard input is one
/// end of a new SOCK_SEQPACKET socket pair, whose other end goes to *sock;
/// otherwise started as lunette_spawn_worker starts a worker. Returns its
/// pid (the caller reaps it), or -1 with errno.
int lunette_fork_server_spawn(const char *path, char *const argv[], char *const envp[], int *sock);

/// Whether the server on `sock` is ready (its warm-up done; it says so
/// once): waits up to `timeout_ms` (0: not at all). 1 ready (from then on
/// it serves; *word is the word it sent, lunette_fork_server_serve's
/// `ready`), 0 not yet, -1 with errno (EPIPE: it is gone).
int lunette_fork_server_ready(int sock, int timeout_ms, int32_t *word);

/// Asks the server on `sock` (ready) for a worker that locks down as `lockdown`
/// says (a byte the worker's main reads): its standard input reads a new
/// pipe whose write end goes to *to_child, its standard output writes one
/// whose read end goes to *from_child. Returns the worker's pid, or -1 with
/// errno (EPIPE: the server is gone; ETIMEDOUT: no answer within `timeout_ms`, after which the
/// socket may hold a late answer: do not use it again). The worker is the
/// server's child: reap it with lunette_fork_server_reap, once it has
/// exited (a pidfd says when).
int lunette_fork_server_start(int sock, int lockdown, int timeout_ms, int *to_child, int *from_child);

/// Has the server reap worker `pid`, which has exited; its wait status in
/// *status. 0, or -1 with errno (ETIMEDOUT as above).
int lunette_fork_server_reap(int sock, int pid, int timeout_ms, int *status);

/// pidfd_open(pid, 0) and pidfd_send_signal(pidfd, sig, NULL, 0).
int lunette_pidfd_open(int pid);
int lunette_pidfd_send_signal(int pidfd, int sig);

/// The server's loop on `sock` (its standard input), first sending the
/// host the word `ready`. The process must have one thread (a fork copies
/// only the forking thread; lunette_fork_server_threads), and the loop
/// starts none. Returns in each worker it forks, with the request's
/// lockdown byte (0 or more); in the server, -1 when the host closed the
/// socket, -2 when it cannot read it.
int lunette_fork_server_serve(int sock, int32_t ready);

/// The threads of this process (from /proc/self/stat), or -1 where that
/// cannot be read: a fork server serves only when it is 1.
int lunette_fork_server_threads(void);

#endif

#ifndef LUNETTE_CWORKERSHIMS_H
#define LUNETTE_CWORKERSHIMS_H

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

/// The processor the calling thread runs on, or -1 where that is not known.
int lunette_current_cpu(void);

/// Lets process `pid` run on processor `cpu` only (sched_setaffinity); with
/// `cpu` -1, on the processors the calling thread may use.
/// 0, -1 with errno, or -2 where the system has no such thing.
int lunette_pin_to_cpu(int pid, int cpu);

#endif

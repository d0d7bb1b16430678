// The worker's lockdown: no_new_privs and a seccomp filter (Linux only).
#define _GNU_SOURCE
#include "CWorkerShims.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif

int lunette_worker_sanitized(void) {
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 1;
#else
    return 0;
#endif
}

#if defined(__linux__)
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define LUNETTE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define LUNETTE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

int lunette_worker_no_new_privs(void) {
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

#ifdef LUNETTE_AUDIT_ARCH
// Each rule below is self-contained: its jumps stay inside it, and a system
// call it does not name goes on to the next rule with the number still loaded.
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

// A system call's arguments are 64 bits (seccomp_data.args); a filter loads 32 at a time.
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LOW(i) (offsetof(struct seccomp_data, args[i]))
#define ARG_HIGH(i) (offsetof(struct seccomp_data, args[i]) + 4)
#else
#define ARG_LOW(i) (offsetof(struct seccomp_data, args[i]) + 4)
#define ARG_HIGH(i) (offsetof(struct seccomp_data, args[i]))
#endif

// System call nr is allowed when its first argument is exactly pid (its low
// 32 bits pid, its high 32 bits 0), and fails with EPERM for any other.
// Either way the decision is made here: the number is no longer loaded.
#define ONLY_WITH_FIRST(nr, pid) \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 6), \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (pid), 0, 3), \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HIGH(0)), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

// The same, where a first argument of 0 also means this process (prlimit64).
#define ONLY_WITH_FIRST_OR_0(nr, pid) \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 7), \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HIGH(0)), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4), \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(0)), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (pid), 0, 1), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

int lunette_worker_seccomp(void) {
    // The worker's own pid: the only process it may signal. It starts no
    // other (fork and clone are refused below), so the pid never changes.
    const __u32 self = (__u32)getpid();
    struct sock_filter filter[] = {
        // Another architecture's system call numbers mean other calls: refuse them all.
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LUNETTE_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        // x32 system calls (numbers with bit 30 set) would slip past the numbers below.
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
#endif
#ifdef __NR_open
        DENY(__NR_open),
#endif
#ifdef __NR_creat
        DENY(__NR_creat),
#endif
        DENY(__NR_openat),
#ifdef __NR_openat2
        DENY(__NR_openat2),
#endif
        DENY(__NR_open_by_handle_at),
        DENY(__NR_socket),
        DENY(__NR_socketpair),
        DENY(__NR_execve),
        DENY(__NR_execveat),
#ifdef __NR_fork
        DENY(__NR_fork),
#endif
#ifdef __NR_vfork
        DENY(__NR_vfork),
#endif
        // Signals: to itself only (abort() is raise(), tgkill with the own
        // pid); never to the host, another process, its group (0, negative) or all (-1).
        ONLY_WITH_FIRST(__NR_kill, self),
        ONLY_WITH_FIRST(__NR_tgkill, self),
        ONLY_WITH_FIRST(__NR_rt_sigqueueinfo, self),
        ONLY_WITH_FIRST(__NR_rt_tgsigqueueinfo, self),
        // tkill names a thread of any process by its id alone; the C library does not use it.
        DENY(__NR_tkill),
        // Another process's limits: RLIMIT_CPU set low would kill it.
        ONLY_WITH_FIRST_OR_0(__NR_prlimit64, self),
        // Another process's memory, descriptors or signals, by ptrace, by
        // process_vm_*, through a pidfd, or compared with kcmp.
        DENY(__NR_ptrace),
        DENY(__NR_process_vm_readv),
        DENY(__NR_process_vm_writev),
#ifdef __NR_pidfd_open
        DENY(__NR_pidfd_open),
#endif
#ifdef __NR_pidfd_getfd
        DENY(__NR_pidfd_getfd),
#endif
#ifdef __NR_pidfd_send_signal
        DENY(__NR_pidfd_send_signal),
#endif
        DENY(__NR_kcmp),
#ifdef __NR_clone3
        // clone3 passes its flags in memory a filter cannot read: ENOSYS makes the C library use clone.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
#endif
        // clone: threads (CLONE_THREAD) yes, new processes no.
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])), .filter = filter };
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0);
}
#else
int lunette_worker_seccomp(void) { return -2; }
#endif

#else
int lunette_worker_no_new_privs(void) { return -2; }
int lunette_worker_seccomp(void) { return -2; }
#endif

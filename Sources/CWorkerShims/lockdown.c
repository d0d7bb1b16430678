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
        // What no worker needs and a taken-over one running as a privileged
        // user could turn on the host or the machine: io_uring (its
        // operations, opening files among them, never pass this filter),
        // eBPF, perf events on other processes, mounts and namespaces,
        // reboots and kernel modules, the clock, keys, priorities.
#ifdef __NR_io_uring_setup
        DENY(__NR_io_uring_setup),
#endif
#ifdef __NR_io_uring_enter
        DENY(__NR_io_uring_enter),
#endif
#ifdef __NR_io_uring_register
        DENY(__NR_io_uring_register),
#endif
#ifdef __NR_bpf
        DENY(__NR_bpf),
#endif
#ifdef __NR_perf_event_open
        DENY(__NR_perf_event_open),
#endif
#ifdef __NR_userfaultfd
        DENY(__NR_userfaultfd),
#endif
#ifdef __NR_mount
        DENY(__NR_mount),
#endif
#ifdef __NR_umount2
        DENY(__NR_umount2),
#endif
#ifdef __NR_pivot_root
        DENY(__NR_pivot_root),
#endif
#ifdef __NR_chroot
        DENY(__NR_chroot),
#endif
#ifdef __NR_unshare
        DENY(__NR_unshare),
#endif
#ifdef __NR_setns
        DENY(__NR_setns),
#endif
#ifdef __NR_reboot
        DENY(__NR_reboot),
#endif
#ifdef __NR_kexec_load
        DENY(__NR_kexec_load),
#endif
#ifdef __NR_kexec_file_load
        DENY(__NR_kexec_file_load),
#endif
#ifdef __NR_init_module
        DENY(__NR_init_module),
#endif
#ifdef __NR_finit_module
        DENY(__NR_finit_module),
#endif
#ifdef __NR_delete_module
        DENY(__NR_delete_module),
#endif
#ifdef __NR_swapon
        DENY(__NR_swapon),
#endif
#ifdef __NR_swapoff
        DENY(__NR_swapoff),
#endif
#ifdef __NR_settimeofday
        DENY(__NR_settimeofday),
#endif
#ifdef __NR_clock_settime
        DENY(__NR_clock_settime),
#endif
#ifdef __NR_clock_adjtime
        DENY(__NR_clock_adjtime),
#endif
#ifdef __NR_adjtimex
        DENY(__NR_adjtimex),
#endif
#ifdef __NR_sethostname
        DENY(__NR_sethostname),
#endif
#ifdef __NR_setdomainname
        DENY(__NR_setdomainname),
#endif
#ifdef __NR_acct
        DENY(__NR_acct),
#endif
#ifdef __NR_quotactl
        DENY(__NR_quotactl),
#endif
#ifdef __NR_keyctl
        DENY(__NR_keyctl),
#endif
#ifdef __NR_add_key
        DENY(__NR_add_key),
#endif
#ifdef __NR_request_key
        DENY(__NR_request_key),
#endif
#ifdef __NR_fanotify_init
        DENY(__NR_fanotify_init),
#endif
#ifdef __NR_name_to_handle_at
        DENY(__NR_name_to_handle_at),
#endif
#ifdef __NR_setpriority
        DENY(__NR_setpriority),
#endif
#ifdef __NR_iopl
        DENY(__NR_iopl),
#endif
#ifdef __NR_ioperm
        DENY(__NR_ioperm),
#endif
        // Scheduling of itself only (pid 0 or its own).
        ONLY_WITH_FIRST_OR_0(__NR_sched_setaffinity, self),
        ONLY_WITH_FIRST_OR_0(__NR_sched_setscheduler, self),
        ONLY_WITH_FIRST_OR_0(__NR_sched_setparam, self),
#ifdef __NR_sched_setattr
        ONLY_WITH_FIRST_OR_0(__NR_sched_setattr, self),
#endif
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

// A host's worker follows its caller onto the caller's processor
// (BundleWorkers.followsCaller): a call is a handoff on one processor.
#define _GNU_SOURCE
#include "CWorkerShims.h"

#if defined(__linux__)
#include <errno.h>
#include <sched.h>
#include <sys/types.h>

int lunette_current_cpu(void) {
    return sched_getcpu();
}

int lunette_pin_to_cpu(int pid, int cpu) {
    cpu_set_t set;
    if (cpu < 0) {
        // Back to the processors the caller may use.
        if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    } else {
        if (cpu >= CPU_SETSIZE) { errno = EINVAL; return -1; }
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    }
    return sched_setaffinity((pid_t)pid, sizeof(set), &set);
}
#else
int lunette_current_cpu(void) { return -1; }
int lunette_pin_to_cpu(int pid, int cpu) { (void)pid; (void)cpu; return -2; }
#endif

// A host thread's name, as `top -H`, gdb and perf show it. In C because
// pthread_setname_np is a GNU extension that the Swift Glibc module does
// not show.
#define _GNU_SOURCE
#include "CWorkerShims.h"

#include <pthread.h>
#include <string.h>

void lunette_name_this_thread(const char *name) {
#if defined(__APPLE__)
    enum { limit = 63 };
#else
    enum { limit = 15 };                                  // the kernel's 16 bytes with the NUL
#endif
    char kept[limit + 1];
    size_t length = strlen(name);
    if (length > limit) {
        length = limit;
        // Not in the middle of a UTF-8 sequence: back to its first byte.
        while (length > 0 && ((unsigned char)name[length] & 0xC0) == 0x80) length--;
    }
    memcpy(kept, name, length);
    kept[length] = 0;
#if defined(__APPLE__)
    pthread_setname_np(kept);
#elif defined(__linux__)
    pthread_setname_np(pthread_self(), kept);
#endif
}

/* Linux interfaces that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set. */
#ifndef HAUL_CLINUX_SHIM_H
#define HAUL_CLINUX_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>

/* open(2)'s O_DIRECT, whose value differs between architectures. */
static inline int haul_o_direct(void) { return O_DIRECT; }

/* Names the calling thread (at most 15 bytes show), for ps, top and perf. */
static inline void haul_name_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

#endif

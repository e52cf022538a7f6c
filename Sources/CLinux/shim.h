/* Linux interfaces that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set. */
#ifndef HAUL_CLINUX_SHIM_H
#define HAUL_CLINUX_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* open(2)'s O_DIRECT, whose value differs between architectures. */
static inline int haul_o_direct(void) { return O_DIRECT; }

/* Names the calling thread (at most 15 bytes show), for ps, top and perf. */
static inline void haul_name_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

/* renameat2(2) with RENAME_NOREPLACE: renames only when nothing is at the new name, in one step.
   Returns 0, or -1 with errno (EEXIST when the name is taken; EINVAL or ENOSYS where the file system or
   kernel lacks the flag). */
static inline int haul_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

/* pipe2(2) with O_CLOEXEC on both ends. */
static inline int haul_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

/* posix_spawn's extensions, declared here rather than by including <spawn.h>: with _GNU_SOURCE, which
   glibc wants for them, <spawn.h> brings a definition of fd_set that differs from Swift's Glibc module's,
   and the two modules cannot be used together. `actions` is a posix_spawn_file_actions_t. */
extern int posix_spawn_file_actions_addclosefrom_np(void *actions, int low);

/* posix_spawn closes every descriptor from `low` up in the child (glibc 2.34): a detached service must not
   hold its starter's pipes open (a reader of `haul add | ...` would never see the end). */
static inline int haul_spawn_close_from(void *actions, int low) {
    return posix_spawn_file_actions_addclosefrom_np(actions, low);
}

/* POSIX_SPAWN_SETSID (glibc's value, under _GNU_SOURCE in <spawn.h>): the child starts a session of its
   own (setsid), detached from the terminal. */
static inline short haul_posix_spawn_setsid(void) { return 0x80; }

/* Linux's native asynchronous I/O (io_setup(2), io_submit(2), io_getevents(2); glibc has no wrappers),
   for a direct write that the caller waits for after other work. A context takes `events` requests at once;
   0, or -1 with errno. */
static inline int haul_aio_setup(unsigned events, unsigned long *context) {
    aio_context_t created = 0;
    if (syscall(SYS_io_setup, events, &created) != 0) return -1;
    *context = (unsigned long)created;
    return 0;
}

/* Submits a pwrite of `count` bytes from `bytes` to `fd` at `offset` (the kernel copies the request; `bytes`
   must stay untouched until the completion is taken). 0 once submitted, or -1. */
static inline int haul_aio_pwrite(unsigned long context, int fd, const void *bytes, size_t count, long long offset) {
    struct iocb request;
    memset(&request, 0, sizeof request);
    request.aio_fildes = (unsigned)fd;
    request.aio_lio_opcode = IOCB_CMD_PWRITE;
    request.aio_buf = (unsigned long)bytes;
    request.aio_nbytes = count;
    request.aio_offset = offset;
    struct iocb *requests[1] = { &request };
    return syscall(SYS_io_submit, (aio_context_t)context, 1, requests) == 1 ? 0 : -1;
}

/* Waits for the one request under way in `context`: 0 with what it wrote (or its negative errno) in `result`,
   or -1 with errno when the wait itself failed. */
static inline int haul_aio_wait(unsigned long context, long long *result) {
    struct io_event event;
    for (;;) {
        long taken = syscall(SYS_io_getevents, (aio_context_t)context, 1, 1, &event, NULL);
        if (taken == 1) {
            *result = (long long)event.res;
            return 0;
        }
        if (taken < 0 && errno == EINTR) continue;
        if (taken >= 0) errno = EIO;
        return -1;
    }
}

/* Releases a context made by haul_aio_setup (nothing may be under way in it). */
static inline void haul_aio_destroy(unsigned long context) { syscall(SYS_io_destroy, (aio_context_t)context); }

#endif

/* Linux interfaces that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set. */
#ifndef HAUL_CLINUX_SHIM_H
#define HAUL_CLINUX_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>

/* open(2)'s O_DIRECT, whose value differs between architectures. */
static inline int haul_o_direct(void) { return O_DIRECT; }

/* Names the calling thread (at most 15 bytes show), for ps, top and perf. */
static inline void haul_name_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

/* Makes the calling thread SCHED_BATCH (no privilege needed): a batch thread woken on a busy core does not
   preempt what runs there. Returns 0, or an errno value. */
#include <sched.h>
static inline int haul_thread_batch(void) {
    struct sched_param param = { .sched_priority = 0 };
    return pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
}

/* Whether the calling thread is SCHED_BATCH. */
static inline int haul_thread_is_batch(void) { return sched_getscheduler(0) == SCHED_BATCH; }

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

/* fallocate(2), mode 0: allocates the blocks of [offset, offset + length) that are holes, as unwritten
   extents that read as zeros, and extends the size to cover them. Returns 0, or -1 with errno. */
static inline int haul_fallocate(int fd, long long offset, long long length) {
    return fallocate(fd, 0, offset, length);
}

/* fallocate(2) punching [offset, offset + length) out of the file: its blocks go back to the file system,
   the size stays, the range reads as zeros. Returns 0, or -1 with errno. */
static inline int haul_punch_hole(int fd, long long offset, long long length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}

/* The birth time of `path` in `dirfd` (of `dirfd` itself when `path` is ""), not through a link: statx(2)'s
   btime. Returns 0 with *seconds and *nanoseconds set, or -1 when the file system keeps none (or statx fails). */
#include <sys/stat.h>
static inline int haul_birth_time(int dirfd, const char *path, long long *seconds, unsigned *nanoseconds) {
    struct statx info;
    int flags = AT_SYMLINK_NOFOLLOW | (path[0] == 0 ? AT_EMPTY_PATH : 0);
    if (statx(dirfd, path, flags, STATX_BTIME, &info) != 0 || !(info.stx_mask & STATX_BTIME)) return -1;
    *seconds = info.stx_btime.tv_sec;
    *nanoseconds = info.stx_btime.tv_nsec;
    return 0;
}

/* How many CPUs the calling thread may run on (its affinity mask, which taskset and cgroups' cpusets
   narrow); at least 1. */
static inline int haul_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int count = CPU_COUNT(&set);
    return count > 0 ? count : 1;
}

#endif

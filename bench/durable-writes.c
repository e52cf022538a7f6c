// bench/durable-writes.c: the disk's part of the small-file scenario alone, with no network.
//
//     durable-writes MODE OUTDIR FILE...
//
// Copies each FILE (from the page cache: bench/run's sources were just generated) to OUTDIR/NAME.part and
// renames it to OUTDIR/NAME, as a downloader does, in one of these ways:
//
//     unsynced        write, rename: what curl, wget2 and aria2c leave (durable when the kernel writes back)
//     checked         unsynced, with every step haul --no-sync takes around the write: the directory opened
//                     for the file, the name looked up, NAME.part created exclusively and locked, its state
//                     file looked for, a second descriptor with O_DIRECT through /proc/self/fd, both
//                     checked to be the same inode, the server's time set, the part looked up again before
//                     an exclusive rename (RENAME_NOREPLACE): what the trust checks cost beside a plain write
//     per-file        each file written with O_DIRECT, fsynced, renamed, and the directory fsynced: the
//                     contract's promise for each file as it finishes, as haul -j 8 keeps it
//     grouped         each file written through the page cache with its writeback started at once
//                     (sync_file_range) and handed to one committer thread, which commits whatever has
//                     come in the meantime together (fsync each, rename each, one fsync of the directory):
//                     a group commit, taken off the writers
//
// Every mode writes from 8 threads (as the 8 downloads at once of the scenario).
//
// bench/run compiles it (cc -O2) and times it beside haul and the peers, in the same rounds and fresh
// directories, so that what durability costs on this disk reads against the peers' whole runs.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int dirfd_out;
static const char *outdir;
static char **sources;
static int count;
static int next_index;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static enum { UNSYNCED, CHECKED, PER_FILE, GROUPED } mode;

// Grouped: written files waiting for the committer (guarded by `lock`).
static int *pending_fd;
static char (*pending_name)[512];
static int pending;
static int writers_left = 8;

static const char *base(const char *p) { const char *s = strrchr(p, '/'); return s ? s + 1 : p; }

static char *readall(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(path); exit(1); }
    struct stat st; fstat(fd, &st);
    char *buf; if (posix_memalign((void **)&buf, 4096, st.st_size + 4096)) exit(1);
    size_t got = 0; while (got < (size_t)st.st_size) { ssize_t n = read(fd, buf + got, st.st_size - got); if (n <= 0) exit(1); got += n; }
    close(fd); *len = got; return buf;
}

// Writes data[from..<to) to fd at offset `from`.
static void write_range(int fd, const char *data, size_t from, size_t to) {
    while (from < to) { ssize_t n = pwrite(fd, data + from, to - from, from); if (n <= 0) { perror("pwrite"); exit(1); } from += n; }
}

static int write_part(const char *source, char *name, size_t cap, int direct) {
    size_t len; char *data = readall(source, &len);
    snprintf(name, cap, "%s", base(source));
    char part[520]; snprintf(part, sizeof part, "%s.part", name);
    int fd = openat(dirfd_out, part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0) { perror(part); exit(1); }
    write_range(fd, data, 0, len);
    free(data); return fd;
}

static void place(const char *name) {
    char part[520]; snprintf(part, sizeof part, "%s.part", name);
    if (renameat(dirfd_out, part, dirfd_out, name)) { perror("rename"); exit(1); }
}

// haul's steps for one file with --no-sync (OutputDirectory, Claim, PartFile, Downloader.finish), unsynced.
static void write_checked(const char *source) {
    size_t len; char *data = readall(source, &len);
    const char *name = base(source);
    char part[520], state[530], proc[64];
    snprintf(part, sizeof part, "%s.part", name);
    snprintf(state, sizeof state, "%s.part.json", name);
    struct stat st, seen;
    int dir = open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || fstat(dir, &st)) { perror("directory"); exit(1); }
    if (fstatat(dir, name, &seen, AT_SYMLINK_NOFOLLOW) == 0) { fprintf(stderr, "%s exists\n", name); exit(1); }
    int fd = openat(dir, part, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) || fstat(fd, &st)) { perror(part); exit(1); }
    int probe = openat(dir, state, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (probe >= 0) close(probe);
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int direct = open(proc, O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (direct < 0 || fstat(direct, &seen) || seen.st_ino != st.st_ino) { perror(proc); exit(1); }
    size_t whole = len / 4096 * 4096;
    write_range(direct, data, 0, whole);
    write_range(fd, data, whole, len);
    struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    futimens(fd, times);
    if (fstatat(dir, part, &seen, AT_SYMLINK_NOFOLLOW) || seen.st_ino != st.st_ino) { perror(part); exit(1); }
    if (renameat2(dir, part, dir, name, RENAME_NOREPLACE)) { perror("rename"); exit(1); }
    close(direct); close(fd); close(dir); free(data);
}

static void *writer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock); int i = next_index++; pthread_mutex_unlock(&lock);
        if (i >= count) break;
        if (mode == CHECKED) { write_checked(sources[i]); continue; }
        char name[512];
        int fd = write_part(sources[i], name, sizeof name, mode == PER_FILE);
        switch (mode) {
        case UNSYNCED: place(name); close(fd); break;
        case CHECKED: break;  // whole in write_checked, above
        case PER_FILE: fsync(fd); place(name); fsync(dirfd_out); close(fd); break;
        case GROUPED:
            sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
            pthread_mutex_lock(&lock);
            pending_fd[pending] = fd; memcpy(pending_name[pending], name, sizeof name); pending++;
            pthread_cond_broadcast(&changed);
            pthread_mutex_unlock(&lock);
            break;
        }
    }
    pthread_mutex_lock(&lock); writers_left--; pthread_cond_broadcast(&changed); pthread_mutex_unlock(&lock);
    return NULL;
}

static void *committer(void *arg) {
    (void)arg;
    int *fds = malloc(sizeof(int) * count); char (*names)[512] = malloc(512 * (size_t)count);
    for (;;) {
        pthread_mutex_lock(&lock);
        while (pending == 0 && writers_left > 0) pthread_cond_wait(&changed, &lock);
        int n = pending;
        memcpy(fds, pending_fd, sizeof(int) * n); memcpy(names, pending_name, 512 * (size_t)n);
        pending = 0;
        int done = writers_left == 0 && n == 0;
        pthread_mutex_unlock(&lock);
        if (done) break;
        for (int j = 0; j < n; j++) fsync(fds[j]);
        for (int j = 0; j < n; j++) { place(names[j]); close(fds[j]); }
        fsync(dirfd_out);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: durable-writes unsynced|checked|per-file|grouped OUTDIR FILE...\n"); return 2; }
    if (!strcmp(argv[1], "unsynced")) mode = UNSYNCED;
    else if (!strcmp(argv[1], "checked")) mode = CHECKED;
    else if (!strcmp(argv[1], "per-file")) mode = PER_FILE;
    else if (!strcmp(argv[1], "grouped")) mode = GROUPED;
    else { fprintf(stderr, "unknown mode %s\n", argv[1]); return 2; }
    mkdir(argv[2], 0755);
    outdir = argv[2];
    dirfd_out = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd_out < 0) { perror(argv[2]); return 1; }
    sources = argv + 3; count = argc - 3;
    pending_fd = malloc(sizeof(int) * count); pending_name = malloc(512 * (size_t)count);
    pthread_t commit, t[8];
    if (mode == GROUPED) pthread_create(&commit, NULL, committer, NULL);
    for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, writer, NULL);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    if (mode == GROUPED) pthread_join(commit, NULL);
    return 0;
}

// bench/durable-writes.c: the disk's part of the small-file scenario alone, with no network.
//
//     durable-writes MODE OUTDIR FILE...
//
// Copies each FILE (from the page cache: bench/run's sources were just generated) to OUTDIR/NAME.part and
// renames it to OUTDIR/NAME, as a downloader does, in one of these ways:
//
//     unsynced        write, rename: what curl, wget2 and aria2c leave (durable when the kernel writes back)
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
#include <sys/stat.h>
#include <unistd.h>

static int dirfd_out;
static char **sources;
static int count;
static int next_index;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static enum { UNSYNCED, PER_FILE, GROUPED } mode;

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

static int write_part(const char *source, char *name, size_t cap, int direct) {
    size_t len; char *data = readall(source, &len);
    snprintf(name, cap, "%s", base(source));
    char part[520]; snprintf(part, sizeof part, "%s.part", name);
    int fd = openat(dirfd_out, part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
    if (fd < 0) { perror(part); exit(1); }
    size_t off = 0; while (off < len) { ssize_t n = pwrite(fd, data + off, len - off, off); if (n <= 0) { perror("pwrite"); exit(1); } off += n; }
    free(data); return fd;
}

static void place(const char *name) {
    char part[520]; snprintf(part, sizeof part, "%s.part", name);
    if (renameat(dirfd_out, part, dirfd_out, name)) { perror("rename"); exit(1); }
}

static void *writer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock); int i = next_index++; pthread_mutex_unlock(&lock);
        if (i >= count) break;
        char name[512];
        int fd = write_part(sources[i], name, sizeof name, mode == PER_FILE);
        switch (mode) {
        case UNSYNCED: place(name); close(fd); break;
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
    if (argc < 4) { fprintf(stderr, "usage: durable-writes unsynced|per-file|grouped OUTDIR FILE...\n"); return 2; }
    if (!strcmp(argv[1], "unsynced")) mode = UNSYNCED;
    else if (!strcmp(argv[1], "per-file")) mode = PER_FILE;
    else if (!strcmp(argv[1], "grouped")) mode = GROUPED;
    else { fprintf(stderr, "unknown mode %s\n", argv[1]); return 2; }
    mkdir(argv[2], 0755);
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

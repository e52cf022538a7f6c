// bench/lean-engine.c: haul's work on many small files with as little engine around it as C allows, to tell
// what haul's own engine (its tasks, actor, hand-offs between threads) costs beside the file steps and the
// network, which both have to pay. A reference row of bench/run, not a peer.
//
//     lean-engine [--durable] [--cacert FILE] -j N -o DIR -i URLFILE
//
// One thread drives libcurl's multi handle: N transfers at once (connections reused, HTTP/2 multiplexed as
// haul asks), each body gathered in a recycled page-aligned buffer, as haul's are. Each finished body goes to
// one of 32 worker threads (a mutex and a condition variable: one hand-off a file; enough of them to wait in
// fsyncs at once, as haul's I/O threads do), which takes the steps haul takes for a file (OutputDirectory,
// Claim, PartFile, Downloader.finish), on the output directory's descriptor: under a process lock, the name looked up and NAME.part created exclusively (O_NOFOLLOW), then
// flock and fstat; the state file looked for; the whole pages written with O_DIRECT (the descriptor's flag
// switched, as haul does for a file written in one go) and the rest buffered; the server's time set; the part
// looked up again and checked to be the same inode; renameat2 with RENAME_NOREPLACE under the lock.
// --durable adds what haul's default adds: the part fsynced before the rename, and the directory fsynced after
// it, once for all the renames made while another thread's directory fsync ran (a group commit).
//
// Bodies of up to 1 MiB (the small-file sets); a larger one is an error. Exit 0, or 2 (usage), 3 (a file
// step failed), 4 (a transfer failed), with a line on stderr.
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum { WORKERS = 32, CAPACITY = 1 << 20, PAGE = 4096 };

typedef struct Body {
    char *data;
    size_t length;
    char name[256];
    long mtime;
    struct Body *next;
} Body;

static int directory, durable;

// Buffers of ended transfers serve the next ones (haul keeps up to 8 a process; here up to 64).
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pool[64];
static int pooled;

static char *take_buffer(void) {
    char *buffer = NULL;
    pthread_mutex_lock(&pool_lock);
    if (pooled) buffer = pool[--pooled];
    pthread_mutex_unlock(&pool_lock);
    if (!buffer && posix_memalign((void **)&buffer, PAGE, CAPACITY)) { perror("posix_memalign"); exit(3); }
    return buffer;
}

static void give_buffer(char *buffer) {
    pthread_mutex_lock(&pool_lock);
    if (pooled < 64) { pool[pooled++] = buffer; buffer = NULL; }
    pthread_mutex_unlock(&pool_lock);
    free(buffer);
}

static size_t on_body(char *bytes, size_t size, size_t count, void *user) {
    Body *body = user;
    size_t added = size * count;
    if (!body->data) body->data = take_buffer();
    if (body->length + added > CAPACITY) { fprintf(stderr, "lean-engine: %s: over 1 MiB\n", body->name); exit(4); }
    memcpy(body->data + body->length, bytes, added);
    body->length += added;
    return added;
}

static void fail(const char *what, const char *name) {
    fprintf(stderr, "lean-engine: %s %s: %m\n", what, name);
    exit(3);
}

// The directory's group commit: a caller returns once a directory fsync that began after its rename ended.
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t synced = PTHREAD_COND_INITIALIZER;
static long requested, completed;
static int syncing;

static void sync_directory(void) {
    pthread_mutex_lock(&sync_lock);
    long mine = ++requested;
    while (completed < mine) {
        if (syncing) { pthread_cond_wait(&synced, &sync_lock); continue; }
        syncing = 1;
        long covered = requested;
        pthread_mutex_unlock(&sync_lock);
        if (fsync(directory)) fail("cannot sync", "the directory");
        pthread_mutex_lock(&sync_lock);
        syncing = 0;
        if (covered > completed) completed = covered;
        pthread_cond_broadcast(&synced);
    }
    pthread_mutex_unlock(&sync_lock);
}

static pthread_mutex_t namespace_lock = PTHREAD_MUTEX_INITIALIZER;

static void place(Body *body) {
    char part[300], state[310];
    snprintf(part, sizeof part, "%s.part", body->name);
    snprintf(state, sizeof state, "%s.json", part);
    struct stat claimed, seen;
    pthread_mutex_lock(&namespace_lock);
    if (fstatat(directory, body->name, &seen, AT_SYMLINK_NOFOLLOW) == 0) { errno = EEXIST; fail("cannot take", body->name); }
    int fd = openat(directory, part, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) || fstat(fd, &claimed)) fail("cannot claim", part);
    pthread_mutex_unlock(&namespace_lock);
    int probe = openat(directory, state, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (probe >= 0) close(probe);
    size_t whole = body->length / PAGE * PAGE;
    if (whole >= 2 * PAGE) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT)) fail("cannot switch", part);
        if (pwrite(fd, body->data, whole, 0) != (ssize_t)whole) fail("cannot write", part);
        if (fcntl(fd, F_SETFL, flags)) fail("cannot switch", part);
    } else {
        whole = 0;
    }
    if (body->length > whole
        && pwrite(fd, body->data + whole, body->length - whole, whole) != (ssize_t)(body->length - whole))
        fail("cannot write", part);
    struct timespec times[2] = {{body->mtime, 0}, {body->mtime, 0}};
    if (futimens(fd, times)) fail("cannot set the time of", part);
    if (durable && fsync(fd)) fail("cannot sync", part);
    if (fstatat(directory, part, &seen, AT_SYMLINK_NOFOLLOW) || seen.st_ino != claimed.st_ino) fail("lost", part);
    pthread_mutex_lock(&namespace_lock);
    if (renameat2(directory, part, directory, body->name, RENAME_NOREPLACE)) fail("cannot rename", part);
    pthread_mutex_unlock(&namespace_lock);
    close(fd);
    if (durable) sync_directory();
    give_buffer(body->data);
    free(body);
}

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;
static Body *head, *tail;
static int finished;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        while (!head && !finished) pthread_cond_wait(&queued, &queue_lock);
        Body *body = head;
        if (body) { head = body->next; if (!head) tail = NULL; }
        pthread_mutex_unlock(&queue_lock);
        if (!body) return NULL;
        place(body);
    }
}

static void hand_over(Body *body) {
    body->next = NULL;
    pthread_mutex_lock(&queue_lock);
    if (tail) tail->next = body; else head = body;
    tail = body;
    pthread_mutex_unlock(&queue_lock);
    pthread_cond_signal(&queued);
}

int main(int argc, char **argv) {
    const char *output = ".", *list = NULL, *cacert = NULL;
    int jobs = 8;
    static const struct option options[] = {
        {"durable", no_argument, NULL, 's'}, {"cacert", required_argument, NULL, 'k'}, {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "j:o:i:", options, NULL)) != -1;) {
        switch (c) {
        case 's': durable = 1; break;
        case 'k': cacert = optarg; break;
        case 'j': jobs = atoi(optarg); break;
        case 'o': output = optarg; break;
        case 'i': list = optarg; break;
        default: return 2;
        }
    }
    FILE *file = list ? fopen(list, "r") : NULL;
    if (!file || jobs < 1) { fprintf(stderr, "usage: lean-engine [--durable] [--cacert FILE] -j N -o DIR -i URLFILE\n"); return 2; }
    char **urls = NULL, line[4096];
    int count = 0, room = 0;
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line || *line == '#') continue;
        if (count == room) { room = room ? room * 2 : 1024; urls = realloc(urls, room * sizeof *urls); }
        urls[count++] = strdup(line);
    }
    fclose(file);
    directory = open(output, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) fail("cannot open", output);
    curl_global_init(CURL_GLOBAL_ALL);
    pthread_t workers[WORKERS];
    for (int k = 0; k < WORKERS; k++) pthread_create(&workers[k], NULL, worker, NULL);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    int next = 0, active = 0, running = 0;
    for (;;) {
        while (active < jobs && next < count) {
            CURL *easy = curl_easy_init();
            Body *body = calloc(1, sizeof *body);
            const char *slash = strrchr(urls[next], '/');
            snprintf(body->name, sizeof body->name, "%s", slash ? slash + 1 : urls[next]);
            curl_easy_setopt(easy, CURLOPT_URL, urls[next]);
            curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
            curl_easy_setopt(easy, CURLOPT_WRITEDATA, body);
            curl_easy_setopt(easy, CURLOPT_PRIVATE, body);
            curl_easy_setopt(easy, CURLOPT_FILETIME, 1L);
            curl_easy_setopt(easy, CURLOPT_FAILONERROR, 1L);
            curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
            if (cacert) curl_easy_setopt(easy, CURLOPT_CAINFO, cacert);
            curl_multi_add_handle(multi, easy);
            next++;
            active++;
        }
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            Body *body;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&body);
            if (message->data.result != CURLE_OK) {
                fprintf(stderr, "lean-engine: %s: %s\n", body->name, curl_easy_strerror(message->data.result));
                return 4;
            }
            long time = -1;
            curl_easy_getinfo(easy, CURLINFO_FILETIME, &time);
            body->mtime = time > 0 ? time : 0;
            if (!body->data) body->data = take_buffer();
            curl_multi_remove_handle(multi, easy);
            curl_easy_cleanup(easy);
            active--;
            hand_over(body);
        }
        if (active == 0 && next >= count) break;
        if (active < jobs && next < count) continue;
        curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    pthread_mutex_lock(&queue_lock);
    finished = 1;
    pthread_mutex_unlock(&queue_lock);
    pthread_cond_broadcast(&queued);
    for (int k = 0; k < WORKERS; k++) pthread_join(workers[k], NULL);
    curl_multi_cleanup(multi);
    return 0;
}

import Glibc

/// Makes renames durable with as few directory fsyncs as possible (group commit): a caller whose rename
/// happened before a running fsync of the directory began shares it; one that came later waits for the
/// next, which then covers everyone who arrived meanwhile. Eight downloads finishing together in one
/// directory cost one or two fsyncs, not eight. Blocks the calling thread (downloads run on the
/// `IOExecutor`, not the cooperative pool).
final class DirectorySync: @unchecked Sendable {
    /// A directory as the file system knows it (`st_dev`, `st_ino`): the same one whatever path led to it.
    /// Two integers, not a string of them: each download's output directory is identified when opened.
    struct Identity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    static let shared = DirectorySync()

    private struct Directory {
        /// Sync requests so far, and how many of them a finished fsync covers.
        var requested: UInt64 = 0
        var covered: UInt64 = 0
        var syncing = false
    }

    // Guarded by `mutex`. One entry per output directory, kept for the life of the process.
    private var directories: [Identity: Directory] = [:]
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let done = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Called (under the lock) when a caller starts waiting for another's fsync: for tests.
    private let didWait: (@Sendable () -> Void)?

    init(didWait: (@Sendable () -> Void)? = nil) {
        self.didWait = didWait
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(done, nil)
    }

    deinit {
        pthread_cond_destroy(done)
        pthread_mutex_destroy(mutex)
        done.deallocate()
        mutex.deallocate()
    }

    /// Returns once an fsync of the directory `directory` identifies, begun after this call, has finished:
    /// another caller's, or this one's through `fsync` (each caller's own descriptor of that directory). The
    /// whole of it is a wait (`IOExecutor.blocking`).
    func sync(_ directory: Identity, fsync: () -> Void) {
        IOExecutor.blocking { commit(directory, fsync: fsync) }
    }

    private func commit(_ directory: Identity, fsync: () -> Void) {
        pthread_mutex_lock(mutex)
        directories[directory, default: Directory()].requested += 1
        let ticket = directories[directory, default: Directory()].requested
        while directories[directory, default: Directory()].covered < ticket {
            if directories[directory, default: Directory()].syncing {
                didWait?()
                pthread_cond_wait(done, mutex)
                continue
            }
            directories[directory, default: Directory()].syncing = true
            let covering = directories[directory, default: Directory()].requested
            pthread_mutex_unlock(mutex)
            fsync()
            pthread_mutex_lock(mutex)
            directories[directory, default: Directory()].syncing = false
            directories[directory, default: Directory()].covered = covering
            // `covering` includes this caller's ticket: done. The waiters are woken after the mutex is let go,
            // or each would wake only to block on it (the state they check changed under it, so none misses
            // the change).
            pthread_mutex_unlock(mutex)
            pthread_cond_broadcast(done)
            return
        }
        pthread_mutex_unlock(mutex)
    }
}

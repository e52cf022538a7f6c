import CLinux
import Glibc

/// Threads for the tasks that block in file I/O (`pwrite`, `fsync`, `rename`): downloads run with this
/// executor as their preference, so a download waiting for the disk never holds one of the few threads
/// of Swift's cooperative pool (two on a two-core machine), and several fsyncs can share one journal
/// commit instead of queueing behind each other.
///
/// A thread is started when a job arrives and none is idle, up to `maximumThreads`; idle threads wait
/// on a condition variable (no polling) and stay for the next job. The threads are `SCHED_BATCH`: woken,
/// they wait for a free core instead of preempting the thread that woke them (see `work`).
///
/// At most `runningLimit` threads run jobs at once, besides those waiting in `blocking` (an fsync, a long
/// direct write, a wait for another process): a job that comes while that many run waits in the queue for
/// the next of them to finish, or to begin such a wait, rather than start a thread of its own. A thread per
/// job kept more threads runnable than there are cores: on two cores, 1000 files of 100 KiB at `-j 8`
/// spread over eleven threads that crowded the core the curl thread needs. With four at most (twice the
/// cores), 15 alternating rounds: `--no-sync` 166.0 -> 154.5 ms, durable 202.5 -> 194.6 ms, where the fsyncs
/// still overlap since a thread in one does not count; over HTTPS `--no-sync` 4.7% less wall, 13% less CPU.
///
/// A task that hops while it runs here (onto an actor, or back from one) is enqueued by the runtime from this
/// very thread, right before the job that hops returns: that job is kept for this thread (`Worker.next`)
/// instead of waking another, which would take it while this one went to sleep. Two context switches
/// saved per hop: a small download hops three or four times, and 1000 of them over HTTPS made 6,428 context
/// switches before, 3,412 after.
package final class IOExecutor: TaskExecutor, @unchecked Sendable {
    /// The process-wide executor of downloads.
    package static let shared = IOExecutor(maximumThreads: 64, runningLimit: 2 * Int(haul_cpu_count()))

    let maximumThreads: Int
    /// The most threads that run jobs at once outside `blocking`.
    let runningLimit: Int
    /// Threads running a job outside `blocking`, with the wakes and starts on their way to one.
    private var busy = 0
    // The queue and counters are guarded by `mutex`; `@unchecked Sendable` rests on that.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wakeup = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var threads = 0
    /// Threads waiting for a job, and wake-ups sent to them that they have not taken yet.
    private var idle = 0
    private var signalled = 0

    /// `runningLimit`: by default as many as `maximumThreads` (a thread for each job while there is room).
    package init(maximumThreads: Int, runningLimit: Int? = nil) {
        precondition(maximumThreads > 0)
        self.maximumThreads = maximumThreads
        self.runningLimit = max(1, min(runningLimit ?? maximumThreads, maximumThreads))
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wakeup, nil)
    }

    /// Whether the calling thread is scheduled as a batch thread, as this executor's are (for tests).
    static var currentThreadIsBatch: Bool { haul_thread_is_batch() != 0 }

    /// Started threads (for tests).
    var threadCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return threads
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // On one of this executor's threads with no task current: the runtime is switching the running task
        // away (`swift_task_switch` clears the current task before it enqueues, then returns to `work`), or
        // scheduling the actor it switches to. The thread is about to be free: it runs the job next. (A task
        // that creates a task or resumes another's continuation is current: that job goes to the queue, since
        // the thread may go on to block in a write or an fsync.)
        if let worker = Worker.current, worker.executor === self {
            if worker.keepsStarts {
                worker.starts.append(job)
                return
            }
            if worker.next == nil, withUnsafeCurrentTask(body: { $0 == nil }) {
                worker.next = job
                return
            }
        }
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let more = moreHands()
        // The first thread is one the executor cannot do without; a later one, the busy threads can stand in for.
        let first = more == .start && threads == 1
        pthread_mutex_unlock(mutex)
        lend(more, essential: first)
    }

    /// What a queued job gets: an idle thread woken, a thread started, or nothing yet.
    private enum Hands { case none, wake, start }

    /// Under `mutex`, with a job queued: a thread for it when fewer than `runningLimit` run, counted as
    /// running from now on.
    private func moreHands() -> Hands {
        guard busy < runningLimit else { return .none }
        if idle > signalled {
            signalled += 1
            busy += 1
            return .wake
        }
        guard threads < maximumThreads else { return .none }
        threads += 1
        busy += 1
        return .start
    }

    /// Carries out `moreHands`'s answer, after the unlock: a thread woken while the mutex is still held would
    /// only block on it again (a futex wait and a wake more per job; 16% of the context switches of 1000 small
    /// downloads).
    private func lend(_ hands: Hands, essential: Bool = false) {
        switch hands {
        case .none: return
        case .wake: pthread_cond_signal(wakeup)
        case .start:
            if essential {
                detachEssentialThread { [self] in work() }
            } else if detachThread({ [self] in work() }) != nil {
                // No room for another thread: the busy ones take the job from the queue when done with theirs.
                pthread_mutex_lock(mutex)
                threads -= 1
                busy -= 1
                pthread_mutex_unlock(mutex)
            }
        }
    }

    /// Runs `body`, which starts tasks that prefer this executor (`Task(executorPreference:)`). On one of this
    /// executor's threads, their first jobs stay on this thread and run as soon as the job running now
    /// returns, before anything else, instead of waking another thread for each: a download whose bytes are
    /// in hands its slot to the next (`DownloadManager`), whose start (the part's claim, the request handed
    /// to the curl thread) takes a few microseconds before it waits for its answer; then this thread goes on
    /// with its own file. Elsewhere `body` just runs.
    func startingHere<R>(_ body: () throws -> R) rethrows -> R {
        guard let worker = Worker.current, worker.executor === self else { return try body() }
        worker.keepsStarts = true
        defer { worker.keepsStarts = false }
        return try body()
    }

    /// Runs `body`, which waits rather than computes (an fsync, a long direct write, a lock another process
    /// holds): on one of these executors' threads, the thread stops counting against `runningLimit` while
    /// `body` runs, and a queued job gets a thread of its own. Elsewhere, or nested, `body` just runs.
    package static func blocking<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        guard let worker = Worker.current, !worker.blocked else { return try body() }
        let executor = worker.executor
        worker.blocked = true
        pthread_mutex_lock(executor.mutex)
        executor.busy -= 1
        let more = executor.head < executor.jobs.count ? executor.moreHands() : .none
        pthread_mutex_unlock(executor.mutex)
        executor.lend(more)
        defer {
            // Running again, over the limit for a moment if others took the room: the next job is left to
            // the others, or to this thread once fewer run (`work`). `errno` stays the body's, for a caller
            // that reads it after a failed fsync, poll or flock.
            let code = errno
            pthread_mutex_lock(executor.mutex)
            executor.busy += 1
            pthread_mutex_unlock(executor.mutex)
            worker.blocked = false
            errno = code
        }
        return try body()
    }

    /// Jobs queued and threads counted as running (for tests).
    var load: (queued: Int, running: Int) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (jobs.count - head, busy)
    }

    /// One thread's own state, reached through a thread-specific key.
    private final class Worker {
        unowned let executor: IOExecutor
        /// The job enqueued by a hop of the job running now: run as soon as that one returns.
        var next: UnownedJob?
        /// Set by `startingHere` while its body runs.
        var keepsStarts = false
        /// Inside `blocking`.
        var blocked = false
        /// The first jobs of tasks started in `startingHere`: run as soon as the job running now returns,
        /// before `next`.
        var starts: [UnownedJob] = []

        init(_ executor: IOExecutor) {
            self.executor = executor
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            precondition(pthread_key_create(&key, nil) == 0, "cannot create the I/O threads' key")
            return key
        }()

        /// This thread's, when it is one of an executor's.
        static var current: Worker? {
            pthread_getspecific(key).map { Unmanaged<Worker>.fromOpaque($0).takeUnretainedValue() }
        }

        /// Makes `self` this thread's for good (the threads never end).
        func install() {
            pthread_setspecific(Self.key, Unmanaged.passRetained(self).toOpaque())
        }
    }

    private func work() -> Never {
        haul_name_thread("haul-io")
        // Batch scheduling: a thread woken here (a download's bytes are in, its file waits) does not preempt
        // what runs on that core, which is often the curl thread that woke it and still has every other
        // transfer's bytes to take in. It runs on a free core at once, or when the running thread blocks or its
        // slice ends. 1000 small files, 8 at once: the curl thread was preempted ~700 times a run before;
        // CPU -6% over HTTP and -8% over HTTPS, wall -6 to -13%; the 1 GiB file no slower (bench/, alternating
        // runs). Needs no privilege; where it is refused the thread stays as it was.
        _ = haul_thread_batch()
        let worker = Worker(self)
        worker.install()
        while true {
            pthread_mutex_lock(mutex)
            // Idle while there is nothing to do, or while more than `runningLimit` run (threads back from
            // `blocking`): the others take the queue's jobs meanwhile. A wake (`moreHands`) counted this
            // thread as running already; one without a signal counts it here.
            while head == jobs.count || busy > runningLimit {
                busy -= 1
                idle += 1
                pthread_cond_wait(wakeup, mutex)
                idle -= 1
                if signalled > 0 { signalled -= 1 } else { busy += 1 }
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            pthread_mutex_unlock(mutex)
            job.runSynchronously(on: asUnownedTaskExecutor())
            while true {
                if !worker.starts.isEmpty {
                    worker.starts.removeFirst().runSynchronously(on: asUnownedTaskExecutor())
                    continue
                }
                guard let next = worker.next else { break }
                worker.next = nil
                next.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }
}

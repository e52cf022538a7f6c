import CLinux
import Glibc

/// Threads for the tasks that block in file I/O (`pwrite`, `fsync`, `rename`): downloads run with this
/// executor as their preference, so a download waiting for the disk never holds one of the few threads
/// of Swift's cooperative pool (two on a two-core machine), and several fsyncs can share one journal
/// commit instead of queueing behind each other.
///
/// A thread is started when a job arrives and none is idle, up to `maximumThreads`; idle threads wait
/// on a condition variable (no polling) and stay for the next job.
package final class IOExecutor: TaskExecutor, @unchecked Sendable {
    /// The process-wide executor of downloads.
    package static let shared = IOExecutor(maximumThreads: 64)

    package let maximumThreads: Int
    // The queue and counters are guarded by `mutex`; `@unchecked Sendable` rests on that.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wakeup = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var threads = 0
    /// Threads waiting for a job, and wake-ups sent to them that they have not taken yet.
    private var idle = 0
    private var signalled = 0

    package init(maximumThreads: Int) {
        precondition(maximumThreads > 0)
        self.maximumThreads = maximumThreads
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wakeup, nil)
    }

    /// Started threads (for tests).
    package var threadCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return threads
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        jobs.append(job)
        var signal = false
        var spawn = false
        if idle > signalled {
            signalled += 1
            signal = true
        } else if threads < maximumThreads {
            threads += 1
            spawn = true
        }
        pthread_mutex_unlock(mutex)
        // After the unlock: a thread woken while the mutex is still held would only block on it again (a
        // futex wait and a wake more per job; 16% of the context switches of 1000 small downloads).
        if signal { pthread_cond_signal(wakeup) }
        if spawn { startThread() }
    }

    private func startThread() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let executor = Unmanaged<IOExecutor>.fromOpaque(context!).takeRetainedValue()
            executor.work()
        }, context)
        guard result == 0 else { fatalError("cannot start an I/O thread: \(String(cString: strerror(result)))") }
        pthread_detach(thread)
    }

    private func work() -> Never {
        haul_name_thread("haul-io")
        while true {
            pthread_mutex_lock(mutex)
            while head == jobs.count {
                idle += 1
                pthread_cond_wait(wakeup, mutex)
                idle -= 1
                if signalled > 0 { signalled -= 1 }
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            pthread_mutex_unlock(mutex)
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

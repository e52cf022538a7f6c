import Glibc

/// The limit on open files (RLIMIT_NOFILE). Most systems start programs with a soft limit of 1024 under a hard
/// limit hundreds of times that (systemd: 1024 and 524288), a default meant for programs that still use
/// `select`. A download holds about five descriptors and one per connection, so `-j 64 -s 16` needs more
/// than 1024; and past the limit it is not only downloads that fail ("Too many open files"): libdispatch,
/// under Swift's runtime, ends the process (SIGILL) when it cannot open the file of /proc it reads to watch
/// its threads. So haul raises its soft limit to the hard one when it starts, as Go programs do. What it
/// starts (hooks, the service) inherits the raised limit.
package enum OpenFilesLimit {
    /// Raises the soft limit to the hard one (at most 2^20, the kernel's usual ceiling); where it cannot, the
    /// limit stays as it was.
    package static func raise() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = min(limit.rlim_max, 1 << 20)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = wanted
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The soft limit in force (2^20 when it cannot be read or is larger).
    static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1 << 20 }
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// How many descriptors the downloads of a process whose limit is `limit` may hold together: the limit
    /// less what the process needs besides them (its standard files, curl's and the runtime's, the service's
    /// database, socket and clients, the runtime's reads of /proc, a hook's pipe): 64 of a large limit, 20 of
    /// a small one (haul with one download holds about 20). Never less than one download's with one
    /// connection, which runs whatever the limit.
    static func downloadBudget(limit: Int = current) -> Int {
        let reserve = max(20, min(64, limit / 4))
        return max(descriptors(segments: 1), limit - reserve)
    }

    /// What a download with `segments` connections holds: its output directory, its part (twice, with direct
    /// I/O), its journal, a state file being replaced, and a socket per connection.
    static func descriptors(segments: Int) -> Int {
        perDownload + max(1, segments)
    }

    /// What a download holds besides its sockets.
    static let perDownload = 5
}

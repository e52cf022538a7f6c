import HaulCore

/// The store's side of the event pipeline: takes the manager's events from `backlog` in batches and hands
/// each batch to `record` (one transaction), until the backlog is finished.
///
/// A group commit with a wait, as PostgreSQL's `commit_delay`: while events keep coming (a batch arrives
/// within `delay` of the last transaction's end), the first event of a batch waits `delay` for the events
/// that follow it, so that one transaction takes them all. A lone event (a command, a download after a
/// quiet spell) is written at once. Each transaction costs the service about 100 us of CPU and its
/// commit's writes and locks, whatever it holds: 1000 small files took about 1000 transactions without
/// the wait; with 2 ms of it, from `haul add` to the last file named 428 -> 384 ms and the service's CPU
/// 510 -> 440 ms (10 alternating rounds). Files are named once the store holds their `started`
/// (`Service.holdNamesUntilStored`), so the wait is that much later naming, off the downloads' slots; a
/// longer one (10 ms) held enough downloads back from their names to slow the whole.
struct StoreCommits<C: Clock> where C.Duration == Duration {
    static var delay: Duration { .milliseconds(2) }

    let backlog: EventBacklog
    let clock: C

    /// Runs until the backlog is finished and empty; `record` gets each batch, in order.
    func run(_ record: ([ManagerEvent]) async -> Void) async {
        var lastEnd: C.Instant?
        while var events = await backlog.next() {
            if let lastEnd, lastEnd.duration(to: clock.now) < Self.delay {
                // Events keep coming: wait for the rest of them (an ended wait, cancelled, takes what is there).
                try? await clock.sleep(for: Self.delay)
                events += backlog.takeWaiting()
            }
            await record(events)
            lastEnd = clock.now
        }
    }
}

import HaulCore

/// The service's event pipeline after the manager: takes the manager's events from `backlog` in batches,
/// hands each batch to `apply` as it is taken (the roster and the attached clients), and each group of
/// batches to `record` (one transaction of the store), in order, until the backlog is finished.
///
/// A group commit with a wait, as PostgreSQL's `commit_delay`: while events keep coming (a batch arrives
/// within `delay` of the last transaction's end), the first batch of a transaction waits `delay` for the
/// events that follow it, so that one transaction takes them all. A lone event (a command, a download after a
/// quiet spell) is written at once. Each transaction costs the service about 100 us of CPU and its
/// commit's writes and locks, whatever it holds: 1000 small files took about 1000 transactions without
/// the wait; with 2 ms of it, from `haul add` to the last file named 428 -> 384 ms and the service's CPU
/// 510 -> 440 ms (10 alternating rounds). Files are named once the store holds their `started`
/// (`Service.holdNamesUntilStored`), so the wait is that much later naming, off the downloads' slots; a
/// longer one (10 ms) held enough downloads back from their names to slow the whole.
///
/// One task for both: the roster and the store each had a task of their own, and a batch woke both (one
/// wake of an I/O thread and a hop a batch more): with one, 1000 small files from `haul add` to the last
/// named took 276 ms against 302 and the service 405 ms of CPU against 440 (16 alternating rounds), and on a
/// terminal the last file came at 365 ms against 415 (8 rounds). What it costs: the roster (and the screen)
/// gets the events that come while a transaction is written, or during its wait, when the transaction ends
/// (2 ms and a transaction later at most, but as late as a stalled disk holds the store's write).
struct StoreCommits<C: Clock> where C.Duration == Duration {
    static var delay: Duration { .milliseconds(2) }

    let backlog: EventBacklog
    let clock: C

    /// Runs until the backlog is finished and empty: `apply` gets each batch as it is taken, `record` each
    /// transaction's events after `apply` has had them, both in order.
    func run(applying apply: ([ManagerEvent]) async -> Void = { _ in },
             _ record: ([ManagerEvent]) async -> Void) async {
        var lastEnd: C.Instant?
        while var events = await backlog.next() {
            await apply(events)
            if let lastEnd, lastEnd.duration(to: clock.now) < Self.delay {
                // Events keep coming: wait for the rest of them (an ended wait, cancelled, takes what is there).
                try? await clock.sleep(for: Self.delay)
                let more = backlog.takeWaiting()
                if !more.isEmpty {
                    await apply(more)
                    events += more
                }
            }
            await record(events)
            lastEnd = clock.now
        }
    }
}

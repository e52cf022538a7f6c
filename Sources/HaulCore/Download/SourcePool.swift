import NIOConcurrencyHelpers

/// The sources of one download from several, shared by its connections (the segment workers) and the loop
/// that reports: a `SourceSpread` under one lock, with each source's first error, which connection uses
/// which source, and when the sources were last reported. Lives as long as the download (across its
/// attempts): a dropped source stays dropped, a retry asks the failed ones again (`retry`).
///
/// A download with one source has none: nothing here runs for it.
final class SourcePool: Sendable {
    private struct State {
        var spread: SourceSpread
        /// Each source's failure, for the download's error when every source failed.
        var errors: [Int: HaulError] = [:]
        /// The source each connection fetches from now.
        var using: [Int: Int] = [:]
        /// The source the attempt's first request goes to (the probe's, or the one connection's).
        var primary = 0
        /// A source changed state since the last report.
        var changed = true
        /// Bytes and rates as last reported: a report is due at most once a second while bytes come.
        var meters: [RateMeter]
        var lastReport: Double?
    }

    private let state: NIOLockedValueBox<State>

    /// How many sources there are, dropped and failed ones included (more once `add(urls:)` ran).
    var count: Int { state.withLockedValue { $0.spread.sources.count } }

    init(urls: [String], perServer: Int) {
        var spread = SourceSpread(urls: urls, perServer: perServer)
        // The first source is what the part is checked against (its state's validators are the first's).
        spread.agreed(0, etag: nil, lastModified: nil)
        state = NIOLockedValueBox(State(spread: spread, meters: Array(repeating: RateMeter(), count: urls.count)))
    }

    /// A pool for `job`, nil when it has one source.
    static func of(_ job: DownloadJob) -> SourcePool? {
        job.sources.count > 1
            ? SourcePool(urls: job.sources.map(\.url), perServer: job.connectionsPerServer) : nil
    }

    /// Sources found after the probe (`Link: rel=duplicate`), after those there are: before the segments are
    /// assigned, which then spread over them as over the job's own.
    func add(urls: [String]) {
        state.withLockedValue { state in
            for url in urls {
                state.spread.append(url: url)
                state.meters.append(RateMeter())
            }
            state.changed = true
        }
    }

    func url(of source: Int) -> String {
        state.withLockedValue { $0.spread.sources[source].url }
    }

    /// The source of the attempt's first request.
    var primary: Int { state.withLockedValue { $0.primary } }

    /// Whether `source`'s first answer still has to be checked against the file.
    func needsAgreement(_ source: Int) -> Bool {
        state.withLockedValue { !$0.spread.sources[source].agreed }
    }

    /// `source`'s validators (learned from its first answer), for `If-Range`.
    func validators(of source: Int) -> (etag: String?, lastModified: String?) {
        state.withLockedValue { ($0.spread.sources[source].etag, $0.spread.sources[source].lastModified) }
    }

    func isUsable(_ source: Int) -> Bool {
        state.withLockedValue { $0.spread.sources[source].usable }
    }

    var anyUsable: Bool { state.withLockedValue { $0.spread.anyUsable } }

    /// The sources of `workers` connections for the segments, worker 0 (the probe's connection) on the primary
    /// one; nil for a worker that stands by.
    func assign(workers: Int) -> [Int?] {
        state.withLockedValue { state in
            state.changed = true
            // The round robin starts at the primary source: the spread is asked in that order.
            var assigned = state.spread.assign(workers: workers, from: state.primary)
            for (worker, source) in assigned.enumerated() { state.using[worker] = source }
            if assigned.isEmpty { assigned = [state.primary] }
            return assigned
        }
    }

    /// `worker` leaves `source` for a usable one with room (nil: none; it stops).
    func move(_ worker: Int, from source: Int?) -> Int? {
        state.withLockedValue { state in
            if let source { state.spread.release(source) }
            let next = state.spread.take()
            state.using[worker] = next
            state.changed = true
            return next
        }
    }

    /// The one connection of a download over one asks `source` (`true`), or has stopped (`false`).
    func connection(to source: Int, _ open: Bool) {
        state.withLockedValue { state in
            if open { state.spread.use(source) } else { state.spread.release(source) }
            state.changed = true
        }
    }

    /// `worker` is done with `source` (it stops).
    func leave(_ worker: Int, from source: Int) {
        state.withLockedValue { state in
            state.spread.release(source)
            state.using[worker] = nil
            state.changed = true
        }
    }

    /// The workers fetching from `source` now.
    func workers(using source: Int) -> [Int] {
        state.withLockedValue { state in state.using.filter { $0.value == source }.map(\.key) }
    }

    /// `source` failed; false when that is not news (it had failed, or was dropped).
    func fail(_ source: Int, _ error: HaulError) -> Bool {
        state.withLockedValue { state in
            guard state.spread.fail(source, reason: error) else { return false }
            if state.errors[source] == nil { state.errors[source] = error }
            state.changed = true
            return true
        }
    }

    /// `source` serves another file; false when it was dropped already.
    func drop(_ source: Int, _ mismatch: SourceMismatch) -> Bool {
        state.withLockedValue { state in
            guard state.spread.drop(source, reason: mismatch) else { return false }
            state.changed = true
            return true
        }
    }

    func agreed(_ source: Int, etag: String?, lastModified: String?) {
        state.withLockedValue { $0.spread.agreed(source, etag: etag, lastModified: lastModified) }
    }

    /// The attempt's first request goes to the next usable source after the primary one (which failed);
    /// nil when none is left.
    func nextPrimary() -> Int? {
        state.withLockedValue { state in
            guard let next = state.spread.firstUsable(from: state.primary) else { return nil }
            state.primary = next
            state.changed = true
            return next
        }
    }

    /// A retry: every source but the dropped ones may be asked again, the first of them first.
    func retry() {
        state.withLockedValue { state in
            state.spread.retry()
            state.errors = [:]
            state.using = [:]
            // The part's validators are the primary source's: it stays first while it may be asked.
            if !state.spread.sources[state.primary].usable { state.primary = state.spread.firstUsable() ?? 0 }
            state.changed = true
        }
    }

    /// `retry`, and the sources reported.
    func retry(events: (DownloadEvent) -> Void) {
        retry()
        events(.sources(statusesNow()))
    }

    /// The error a download that every source failed ends with: the first source's, else the first that failed.
    func failure(or fallback: HaulError) -> HaulError {
        state.withLockedValue { state in state.errors[0] ?? state.errors.min { $0.key < $1.key }?.value ?? fallback }
    }

    func add(bytes: Int64, from source: Int) {
        state.withLockedValue { $0.spread.add(bytes: bytes, from: source) }
    }

    /// The sources' statuses now, rates as last measured (a change of state, over one connection).
    func statusesNow() -> [SourceStatus] {
        state.withLockedValue { state in
            state.changed = false
            return state.spread.statuses(rates: state.meters.map(\.bytesPerSecond))
        }
    }

    /// The sources' statuses when a report is due at `seconds` (on the download's clock, from any origin): a
    /// source changed state, or bytes came and a second has passed since the last report; nil otherwise.
    func report(at seconds: Double, force: Bool = false) -> [SourceStatus]? {
        state.withLockedValue { state in
            guard force || state.changed || state.lastReport.map({ seconds - $0 >= 1 }) ?? true else { return nil }
            var rates: [Double] = []
            for index in state.meters.indices {
                state.meters[index].record(bytes: state.spread.sources[index].bytes, at: seconds)
                rates.append(state.meters[index].bytesPerSecond)
            }
            state.changed = false
            state.lastReport = seconds
            return state.spread.statuses(rates: rates)
        }
    }
}

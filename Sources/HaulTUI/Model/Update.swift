import HaulCore

/// The one place the state changes: applies `message` to `state` and returns what the loop must do.
/// Pure: no I/O, no time, no tasks.
///
/// The clock follows the rows: after every message it should run exactly while some download is queued
/// or running and the user has not asked to stop it, so `.startClock`/`.stopClock` are emitted on the
/// edges. Cancel All stops it at once, before the manager confirms anything.
func update(_ state: inout AppState, _ message: Message) -> [Effect] {
    var effects: [Effect]
    switch message {
    case .started(let urls):
        // One effect for them all: a thousand URLs are one request to the service, not a thousand (each
        // answered once stored), and each download sees the others of its host queued beside it.
        effects = urls.isEmpty ? [] : [.download(urls: urls, segments: state.defaultSegments)]
        if state.files.server != nil {
            state.files.listing = .loading
            effects.append(.loadFiles)
        }
    case .key(let key):
        if state.quitting { return [] }
        effects = press(key, in: &state)
    case .resize(let size):
        state.size = size
        // A picture is fitted to the screen: fit it again.
        if case .picture(let path)? = state.overlay { effects = [.showPicture(path: path)] } else { effects = [] }
    case .tick:
        effects = tick(&state)
    case .manager(let event):
        effects = receive(event, in: &state)
    case .interrupt:
        if state.quitting { return [] }
        effects = quit(&state, pausing: state.pausesOnInterrupt)
    case .service(let change):
        effects = state.quitting ? [] : apply(change, to: &state)
    case .limitLoaded, .scheduleLoaded, .notice, .filesLoaded, .statusLoaded, .pictureLoaded, .pictureDescribed:
        load(message, into: &state)
        effects = []
    }
    if case .picture? = state.overlay {} else {
        state.picture = nil
        state.livePicture = nil
    }
    return effects + clockEdges(&state)
}

/// A key: the footer's message goes, and the key does what the table says in the view or overlay open.
private func press(_ key: Key, in state: inout AppState) -> [Effect] {
    state.message = nil
    // A key reads the list as it is shown.
    state.refreshListing()
    guard state.serviceLost else { return handle(key, in: &state) }
    // Nothing can reach the service now: a key that would ask it for something changes nothing, and
    // says so (what only this screen does, such as moving, the help or `q`, still works).
    let before = state
    let effects = handle(key, in: &state)
    guard effects.contains(where: \.goesToTheManager) else { return effects }
    state = before
    state.message = AppState.notSent
    return []
}

/// A second of the clock: the screen's time moves on, and what it shows as of that time.
private func tick(_ state: inout AppState) -> [Effect] {
    if state.clockRunning { state.elapsedSeconds += 1 }
    state.now = state.now + .seconds(1)
    // Speeds are taken again as of the new time: sorted by speed, the list is made again.
    if state.listing.sort == .speed { state.markListingStale() }
    // The schedule's next change has come: the window, the cap and the next change are asked for again.
    if state.schedule != nil {
        state.scheduleCountdown -= 1
        if state.scheduleCountdown <= 0 {
            state.scheduleCountdown = AppState.scheduleRecheck
            return [.loadLimit] + tickRest(&state)
        }
    }
    return tickRest(&state)
}

/// What a second does to the rows and an open picture or details.
private func tickRest(_ state: inout AppState) -> [Effect] {
    for index in state.rows.indices where state.rows[index].isRunning {
        state.rows[index].secondsWatched += 1
        state.rows[index].bytesPerSecond = state.rows[index].record.speed(at: state.now)
    }
    // A live picture is decoded again once a second, from what the part holds by now; so is the
    // description in a running JPEG's details.
    switch state.overlay {
    case .picture(let path)? where state.livePicture.flatMap(state.index(of:)).map({ state.rows[$0].isRunning }) == true:
        return [.showPicture(path: path)]
    case .details(let id)?:
        guard let index = state.index(of: id), state.rows[index].isRunning, let effect = describe(state.rows[index]) else {
            return []
        }
        return [effect]
    default:
        return []
    }
}

/// An event of the downloads.
private func receive(_ event: ManagerEvent, in state: inout AppState) -> [Effect] {
    if let resync = state.resync {
        // The snapshot after connecting again: gathered aside, shown once whole (`.live`).
        var gathering = AppState(size: state.size)
        gathering.now = state.now
        gathering.rows = resync
        gathering.queue = state.resyncQueue
        gathering.finishedCount = state.finishedCount
        state.resync = nil
        state.resyncQueue = QueueOrder()
        apply(event, to: &gathering)
        state.resync = gathering.rows
        state.resyncQueue = gathering.queue
        state.finishedCount = gathering.finishedCount
        return []
    }
    apply(event, to: &state)
    var effects = notification(for: event, in: state) + followLivePicture(&state)
    // `q` asked what to do with the running downloads, and none runs any more (the last one finished
    // while the question was up): there is nothing left to decide, so the screen leaves as it was asked to.
    if state.overlay == .confirmDetach || state.overlay == .confirmQuit, !state.hasRunningDownloads, !state.quitting {
        effects += quit(&state, pausing: false)
    }
    return effects
}

/// What an effect brought back, or a line to show.
private func load(_ message: Message, into state: inout AppState) {
    switch message {
    case .limitLoaded(let limit):
        state.overallLimit = limit
    case .scheduleLoaded(let schedule):
        state.schedule = schedule
        // A second past the change, so that the service has made it.
        state.scheduleCountdown = min(AppState.scheduleRecheck, (schedule?.secondsToNext ?? .max - 1) + 1)
    case .notice(let line):
        state.message = line
    case .filesLoaded(.success(let files)):
        state.files.listing = .loaded(files)
        state.files.selection = min(state.files.selection, max(0, files.count - 1))
    case .filesLoaded(.failure(let error)):
        state.files.listing = .failed(error.message)
    case .statusLoaded(let line):
        state.files.status = line
    case .pictureLoaded(let path, let cells):
        if state.overlay == .picture(path: path) { state.picture = cells }
    case .pictureDescribed(let id, let text):
        if let index = state.index(of: id) { state.rows[index].picture = text }
    default:
        break
    }
}

/// A long download this screen watched tells the desktop that it is done (not one that was done already
/// when the screen attached: its events come in the snapshot, with no clock between them).
private func notification(for event: ManagerEvent, in state: AppState) -> [Effect] {
    guard state.notify, case .finished(let id, let result, _) = event, !result.skipped,
        let row = state.index(of: id).map({ state.rows[$0] }), row.secondsWatched >= AppState.notifyAfterSeconds
    else { return [] }
    return [.notify("\(result.file) downloaded (\(ByteFormat.size(row.total ?? result.bytes)))")]
}

/// The next cap down (`-`) or up (`+`) from `current`: down from none goes to the step below the speed now.
func steppedLimit(_ current: Int64?, up: Bool, speed: Double) -> Int64? {
    let steps = AppState.limitSteps
    if up {
        guard let current else { return nil }
        return steps.first { $0 > current }
    }
    guard let current else {
        let below = steps.last { Double($0) < speed }
        return speed > 0 ? (below ?? steps[0]) : 8 << 20
    }
    return steps.last { $0 < current } ?? steps[0]
}

/// `.startClock` or `.stopClock` when whether the clock should run has changed. It stops while the service is
/// away: nothing is known to run then.
private func clockEdges(_ state: inout AppState) -> [Effect] {
    let shouldRun = state.hasRunningDownloads && !state.quitting && state.connection == .connected
    guard shouldRun != state.clockRunning else { return [] }
    state.clockRunning = shouldRun
    return [shouldRun ? .startClock : .stopClock]
}

func quit(_ state: inout AppState, pausing: Bool) -> [Effect] {
    state.quitting = true
    state.overlay = nil
    if pausing {
        for index in state.rows.indices where state.rows[index].isRunning {
            state.rows[index].pendingStop = .paused
        }
    }
    return [.quit(pausing: pausing)]
}

// MARK: the connection to the service

extension AppState {
    /// What a key that needs the service says while it is away.
    static let notSent = "Not sent: the service stopped (reconnecting; q quits)"
}

/// The service went away, an attempt to reach it again failed, it is back, its snapshot is whole.
private func apply(_ change: ServiceMessage, to state: inout AppState) -> [Effect] {
    switch change {
    case .lost(let lasted):
        // A connection that lasted starts the waits again from the shortest; one that ended at once does not.
        if lasted >= ReconnectBackoff.resetAfter { state.reconnectStep = 0 }
        state.connection = .lost(attempts: 0, problem: nil)
        state.resync = nil
        // Nothing is known to arrive any more.
        for index in state.rows.indices { state.rows[index].bytesPerSecond = 0 }
        // Whether the service's downloads keep going without this screen is no question while it is away.
        if state.overlay == .confirmDetach { state.overlay = nil }
        return [nextAttempt(&state)]
    case .failed(let problem):
        if case .lost(let attempts, _) = state.connection {
            state.connection = .lost(attempts: attempts + 1, problem: problem)
        } else {
            state.connection = .lost(attempts: 1, problem: problem)
        }
        return [nextAttempt(&state)]
    case .connected:
        state.connection = .resyncing
        state.resync = []
        state.resyncQueue = QueueOrder()
        return [.loadLimit]
    case .live:
        guard state.connection == .resyncing else { return [] }
        // What the service holds now replaces what was shown; what only this screen counted stays.
        let watched = Dictionary(state.rows.map { ($0.id, $0.secondsWatched) }, uniquingKeysWith: { first, _ in first })
        state.markListingStale()
        state.rows = state.resync ?? []
        state.queue = state.resyncQueue
        state.resyncQueue = QueueOrder()
        for index in state.rows.indices { state.rows[index].secondsWatched = watched[state.rows[index].id] ?? 0 }
        state.resync = nil
        state.connection = .connected
        state.selection = min(state.selection, max(0, state.rows.count - 1))
        if case .details(let id)? = state.overlay, state.index(of: id) == nil { state.overlay = nil }
        return []
    }
}

private func nextAttempt(_ state: inout AppState) -> Effect {
    defer { state.reconnectStep += 1 }
    return .reconnect(after: ReconnectBackoff.delay(step: state.reconnectStep))
}

// MARK: manager events

private func apply(_ event: ManagerEvent, to state: inout AppState) {
    let index = state.index(of: event.downloadID)
    // The waiting queue as the service keeps it (`QueueOrder`), from the same events.
    switch event {
    case .added: if index != nil { return }
    case .moved: break
    default: if index == nil { return }
    }
    state.listingWillChange(for: event)
    state.queue.apply(event, before: index.map { state.rows[$0].state })
    switch event {
    case .added:
        // Once per id: a screen that attaches while its own URLs are being added can get a download's
        // `added` both in the service's snapshot and live (the service inserts it, then hands it to the
        // manager, which tells it).
        guard let record = DownloadRecord(event) else { return }
        let place = state.rowPlace(of: record.id)
        if place == state.rows.count {
            state.rows.append(DownloadRow(record))
        } else {
            // The rows after it move down one: the listing, which holds their places, is made again.
            state.markListingStale()
            state.rows.insert(DownloadRow(record), at: place)
        }
    case .removed(let id):
        guard let index else { return }
        state.rows.remove(at: index)
        if case .details(id) = state.overlay { state.overlay = nil }
        // Right for the list in the order added; a sorted or filtered one finds its selection again when it
        // is made again (`refreshListing`).
        if index < state.selection || state.selection >= state.rows.count {
            state.selection = max(0, state.selection - 1)
        }
    case .moved:
        break
    case .state, .started, .progress, .fact, .sources, .finished:
        guard let index else { return }
        apply(event, to: &state.rows[index], at: state.now)
        if case .state(_, let new) = event {
            switch new {
            case .done, .failed, .cancelled:
                state.rows[index].finishedSequence = state.finishedCount
                state.finishedCount += 1
            case .queued, .connecting, .scheduled, .noSpace:
                state.rows[index].finishedSequence = nil
            case .downloading, .paused:
                break
            }
        }
    }
}

/// The record's rules (`DownloadRecord.apply`), then what only the screen keeps.
private func apply(_ event: ManagerEvent, to row: inout DownloadRow, at now: Moment) {
    row.record.apply(event, at: now)
    row.bytesPerSecond = row.record.speed(at: now)
    switch event {
    case .state(_, let newState):
        if newState.isFinished { row.pendingStop = nil }
        if newState == .queued || newState == .connecting { row.previewPath = nil }
    case .fact(_, .previewSaved(let path)):
        row.previewPath = path
    default:
        break
    }
}

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
    case .limitLoaded, .notice, .filesLoaded, .statusLoaded, .pictureLoaded, .pictureDescribed:
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
        state.resync = nil
        apply(event, to: &gathering)
        state.resync = gathering.rows
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

private func quit(_ state: inout AppState, pausing: Bool) -> [Effect] {
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
        return [.loadLimit]
    case .live:
        guard state.connection == .resyncing else { return [] }
        // What the service holds now replaces what was shown; what only this screen counted stays.
        let watched = Dictionary(state.rows.map { ($0.id, $0.secondsWatched) }, uniquingKeysWith: { first, _ in first })
        state.rows = state.resync ?? []
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
    switch event {
    case .added:
        // Once per id: a screen that attaches while its own URLs are being added can get a download's
        // `added` both in the service's snapshot and live (the service inserts it, then hands it to the
        // manager, which tells it).
        guard let record = DownloadRecord(event), state.index(of: record.id) == nil else { return }
        state.rows.append(DownloadRow(record))
    case .removed(let id):
        guard let index = state.index(of: id) else { return }
        state.rows.remove(at: index)
        if case .details(id) = state.overlay { state.overlay = nil }
        if index < state.selection || state.selection >= state.rows.count {
            state.selection = max(0, state.selection - 1)
        }
    case .state, .started, .progress, .fact, .finished:
        guard let index = state.index(of: event.downloadID) else { return }
        apply(event, to: &state.rows[index], at: state.now)
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

// MARK: keys

private func handle(_ key: Key, in state: inout AppState) -> [Effect] {
    if let overlay = state.overlay {
        return handle(key, in: overlay, state: &state)
    }
    if key == .interrupt {
        return quit(&state, pausing: state.pausesOnInterrupt)
    }
    guard let command = KeyBindings.command(for: key, in: state.view) else { return [] }
    return perform(command, in: &state)
}

/// Carries out what a key of the table asks for in the current view.
private func perform(_ command: Command, in state: inout AppState) -> [Effect] {
    switch command {
    case .help:
        state.overlay = .help
    case .switchView:
        state.view = state.view == .downloads ? .files : .downloads
    case .add:
        state.overlay = .prompt("")
    case .cancelAll:
        return cancelAll(&state)
    case .raiseLimit, .lowerLimit:
        let up = command == .raiseLimit
        let next = steppedLimit(state.overallLimit, up: up, speed: state.totalSpeed)
        if next == state.overallLimit {
            state.message = up ? "No limit" : "At the lowest limit"
            return []
        }
        state.overallLimit = next
        state.message = next.map { "Limit: \(ByteFormat.rate(Double($0)))" } ?? "No limit"
        return [.setOverallLimit(next)]
    case .quit:
        // With the service away there is nothing to ask: its downloads are as it left them.
        if state.hasRunningDownloads && !state.serviceLost {
            state.overlay = state.attached ? .confirmDetach : .confirmQuit
        } else {
            return quit(&state, pausing: false)
        }
    case .up, .down, .pageUp, .pageDown, .first, .last:
        let page = Layout.listHeight(state)
        switch state.view {
        case .downloads: moveSelection(&state.selection, count: state.rows.count, by: command, page: page)
        case .files: moveSelection(&state.files.selection, count: state.files.entries.count, by: command, page: page)
        }
    case .details, .cancel, .pause, .pauseAll, .retry, .remove, .open, .openFolder, .picture:
        return performOnSelectedDownload(command, in: &state)
    case .download, .downloadInParts:
        guard let server = state.files.server, let file = state.files.selected else {
            state.message = state.files.server == nil ? "No server: start haul with --server URL or --demo" : "No file selected"
            return []
        }
        let segments = command == .download ? 1 : state.multiPartSegments
        return [.download(urls: [FilesAddress.download(server: server, name: file.name)], segments: segments)]
    case .reload:
        guard state.files.server != nil else { return [] }
        state.files.listing = .loading
        return [.loadFiles]
    }
    return []
}

private func cancelAll(_ state: inout AppState) -> [Effect] {
    var any = false
    for index in state.rows.indices where !state.rows[index].state.isFinished {
        state.rows[index].pendingStop = .cancelled
        any = true
    }
    var effects: [Effect] = []
    if state.clockRunning {
        state.clockRunning = false
        effects.append(.stopClock)
    }
    if any { effects.append(.cancelAll) } else { state.message = "Nothing to cancel" }
    return effects
}

private func moveSelection(_ selection: inout Int, count: Int, by command: Command, page: Int) {
    let last = max(0, count - 1)
    switch command {
    case .up: selection = max(0, selection - 1)
    case .down: selection = min(last, selection + 1)
    case .pageUp: selection = max(0, selection - max(1, page))
    case .pageDown: selection = min(last, selection + max(1, page))
    case .first: selection = 0
    case .last: selection = last
    default: break
    }
}

private func performOnSelectedDownload(_ command: Command, in state: inout AppState) -> [Effect] {
    guard let row = state.selectedRow else {
        if command != .details { state.message = "No download selected" }
        return []
    }
    let index = state.selection
    switch command {
    case .details:
        state.overlay = .details(row.id)
        return describe(row).map { [$0] } ?? []
    case .cancel:
        guard !row.state.isFinished, row.pendingStop != .cancelled else { return [] }
        state.rows[index].pendingStop = .cancelled
        return [.cancel(row.id)]
    case .pause:
        if row.state == .paused { return [.resume(row.id)] }
        guard row.isRunning else { return [] }
        state.rows[index].pendingStop = .paused
        return [.pause(row.id)]
    case .pauseAll:
        if state.hasRunningDownloads {
            for i in state.rows.indices where state.rows[i].isRunning { state.rows[i].pendingStop = .paused }
            return [.pauseAll]
        }
        return state.rows.contains { $0.state == .paused } ? [.resumeAll] : []
    case .retry:
        switch row.state {
        case .failed, .cancelled: return [.retry(row.id)]
        default: state.message = "Only a failed or cancelled download can be retried"
        }
    case .remove:
        switch row.state {
        case .done, .failed, .cancelled: return [.remove(row.id)]
        default: state.message = "Only a finished download can be removed (cancel it first)"
        }
    case .open, .openFolder:
        guard row.state == .done, let path = row.path else {
            state.message = "Only a finished download can be opened"
            return []
        }
        return [.open(path: command == .openFolder ? FilePath.parent(of: path) : path)]
    case .picture:
        guard state.pictures else {
            state.message = "Pictures are off (--pictures none)"
            return []
        }
        guard row.isPicture, let path = picturePath(of: row) else {
            state.message = "Only a JPEG or PNG with data on disk can be shown"
            return []
        }
        state.overlay = .picture(path: path)
        state.picture = nil
        state.livePicture = row.isRunning ? row.id : nil
        return [.showPicture(path: path)]
    default:
        break
    }
    return []
}

/// The complete file when done; while it downloads, its part (a live picture, decoded again as bytes arrive);
/// else the partial preview (`STEM.partial.EXT`) once one was saved.
private func picturePath(of row: DownloadRow) -> String? {
    if row.state == .done { return row.path }
    if row.isRunning, row.completed > 0, let path = row.path { return path + ".part" }
    return row.previewPath
}

/// For a JPEG with data on disk: the effect that says, in its details, what its picture is.
private func describe(_ row: DownloadRow) -> Effect? {
    guard row.isPicture, let path = picturePath(of: row) else { return nil }
    return .describePicture(row.id, path: path)
}

/// When the download a live picture follows ends, the picture moves to the file it left: the finished file
/// (by the name it got), or a cancelled JPEG's preview once saved. A failed one keeps the last picture decoded.
private func followLivePicture(_ state: inout AppState) -> [Effect] {
    guard let id = state.livePicture, case .picture? = state.overlay, let index = state.index(of: id),
        !state.rows[index].isRunning
    else { return [] }
    let row = state.rows[index]
    let next = row.state == .done ? row.path : row.previewPath
    guard let next else {
        if row.state != .cancelled { state.livePicture = nil }  // a preview may still come for a cancel
        return []
    }
    state.livePicture = nil
    state.overlay = .picture(path: next)
    return [.showPicture(path: next)]
}

private func handle(_ key: Key, in overlay: AppState.Overlay, state: inout AppState) -> [Effect] {
    switch overlay {
    case .details(let id) where [.raiseLimit, .lowerLimit].contains(KeyBindings.command(for: key, in: state.view)):
        // This download's own cap, while its details are open.
        guard let index = state.index(of: id) else { return [] }
        let row = state.rows[index]
        let next = steppedLimit(row.limit, up: KeyBindings.command(for: key, in: state.view) == .raiseLimit,
                                speed: row.bytesPerSecond)
        guard next != row.limit else { return [] }
        state.rows[index].limit = next
        return [.setLimit(id, next)]
    case .help, .details, .picture:
        switch key {
        case .character("q") where overlay == .help, .escape, .enter, .character("?"), .character("v"):
            state.overlay = nil
        case .interrupt:
            return quit(&state, pausing: state.pausesOnInterrupt)
        default:
            // Any other key closes the box and then acts as usual, so nothing feels stuck.
            state.overlay = nil
            if overlay != .help { return handle(key, in: &state) }
        }
    case .confirmQuit:
        switch key {
        case .character("y"), .character("Y"), .character("q"), .enter:
            return quit(&state, pausing: true)
        case .interrupt:
            return quit(&state, pausing: true)
        default:
            state.overlay = nil
        }
    case .confirmDetach:
        switch key {
        case .enter, .character("b"), .character("y"), .character("q"), .interrupt:
            return quit(&state, pausing: false)
        case .character("p"):
            return quit(&state, pausing: true)
        default:
            state.overlay = nil
        }
    case .prompt(var text):
        switch key {
        case .enter:
            state.overlay = nil
            let url = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
            guard !url.isEmpty else { return [] }
            return [.download(urls: [url], segments: state.defaultSegments)]
        case .escape:
            state.overlay = nil
        case .backspace, .delete:
            if !text.isEmpty { text.removeLast() }
            state.overlay = .prompt(text)
        case .character(let c):
            if text.count < 4096 { text.append(c) }
            state.overlay = .prompt(text)
        case .interrupt:
            return quit(&state, pausing: state.pausesOnInterrupt)
        default:
            break
        }
    }
    return []
}

extension AppState {
    /// SIGINT, SIGTERM, a terminal gone: an in-process run pauses what runs (resumable); an attached
    /// client leaves the service's downloads going.
    var pausesOnInterrupt: Bool { hasRunningDownloads && !attached }
}

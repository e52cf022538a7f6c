import HaulCore

// MARK: keys: the part of `update` that says what a key does in the view, or in the overlay open

func handle(_ key: Key, in state: inout AppState) -> [Effect] {
    if let overlay = state.overlay {
        return handle(key, in: overlay, state: &state)
    }
    if state.listing.editing, state.view == .downloads, let effects = editFilter(with: key, in: &state) {
        return effects
    }
    if key == .interrupt {
        return quit(&state, pausing: state.pausesOnInterrupt)
    }
    guard let command = KeyBindings.command(for: key, in: state.view) else { return [] }
    return perform(command, in: &state)
}

/// Carries out what a key of the table asks for in the current view.
func perform(_ command: Command, in state: inout AppState) -> [Effect] {
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
        case .downloads: moveSelection(&state.selection, count: state.shownIndices.count, by: command, page: page)
        case .files: moveSelection(&state.files.selection, count: state.files.entries.count, by: command, page: page)
        }
    case .details, .cancel, .pause, .pauseAll, .retry, .refresh, .remove, .removeFiles, .open, .openFolder, .picture:
        return performOnSelectedDownload(command, in: &state)
    case .moveUp, .moveDown, .moveTop, .moveBottom, .sort, .filter:
        return arrange(command, in: &state)
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

func cancelAll(_ state: inout AppState) -> [Effect] {
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

func moveSelection(_ selection: inout Int, count: Int, by command: Command, page: Int) {
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

func performOnSelectedDownload(_ command: Command, in state: inout AppState) -> [Effect] {
    guard let row = state.selectedRow else {
        if command != .details { state.message = "No download selected" }
        return []
    }
    guard let index = state.index(of: row.id) else { return [] }
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
        // One waiting for room checks the room again at once.
        case .failed, .cancelled, .noSpace: return [.retry(row.id)]
        default: state.message = "Only a failed or cancelled download can be retried"
        }
    case .refresh:
        switch row.state {
        case .paused, .failed, .cancelled: state.overlay = .refreshPrompt(row.id, "")
        default: state.message = "Only a paused or failed download takes a new address (pause it first)"
        }
    case .remove:
        switch row.state {
        case .done, .failed, .cancelled: return [.remove(row.id)]
        default: state.message = "Only a finished download can be removed (cancel it first)"
        }
    case .removeFiles:
        state.overlay = .confirmRemoveFiles(row.id)
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
func picturePath(of row: DownloadRow) -> String? {
    if row.state == .done { return row.path }
    if row.isRunning, row.completed > 0, let path = row.path { return path + ".part" }
    return row.previewPath
}

/// For a JPEG with data on disk: the effect that says, in its details, what its picture is.
func describe(_ row: DownloadRow) -> Effect? {
    guard row.isPicture, let path = picturePath(of: row) else { return nil }
    return .describePicture(row.id, path: path)
}

/// When the download a live picture follows ends, the picture moves to the file it left: the finished file
/// (by the name it got), or a cancelled JPEG's preview once saved. A failed one keeps the last picture decoded.
func followLivePicture(_ state: inout AppState) -> [Effect] {
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

func handle(_ key: Key, in overlay: AppState.Overlay, state: inout AppState) -> [Effect] {
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
    case .confirmRemoveFiles(let id):
        // Only `y` deletes: any other key keeps the files (a stray key must not cost them).
        state.overlay = nil
        if key == .interrupt { return quit(&state, pausing: state.pausesOnInterrupt) }
        guard key == .character("y") || key == .character("Y"), let row = state.rows.first(where: { $0.id == id })
        else { return [] }
        return [.removeFiles(id, row.record.path.map {
            OwnFiles.Known(path: $0, part: row.record.part, size: row.record.state == .done ? row.record.total : nil)
        })]
    case .confirmDetach:
        switch key {
        case .enter, .character("b"), .character("y"), .character("q"), .interrupt:
            return quit(&state, pausing: false)
        case .character("p"):
            return quit(&state, pausing: true)
        default:
            state.overlay = nil
        }
    case .prompt(let text):
        let segments = state.defaultSegments
        return edit(text, with: key, in: &state, reopen: { .prompt($0) }) { [.download(urls: [$0], segments: segments)] }
    case .refreshPrompt(let id, let text):
        return edit(text, with: key, in: &state, reopen: { .refreshPrompt(id, $0) }) { [.refresh(id, url: $0)] }
    }
    return []
}

/// A key in a one-line prompt (`a`'s, `u`'s): Enter hands the address, trimmed, to `done`; Esc closes it.
private func edit(_ text: String, with key: Key, in state: inout AppState, reopen: (String) -> AppState.Overlay,
                  done: (String) -> [Effect]) -> [Effect] {
    var text = text
    switch key {
    case .enter:
        state.overlay = nil
        let url = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        guard !url.isEmpty else { return [] }
        return done(url)
    case .escape:
        state.overlay = nil
    case .backspace, .delete:
        if !text.isEmpty { text.removeLast() }
        state.overlay = reopen(text)
    case .character(let c):
        if text.count < 4096 { text.append(c) }
        state.overlay = reopen(text)
    case .interrupt:
        return quit(&state, pausing: state.pausesOnInterrupt)
    default:
        break
    }
    return []
}

extension AppState {
    /// SIGINT, SIGTERM, a terminal gone: an in-process run pauses what runs (resumable); an attached
    /// client leaves the service's downloads going.
    var pausesOnInterrupt: Bool { hasRunningDownloads && !attached }
}

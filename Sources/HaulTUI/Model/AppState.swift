import HaulCore

/// Everything the screen shows, as a plain value: `update` changes it, `render` draws it.
struct AppState: Sendable, Equatable {
    enum View: Sendable, Equatable {
        case downloads
        case files
    }

    /// A box drawn over the view; keys go to it while it is open.
    enum Overlay: Sendable, Equatable {
        case help
        /// The URL being typed after `a`.
        case prompt(String)
        /// `u`: the new address being typed for this download (a link that expired).
        case refreshPrompt(DownloadID, String)
        /// `q` while downloads run: quitting pauses them.
        case confirmQuit
        /// `q` while downloads run, attached to the service: they keep going in the background (the
        /// default) or pause.
        case confirmDetach
        case details(DownloadID)
        /// `D`: deleting this download's files waits for `y`.
        case confirmRemoveFiles(DownloadID)
        /// `v`: the picture at this path, drawn by the picture widget.
        case picture(path: String)
    }

    /// The connection of an attached screen to the service (always `.connected` for this process's downloads).
    enum Connection: Sendable, Equatable {
        case connected
        /// Its event stream ended (the service stopped or crashed): waiting to connect again. `attempts` to
        /// connect have failed since, the last for `problem`.
        case lost(attempts: Int, problem: String?)
        /// Connected again; the snapshot is coming into `resync`.
        case resyncing
    }

    var size: Size
    var view: View = .downloads
    /// One row per download, in the order added.
    var rows: [DownloadRow] = []
    /// The rows shown, in the order shown: sorted (`s`) and filtered (`/`).
    var listing = Listing()
    /// The service's waiting queue, kept from its events (`moved` among them) as the service keeps it.
    var queue = QueueOrder()
    /// Index into the rows shown (`listing.shown`) of the selected row (0 when empty).
    var selection = 0
    /// Downloads seen finishing so far: the next one's `finishedSequence`.
    var finishedCount = 0
    var files = FilesPane()
    /// Time the elapsed clock has counted (it runs while any download is active).
    var elapsedSeconds = 0
    /// The screen's time: a second more at each tick of the clock. The rows' records are told their events
    /// came at it, and show their speed as of it.
    var now = Moment.origin
    /// Whether the clock task should be running.
    var clockRunning = false
    var overlay: Overlay?
    /// A one-line message in the footer, cleared by the next key.
    var message: String?
    /// Connections for `m` in the files view.
    var multiPartSegments = 4
    /// Connections for downloads added with `a` or Enter.
    var defaultSegments = 1
    /// The picture of the `.picture` overlay, once decoded and fitted to the screen.
    var picture: PictureCells?
    /// The download whose part the picture overlay shows live (decoded again as it grows), while it runs.
    var livePicture: DownloadID?
    /// How pictures are drawn on this terminal: their colours, and by whom (curses cells, or the terminal's
    /// own sequences).
    var pictureColors = ColorCapability.shades
    var pictureDrawing = PictureDrawing.cells
    /// The terminal can show colours / Unicode block and box characters.
    var colors = true
    var unicode = true
    /// Set once quitting has begun: the screen says so until the terminal is restored.
    var quitting = false
    /// A client of the service: the downloads outlive the screen, and `q` detaches from them.
    var attached = false
    /// Whether the service's events come (attached), as this screen last heard.
    var connection = Connection.connected
    /// While connected again (`.resyncing`): the rows of the service's snapshot so far, which replace `rows`
    /// once it is whole. The rows shown meanwhile stay as they were.
    var resync: [DownloadRow]?
    /// The waiting queue of that snapshot so far.
    var resyncQueue = QueueOrder()
    /// Attempts to reach the service since a connection last lasted (`ReconnectBackoff`).
    var reconnectStep = 0
    /// The overall receive cap (bytes per second) that `+`/`-` change; nil = none.
    var overallLimit: Int64?
    /// Where the service's schedule stands (the header shows it); nil without one. Asked again when its next
    /// change comes, counted down in the screen's seconds (`scheduleCountdown`), or every 30 s at most.
    var schedule: ScheduleStatus?
    var scheduleCountdown = 0
    static let scheduleRecheck = 30
    /// A download seen running for `notifyAfterSeconds` of the clock tells the desktop when it is done.
    var notify = true
    /// `v` shows pictures (`--pictures none` turns it off).
    var pictures = true
    static let notifyAfterSeconds = 10
    /// The caps `+` and `-` step through, bytes per second (binary units, as `--limit-rate` reads them).
    static let limitSteps: [Int64] = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131_072,
                                      262_144, 524_288, 1_048_576].map { $0 << 10 }

    init(size: Size) {
        self.size = size
    }

    var selectedRow: DownloadRow? {
        let shown = shownIndices
        return shown.indices.contains(selection) ? rows[shown[selection]] : nil
    }

    /// Rows are in the order of their ids, which is the order added (the manager counts them up, and the
    /// service's snapshot lists them oldest first; an `added` that comes out of that order is put in its
    /// place): found by bisection. Each manager event looks its row up, and a thousand downloads make thousands
    /// of events; a walk for the ids not there yet made a screen attaching to 10,000 take seconds.
    func index(of id: DownloadID) -> Int? {
        let place = rowPlace(of: id)
        return place < rows.count && rows[place].id == id ? place : nil
    }

    /// Where a row with `id` is, or goes (the first row whose id is not below it).
    func rowPlace(of id: DownloadID) -> Int {
        var low = 0
        var high = rows.count
        while low < high {
            let middle = (low + high) / 2
            if rows[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The state with no rows (the rest of it, cheap to copy and compare: `StateChange`).
    var withoutRows: AppState {
        var copy = self
        copy.rows = []
        // Not shown until the snapshot is whole (`.live`, a message compared whole).
        copy.resync = nil
        copy.resyncQueue = QueueOrder()
        // Made from the rows and the queue: an event that changes them marks the listing stale, which is kept.
        copy.listing.ordered = []
        copy.listing.shown = []
        copy.queue = QueueOrder()
        return copy
    }

    /// The service went away and is not back yet: keys for it cannot be delivered.
    var serviceLost: Bool {
        if case .lost = connection { return true }
        return false
    }

    /// Downloads queued or running that the user has not asked to stop.
    var hasRunningDownloads: Bool {
        // Read in place: an element taken out of the array is a copy of a 424-byte row. From the end: rows are
        // added in order and mostly finish in order, so a queued or running one is near the end, where a
        // search from the start went past every finished row at every event (1000 small files: half the
        // screen's time in `update`, and quadratic in the list's length).
        rows.withUnsafeBufferPointer { rows in rows.indices.reversed().contains { rows[$0].isRunning } }
    }

    var doneCount: Int { rows.count { $0.state == .done } }

    var totalSpeed: Double {
        rows.reduce(0) { $0 + ($1.state == .downloading ? $1.bytesPerSecond : 0) }
    }
}

/// One download as the screen knows it: its record (`DownloadRecord`, reached through as the row's own
/// fields: `row.state`), changed only by the record's `apply`, and what only the screen keeps beside it.
@dynamicMemberLookup
struct DownloadRow: Sendable, Equatable {
    var record: DownloadRecord
    /// Its speed as shown: the record's `speed(at:)` at the screen's time, taken again at each of its events and
    /// each tick of the clock (after `DownloadRecord.quietAfter` without bytes it shows 0).
    var bytesPerSecond: Double = 0
    /// Seconds of the elapsed clock this screen saw it queued or running (0 for one that was done already).
    var secondsWatched = 0
    /// Where a cancelled JPEG's `STEM.partial.EXT` preview is, once the engine saved one.
    var previewPath: String?
    /// Its picture's size and how much of it decodes, once its details asked (a JPEG's).
    var picture: String?
    /// The stop the user asked for and the manager has not confirmed yet.
    var pendingStop: DownloadState?
    /// When it finished among the downloads this screen saw finish (or finished in its snapshot), counting
    /// up: the `finished` sort. Nil while unfinished.
    var finishedSequence: Int?

    init(_ record: DownloadRecord) {
        self.record = record
    }

    init(id: DownloadID, url: String, name: String) {
        self.init(DownloadRecord(id: id, url: url, name: name))
    }

    subscript<T>(dynamicMember path: WritableKeyPath<DownloadRecord, T>) -> T {
        get { record[keyPath: path] }
        set { record[keyPath: path] = newValue }
    }

    /// The last thing that happened to it without stopping it (a retry, a refused resume, a saved preview).
    var lastFact: DownloadFact? { record.fact }

    /// While the engine waits to retry: which attempt, and why; nil once the next attempt brings bytes.
    var retrying: Retry? {
        guard record.waitingToRetry, case .retrying(let attempt, let of, _, _, let reason)? = record.fact else { return nil }
        return Retry(attempt: attempt, of: of, reason: reason.message)
    }

    /// A retry the engine waits to make.
    struct Retry: Sendable, Equatable {
        var attempt: Int
        var of: Int
        var reason: String
    }

    /// Queued or running, and not being stopped. `DownloadState.isFinished` spelled out here: asked of every
    /// row at each manager event (`AppState.hasRunningDownloads`), that call into another module made the
    /// compiler copy each whole row (424 bytes, its strings retained) to make it, a third of the screen's
    /// CPU over 2000 small downloads. The switch is exhaustive: a new state has to be placed here too.
    var isRunning: Bool {
        if case .some = pendingStop { return false }
        switch record.state {
        case .queued, .scheduled, .connecting, .downloading, .noSpace: return true
        case .paused, .done, .failed, .cancelled: return false
        }
    }

    /// 0...1 when the size is known.
    var fraction: Double? {
        guard let total = record.total, total > 0 else { return record.state == .done ? 1 : nil }
        return min(1, max(0, Double(record.completed) / Double(total)))
    }

    /// Seconds left at the current speed.
    var secondsLeft: Double? {
        guard record.state == .downloading, let total = record.total, bytesPerSecond > 0 else { return nil }
        return Double(max(0, total - record.completed)) / bytesPerSecond
    }

    var isPicture: Bool { DownloadContext.isPartialCapable(name: record.name) }
}

/// The server browser: `/files/list` and `/files/status` of `--server` (or the demo server).
struct FilesPane: Sendable, Equatable {
    enum Listing: Sendable, Equatable {
        case notConfigured
        case loading
        case loaded([RemoteFile])
        case failed(String)
    }

    /// The server's base URL, nil without `--server`/`--demo`.
    var server: String?
    var listing: Listing = .notConfigured
    var status: String?
    var selection = 0

    var entries: [RemoteFile] {
        if case .loaded(let files) = listing { return files }
        return []
    }

    var selected: RemoteFile? {
        entries.indices.contains(selection) ? entries[selection] : nil
    }
}

/// One entry of `/files/list`.
struct RemoteFile: Sendable, Equatable, Decodable {
    var name: String
    var size: Int64
    /// ISO 8601, as the server sent it.
    var date: String
}

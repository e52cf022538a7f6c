import HaulCore

/// How the downloads view orders its rows; `s` goes to the next.
enum ListSort: Int, CaseIterable, Sendable {
    /// The order added, with the waiting downloads (queued, paused) in the queue's order among their own
    /// places: what `K`/`J`/`T`/`B` rearrange. With nothing moved, the order added.
    case queue
    /// Oldest first.
    case added
    /// The last to finish first; the unfinished after them, oldest first.
    case finished
    /// A to Z, ignoring case.
    case name
    /// Largest first; unknown sizes last.
    case size
    /// Most complete first.
    case progress
    /// Fastest first.
    case speed

    var label: String {
        switch self {
        case .queue: "queue order"
        case .added: "added"
        case .finished: "finished"
        case .name: "name"
        case .size: "size"
        case .progress: "progress"
        case .speed: "speed"
        }
    }

    var next: ListSort { ListSort(rawValue: rawValue + 1) ?? .queue }

    /// Whether an event of this kind can move a row under this sort.
    func reorders(on event: ManagerEvent) -> Bool {
        switch event {
        case .added, .removed: true
        case .moved: self == .queue
        case .state: self == .queue || self == .finished || self == .progress || self == .speed
        case .started: self == .name || self == .size
        case .progress: self == .size || self == .progress || self == .speed
        case .finished: self == .name || self == .size || self == .progress
        case .fact, .sources: false
        }
    }
}

/// The rows the downloads view shows, in its order, as indices into `AppState.rows`: made once when what they
/// depend on changed (`stale`), before a frame or a key, not at every event (10,000 rows sort in a few
/// milliseconds; a snapshot of them is 30,000 events).
struct Listing: Sendable, Equatable {
    var sort = ListSort.queue
    /// The name filter in force (`/`); empty: every row.
    var filter = ""
    /// The filter is being typed: keys go to it.
    var editing = false
    /// Every row, in the sort's order.
    var ordered: [Int] = []
    /// The rows the filter keeps, in that order: the list on screen, which `AppState.selection` indexes.
    var shown: [Int] = []
    /// The filter `shown` was made with.
    var shownFilter = ""
    /// Rows or their order changed since `ordered` was made.
    var stale = false
    /// The download selected when the listing went stale: still selected once it is made again.
    var anchor: DownloadID?

    /// What the user chose, and whether the rows are to be listed again: the lists themselves are made from
    /// the rows, and a state is the same whether or not they were made yet (a key compared with the state
    /// before it, which had not listed rows a test set, is no change).
    static func == (a: Listing, b: Listing) -> Bool {
        a.sort == b.sort && a.filter == b.filter && a.editing == b.editing && a.stale == b.stale
    }
}

extension AppState {
    /// Whether `listing` is the rows as they are: not stale, and made for these rows (a test may set them).
    var listingIsCurrent: Bool {
        !listing.stale && listing.ordered.count == rows.count && listing.shownFilter == listing.filter
    }

    /// The indices of the rows shown, in order: the listing's, or made now when it is not current.
    var shownIndices: [Int] {
        if listingIsCurrent { return listing.shown }
        return Self.filtered(Self.ordered(rows, by: listing.sort, queue: queue), rows, by: listing.filter)
    }

    /// The listing goes stale before `event` changes the rows, keeping which download is selected.
    mutating func listingWillChange(for event: ManagerEvent) {
        guard !listing.stale else { return }
        var renames = false
        switch event {
        case .started, .finished: renames = !listing.filter.isEmpty
        default: break
        }
        guard renames || listing.sort.reorders(on: event) else { return }
        markListingStale()
    }

    mutating func markListingStale() {
        guard !listing.stale else { return }
        // Read from the listing only when it is current: made here, it would be made at every event of a batch.
        if listingIsCurrent, listing.shown.indices.contains(selection) {
            listing.anchor = rows[listing.shown[selection]].id
        } else {
            listing.anchor = nil
        }
        listing.stale = true
    }

    /// Makes the listing again when it is not current; the selected download stays selected (else the same
    /// place in the list).
    mutating func refreshListing() {
        guard !listingIsCurrent else { return }
        let anchor = listing.stale ? listing.anchor : nil
        listing.ordered = Self.ordered(rows, by: listing.sort, queue: queue)
        listing.shown = Self.filtered(listing.ordered, rows, by: listing.filter)
        listing.shownFilter = listing.filter
        listing.stale = false
        listing.anchor = nil
        reselect(anchor)
    }

    /// A new filter as it is typed: when it narrows the last one (contains it), only the rows shown are
    /// looked at again.
    mutating func setFilter(_ text: String) {
        let anchor = selectedRow?.id
        let narrows = listingIsCurrent && text.lowercased().contains(listing.shownFilter.lowercased())
        listing.filter = text
        if narrows {
            listing.shown = Self.filtered(listing.shown, rows, by: text)
            listing.shownFilter = text
            reselect(anchor)
        } else {
            listing.anchor = anchor
            listing.stale = true
            refreshListing()
        }
    }

    private mutating func reselect(_ anchor: DownloadID?) {
        let shown = listing.shown
        if let anchor, let position = rows.withUnsafeBufferPointer({ rows in shown.firstIndex { rows[$0].id == anchor } }) {
            selection = position
        } else {
            selection = min(selection, max(0, shown.count - 1))
        }
    }

    /// Every row's index in `sort`'s order; ties (and the queue's other rows) in the order added.
    static func ordered(_ rows: [DownloadRow], by sort: ListSort, queue: QueueOrder) -> [Int] {
        var indices = Array(rows.indices)
        rows.withUnsafeBufferPointer { rows in
            switch sort {
            case .added:
                break
            case .queue:
                // The waiting rows' places, in the order added, take the waiting rows in the queue's order.
                var places: [Int] = []
                places.reserveCapacity(queue.count)
                for index in rows.indices where queue.contains(rows[index].id) { places.append(index) }
                var byID: [DownloadID: Int] = [:]
                byID.reserveCapacity(places.count)
                for index in places { byID[rows[index].id] = index }
                var next = 0
                for id in queue.ids {
                    guard let index = byID[id], next < places.count else { continue }
                    indices[places[next]] = index
                    next += 1
                }
            case .finished:
                sortIndices(&indices) { rows[$0].finishedSequence.map { -$0 } ?? Int.max }
            case .name:
                let keys = rows.map { $0.record.name.lowercased() }
                indices.sort { (keys[$0], $0) < (keys[$1], $1) }
            case .size:
                sortIndices(&indices) { rows[$0].record.total.map { -$0 } ?? Int64.max }
            case .progress:
                sortIndices(&indices) { -(rows[$0].fraction ?? -1) }
            case .speed:
                sortIndices(&indices) { -rows[$0].bytesPerSecond }
            }
        }
        return indices
    }

    /// Sorts by one key per row, taken once each, ties in the order added.
    private static func sortIndices<K: Comparable>(_ indices: inout [Int], key: (Int) -> K) {
        let keys = indices.map(key)
        indices.sort { (keys[$0], $0) < (keys[$1], $1) }
    }

    /// The indices whose row's name contains `filter`, ignoring case.
    static func filtered(_ indices: [Int], _ rows: [DownloadRow], by filter: String) -> [Int] {
        guard !filter.isEmpty else { return indices }
        let wanted = filter.lowercased()
        return rows.withUnsafeBufferPointer { rows in
            indices.filter { rows[$0].record.name.lowercased().contains(wanted) }
        }
    }
}

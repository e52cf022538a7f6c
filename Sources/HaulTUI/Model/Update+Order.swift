import HaulCore

// MARK: keys that arrange the list: the queue's order (`K`/`J`/`T`/`B`), the sort (`s`) and the filter (`/`)

/// Carries out a key that moves the selected download in the queue, changes the sort or opens the filter.
func arrange(_ command: Command, in state: inout AppState) -> [Effect] {
    switch command {
    case .moveUp, .moveDown, .moveTop, .moveBottom:
        guard let row = state.selectedRow else {
            state.message = "No download selected"
            return []
        }
        guard state.queue.contains(row.id) else {
            state.message = "Only a queued or paused download moves in the queue"
            return []
        }
        let place: QueuePlace = switch command {
        case .moveUp: .up
        case .moveDown: .down
        case .moveTop: .top
        default: .bottom
        }
        // The row moves when the service says it has (`moved`): the selection goes with it.
        if state.listing.sort != .queue {
            state.message = "Moved in the queue; sorted by \(state.listing.sort.label) here (s: queue order)"
        }
        return [.move(row.id, place)]
    case .sort:
        state.listing.sort = state.listing.sort.next
        state.markListingStale()
        state.refreshListing()
    case .filter:
        state.listing.editing = true
    default:
        break
    }
    return []
}

/// A key while the filter is typed: characters narrow it, Backspace widens it, Enter keeps it, Esc clears
/// it. Nil for a key that acts as usual (the arrows and pages move the selection meanwhile).
func editFilter(with key: Key, in state: inout AppState) -> [Effect]? {
    switch key {
    case .enter:
        state.listing.editing = false
    case .escape:
        state.listing.editing = false
        state.setFilter("")
    case .backspace, .delete:
        var text = state.listing.filter
        if !text.isEmpty { text.removeLast() }
        state.setFilter(text)
    case .character(let c):
        if state.listing.filter.count < 256 { state.setFilter(state.listing.filter + String(c)) }
    case .interrupt:
        return quit(&state, pausing: state.pausesOnInterrupt)
    case .up, .down, .pageUp, .pageDown, .home, .end, .left, .right, .tab, .backTab:
        return nil
    }
    return []
}

import Foundation
import HaulModel
import Testing

/// The waiting queue's rules, which the service's roster and an attached screen each apply to the same
/// events: new downloads last, one that stopped running first, moves clamped.
@Suite struct QueueOrderTests {
    static func queue(_ ids: [DownloadID]) -> QueueOrder {
        var queue = QueueOrder()
        for id in ids { queue.apply(.added(id: id, url: "http://h/\(id)", file: "\(id)"), before: nil) }
        return queue
    }

    @Test func newDownloadsGoLastAndLeaveWhenTheyStartOrFinish() {
        var queue = Self.queue([1, 2, 3])
        #expect(queue.ids == [1, 2, 3])
        queue.apply(.state(id: 1, .connecting), before: .queued)
        queue.apply(.state(id: 2, .paused), before: .queued)
        #expect(queue.ids == [2, 3])
        queue.apply(.state(id: 3, .cancelled), before: .queued)
        queue.apply(.removed(id: 2), before: .paused)
        #expect(queue.ids.isEmpty)
    }

    @Test func aDownloadThatStopsRunningGoesFirstAndARetryLast() {
        var queue = Self.queue([1, 2, 3])
        queue.apply(.state(id: 1, .connecting), before: .queued)
        queue.apply(.state(id: 1, .downloading), before: .connecting)
        queue.apply(.state(id: 1, .paused), before: .downloading)
        #expect(queue.ids == [1, 2, 3])
        queue.apply(.state(id: 2, .connecting), before: .queued)
        queue.apply(.state(id: 2, .failed(HaulError(.network, "refused"))), before: .connecting)
        queue.apply(.state(id: 2, .queued), before: .failed(HaulError(.network, "refused")))
        #expect(queue.ids == [1, 3, 2])
        // Paused and resumed while waiting: its place stays.
        queue.apply(.state(id: 3, .paused), before: .queued)
        queue.apply(.state(id: 3, .queued), before: .paused)
        #expect(queue.ids == [1, 3, 2])
    }

    @Test func movesArePlacesInTheQueueClamped() {
        var queue = Self.queue([1, 2, 3, 4])
        #expect(queue.position(of: 3, .top) == 0)
        #expect(queue.position(of: 3, .up) == 1)
        #expect(queue.position(of: 3, .down) == 3)
        #expect(queue.position(of: 3, .bottom) == 3)
        #expect(queue.position(of: 1, .up) == 0)
        #expect(queue.position(of: 4, .down) == 3)
        #expect(queue.position(of: 9, .top) == nil)
        queue.apply(.moved(id: 4, position: 0), before: .queued)
        #expect(queue.ids == [4, 1, 2, 3])
        #expect(queue.move(1, to: 99) == 3)
        #expect(queue.ids == [4, 2, 3, 1])
        #expect(queue.move(1, to: -5) == 0)
        #expect(queue.ids == [1, 4, 2, 3])
        #expect(queue.move(9, to: 0) == nil)
    }

    /// A `moved` event crosses the socket as itself.
    @Test func aMoveIsAnEventOnTheWire() throws {
        let event = ManagerEvent.moved(id: 7, position: 2)
        let json = event.json(with: JSONEncoder())
        #expect(String(decoding: json, as: UTF8.self) == #"{"event":"moved","id":7,"position":2}"#)
        #expect(try JSONDecoder().decode(ManagerEvent.self, from: Data(json)) == event)
    }
}

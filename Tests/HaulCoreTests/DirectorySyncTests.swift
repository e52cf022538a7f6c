import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import HaulCore

@Suite struct DirectorySyncTests {
    /// Callers that arrive while an fsync of the directory runs share the next one: 1 + 5 callers, 2 fsyncs.
    @Test func callersArrivingDuringAnFsyncShareTheNextOne() async throws {
        let syncs = NIOLockedValueBox(0)
        let firstEntered = DispatchSemaphore(value: 0)
        let releaseFirst = DispatchSemaphore(value: 0)
        let waiting = DispatchSemaphore(value: 0)
        let sync = DirectorySync(didWait: { waiting.signal() })
        let fsync: @Sendable () -> Void = {
            let n = syncs.withLockedValue { $0 += 1; return $0 }
            if n == 1 {
                firstEntered.signal()
                releaseFirst.wait()
            }
        }

        let finished = DispatchGroup()
        func call() {
            finished.enter()
            Thread.detachNewThread {
                sync.sync("/tmp/dir", fsync: fsync)
                finished.leave()
            }
        }
        call()
        #expect(firstEntered.wait(timeout: .now() + 10) == .success)
        for _ in 0..<5 { call() }
        for _ in 0..<5 { #expect(waiting.wait(timeout: .now() + 10) == .success) }
        releaseFirst.signal()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(syncs.withLockedValue { $0 } == 2)
    }

    @Test func aLoneCallerSyncsOnceAndDirectoriesAreSeparate() {
        let synced = NIOLockedValueBox<[String]>([])
        let sync = DirectorySync()
        for dir in ["/a", "/b", "/a"] { sync.sync(dir) { synced.withLockedValue { $0.append(dir) } } }
        #expect(synced.withLockedValue { $0 } == ["/a", "/b", "/a"])
    }
}

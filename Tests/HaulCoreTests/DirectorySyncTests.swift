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
                sync.sync(DirectorySync.Identity(device: 1, inode: 2), fsync: fsync)
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
        let synced = NIOLockedValueBox<[UInt64]>([])
        let sync = DirectorySync()
        for inode: UInt64 in [1, 2, 1] {
            sync.sync(DirectorySync.Identity(device: 1, inode: inode)) { synced.withLockedValue { $0.append(inode) } }
        }
        #expect(synced.withLockedValue { $0 } == [1, 2, 1])
    }
}

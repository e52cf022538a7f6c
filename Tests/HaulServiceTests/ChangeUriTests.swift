import Foundation
import HaulCore
import NIOConcurrencyHelpers
import SampleServer
import Testing
import TestSupport
@testable import HaulService

/// aria2's `changeUri` on a download's sources, through the service's aria2 face in process: a running one is
/// refused, a paused one takes an address of the same file (another file is left out) and continues from its
/// bytes there.
@Suite struct ChangeUriTests {
    static let size = 20 << 20

    @Test func aPausedDownloadTakesAnotherAddressOfTheSameFileOnly() async throws {
        let log = NIOLockedValueBox<[String]>([])
        var configuration = SampleServerConfiguration(port: 0, jpegs: false, requestLog: { line in
            log.withLockedValue { $0.append(line) }
        })
        configuration.files = [GeneratedFile(name: "medium.bin", size: Self.size), GeneratedFile(name: "twin.bin", size: Self.size)]
        try await withSampleServer(configuration) { server in
            var faults = SampleServerFaults()
            faults.holdAt = [3 << 20]
            server.setFaults(faults)
            let first = server.downloadURL("medium.bin")
            let same = server.baseURL + server.signedPath("medium.bin", expires: Int64.max / 2)
            try await InProcessService.with { harness in
                let gid = try await harness.clients { _, aria2 async throws in
                    try #require(try await aria2.call("aria2.addUri", [[first]]).string)
                }
                let id = try await harness.id(of: gid)
                await server.waitUntilHeld()
                // Its bytes are coming (the server may hold before haul has taken the answer's head).
                try await harness.waitFor(id, "downloading") { $0 == .downloading }
                try await harness.clients { _, aria2 async throws in
                    let busy = try await aria2.call("aria2.changeUri", [gid, 1, [String](), [same]])
                    #expect(busy.errorMessage == "GID#\(gid): download \(id) is running; pause it first")
                    #expect(try await aria2.call("aria2.pause", [gid]).string == gid)
                }
                server.release()
                try await harness.waitUntilPaused(id)
                try await harness.clients { _, aria2 async throws in
                    let badIndex = try await aria2.call("aria2.changeUri", [gid, 2, [String](), [same]])
                    #expect(badIndex.errorMessage == "fileIndex must be 1")
                    // The twin (same size, other bytes) is left out; the same file goes first.
                    let changed = try await aria2.call("aria2.changeUri", [gid, 1, [String](), [server.downloadURL("twin.bin"), same], 0])
                    #expect(changed.list as? [Int] == [0, 1], "\(changed.document)")
                    let uris = try await aria2.call("aria2.getUris", [gid]).list as? [[String: String]]
                    #expect(uris?.first?["uri"] == same)
                    // The first address goes: one deleted, none added.
                    #expect(try await aria2.call("aria2.changeUri", [gid, 1, [first], [String]()]).list as? [Int] == [1, 0])
                    #expect(try await aria2.call("aria2.unpause", [gid]).string == gid)
                }
                try await harness.waitFor(id, "done") { $0 == .done }
                let job = try #require(await harness.service.manager.job(of: id))
                #expect(job.sources.map(\.url) == [same] && job.originURL == first)
                let file = harness.output.file("medium.bin")
                #expect(try FileDigest.hex(of: file) == expectedSHA256(of: GeneratedFile(name: "medium.bin", size: Self.size)))
                let resumed = log.withLockedValue { $0 }.filter { $0.hasPrefix("GET medium.bin bytes=") && $0.contains("- -> 206") }
                #expect(resumed.count == 1 && resumed.first?.hasPrefix("GET medium.bin bytes=0-") == false, "\(resumed)")
            }
        }
    }
}

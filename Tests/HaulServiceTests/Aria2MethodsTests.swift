import Foundation
import HaulCore
import HaulServiceClient
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TestSupport
@testable import HaulService

/// Every method of the aria2 JSON-RPC face (`Service.aria2Methods`), in process: the service's own aria2
/// application (`ServiceApplications.build`) driven by HummingbirdTesting's router client, each method at
/// least once with the shape of its answer checked, and the secret refused. Downloads come from in-process
/// sample servers (a slow one keeps a download running). The end-to-end tests (RPCTests, Aria2ClientTests)
/// drive the same methods through the real binary, and with real aria2 clients.
@Suite struct Aria2MethodsTests {
    /// The methods this suite calls, each at least once: every one the face lists.
    static let called: Set<String> = [
        "aria2.addUri", "aria2.addTorrent", "aria2.getPeers", "aria2.addMetalink", "aria2.remove", "aria2.pause",
        "aria2.forcePause", "aria2.pauseAll", "aria2.forcePauseAll", "aria2.unpause", "aria2.unpauseAll",
        "aria2.forceRemove", "aria2.changePosition", "aria2.tellStatus", "aria2.getUris", "aria2.getFiles",
        "aria2.getServers", "aria2.tellActive", "aria2.tellWaiting", "aria2.tellStopped", "aria2.getOption",
        "aria2.changeUri", "aria2.changeOption", "aria2.getGlobalOption", "aria2.changeGlobalOption",
        "aria2.purgeDownloadResult", "aria2.removeDownloadResult", "aria2.getVersion", "aria2.getSessionInfo",
        "aria2.shutdown", "aria2.forceShutdown", "aria2.getGlobalStat", "aria2.saveSession", "system.multicall",
        "system.listMethods", "system.listNotifications",
    ]

    @Test func everyListedMethodIsCovered() {
        #expect(Set(Service.aria2Methods) == Self.called)
    }

    /// The secret: refused when wrong or missing (400, aria2's "Unauthorized"), not asked for the two methods
    /// that only list names.
    @Test func theSecretIsRefusedWhenWrongOrMissing() async throws {
        try await InProcessService.with { harness in
            try await harness.clients { _, aria2 async throws in
                for token in ["wrong", ""] {
                    let refused = try await aria2.call("aria2.getVersion", token: token)
                    #expect(refused.status == 400)
                    #expect(refused.errorCode == 1 && refused.errorMessage == "Unauthorized")
                    #expect(refused.body["id"] as? String == "t")
                }
                let methods = try await aria2.call("system.listMethods", token: "")
                #expect(methods.status == 200)
                #expect(methods.list as? [String] == Service.aria2Methods)
                let notifications = try await aria2.call("system.listNotifications", token: "")
                #expect(notifications.list as? [String] == Service.aria2Notifications)
            }
        }
    }

    /// The methods that name no download: versions, the session, the global options and statistics, the
    /// unsupported kinds, `system.multicall`, a batch, the GET form, an unknown method, and the shutdowns.
    @Test func theMethodsOfTheWholeService() async throws {
        try await InProcessService.with { harness in
            let output = harness.output.path
            try await harness.clients { control, aria2 async throws in
                let version = try await aria2.call("aria2.getVersion")
                #expect(version.status == 200 && version.body["jsonrpc"] as? String == "2.0")
                #expect(version.object["version"] as? String == "1.36.0")
                #expect(version.object["haul"] as? String == HaulVersion.string)
                #expect((version.object["enabledFeatures"] as? [String])?.contains("HTTPS") == true)
                let session = try await aria2.call("aria2.getSessionInfo")
                #expect((session.object["sessionId"] as? String)?.count == 40)
                #expect(try await aria2.call("aria2.saveSession").string == "OK")

                let options = try await aria2.call("aria2.getGlobalOption").object
                #expect(options["dir"] as? String == output)
                #expect(options["max-concurrent-downloads"] as? String == "4")
                #expect(options["max-overall-download-limit"] as? String == "0")
                // The overall cap is the process's libcurl's, shared with the tests that run beside this one: one
                // that slows no one (1 GiB/s), lifted again below.
                let changed = try await aria2.call("aria2.changeGlobalOption", [
                    ["max-concurrent-downloads": "2", "max-overall-download-limit": "1024M", "split": "3"]])
                #expect(changed.string == "OK")
                let now = try await aria2.call("aria2.getGlobalOption").object
                #expect(now["max-concurrent-downloads"] as? String == "2" && now["split"] as? String == "3")
                #expect(now["max-overall-download-limit"] as? String == "1073741824")
                // The same settings as the control API's.
                let status = try await control.execute(uri: "/v1/service/status", method: .get).decoded(Wire.Status.self)
                #expect(status.jobs == 2 && status.limit == 1 << 30)
                #expect(try await aria2.call("aria2.changeGlobalOption", [["max-overall-download-limit": "0"]]).string == "OK")
                #expect(await harness.service.manager.overallLimit == nil)
                let refused = try await aria2.call("aria2.changeGlobalOption", [["split": "17"]])
                #expect(refused.status == 400 && refused.errorCode == 1 && refused.errorMessage == "split=17: from 1 to 16")

                let stat = try await aria2.call("aria2.getGlobalStat").object
                for key in ["downloadSpeed", "uploadSpeed", "numActive", "numWaiting", "numStopped", "numStoppedTotal"] {
                    #expect(stat[key] as? String == "0", "\(key)")
                }

                // Three NUL bytes are no torrent: libtorrent's reading of them, and nothing added.
                let notTorrent = try await aria2.call("aria2.addTorrent", ["AAAA"])
                #expect(notTorrent.status == 400 && notTorrent.errorCode == 1)
                #expect(notTorrent.errorMessage?.hasPrefix("not a valid torrent") == true, "\(notTorrent.errorMessage ?? "")")
                // A metalink is read (MetalinkTests); three NUL bytes are none.
                let notMetalink = try await aria2.call("aria2.addMetalink", ["AAAA"])
                #expect(notMetalink.status == 400 && notMetalink.errorCode == 1)
                #expect(notMetalink.errorMessage?.hasPrefix("metalink: ") == true, "\(notMetalink.errorMessage ?? "")")
                let unknown = try await aria2.call("aria2.nothing")
                #expect(unknown.status == 404 && unknown.errorCode == -32601)

                try await Self.multicallBatchAndGet(aria2)
            }
            try await harness.clients { _, aria2 async throws in
                #expect(try await aria2.call("aria2.shutdown").string == "OK")
            }
            #expect(await harness.service.waitForEnd() == .stopAsked)
        }
        try await InProcessService.with { harness in
            try await harness.clients { _, aria2 async throws in
                #expect(try await aria2.call("aria2.forceShutdown").string == "OK")
            }
            #expect(await harness.service.waitForEnd() == .stopAsked)
        }
    }

    /// `system.multicall` (each call with its own token: a result in a list, or a fault), a batch of two
    /// calls, and `GET /jsonrpc?method=&id=&params=BASE64`.
    static func multicallBatchAndGet(_ aria2: Aria2Caller) async throws {
        let multicall = try await aria2.call("system.multicall", [[
            ["methodName": "aria2.getVersion", "params": ["token:" + aria2.secret]],
            ["methodName": "aria2.getVersion", "params": ["token:wrong"]],
            ["methodName": "system.listNotifications"],
        ]], token: "")
        #expect(multicall.status == 200)
        let results = multicall.list
        #expect(results.count == 3)
        #expect(((results.first as? [Any])?.first as? [String: Any])?["version"] as? String == "1.36.0")
        #expect((results.dropFirst().first as? [String: Any])?["message"] as? String == "Unauthorized")
        #expect(((results.last as? [Any])?.first as? [String])?.first == "aria2.onDownloadStart")

        let batch = try JSONSerialization.data(withJSONObject: [
            ["jsonrpc": "2.0", "id": 1, "method": "aria2.getVersion", "params": ["token:" + aria2.secret]],
            ["jsonrpc": "2.0", "id": 2, "method": "aria2.getSessionInfo", "params": ["token:" + aria2.secret]],
        ])
        let replies = try await aria2.post(batch)
        #expect(replies.status == 200)
        let ids = (replies.document as? [[String: Any]])?.map { $0["id"] as? Int }
        #expect(ids == [1, 2])

        let params = try JSONSerialization.data(withJSONObject: ["token:" + aria2.secret]).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let get = try Aria2Caller.answer(try await aria2.client.execute(
            uri: "/jsonrpc?method=aria2.getVersion&id=7&params=\(params)", method: .get))
        #expect(get.status == 200 && get.body["id"] as? String == "7")
        #expect(get.object["version"] as? String == "1.36.0")
    }

    /// The methods that name a finished download: its status (whole, or some keys), URIs, files, peers,
    /// options, the stopped list; what cannot be done to it; its result removed, and the results purged.
    @Test func theMethodsOfAFinishedDownload() async throws {
        try await withSampleServer { server in
            try await InProcessService.with { harness in
                let url = server.downloadURL("small.bin")
                let size = String(expectedBytes("small.bin").count)
                let output = harness.output.path
                let added = try await harness.clients { _, aria2 async throws in
                    let missing = try await aria2.call("aria2.addUri", [[String]()])
                    #expect(missing.errorCode == 1 && missing.errorMessage == "addUri needs a list of URIs")
                    return try #require(try await aria2.call("aria2.addUri", [[url]]).string)
                }
                #expect(added.count == 16 && GID.isPrefix(added))
                try await harness.waitFor(try await harness.id(of: added), "done") { $0 == .done }
                let again = try await harness.clients { _, aria2 async throws in
                    let status = try await aria2.call("aria2.tellStatus", [added]).object
                    #expect(status["gid"] as? String == added && status["status"] as? String == "complete")
                    #expect(status["totalLength"] as? String == size && status["completedLength"] as? String == size)
                    #expect(status["dir"] as? String == output && status["errorCode"] as? String == "0")
                    let some = try await aria2.call("aria2.tellStatus", [added, ["gid", "status"]]).object
                    #expect(Set(some.keys) == ["gid", "status"])

                    let uris = try await aria2.call("aria2.getUris", [added]).list as? [[String: String]]
                    #expect(uris == [["uri": url, "status": "used"]])
                    let files = try await aria2.call("aria2.getFiles", [added]).list as? [[String: Any]]
                    #expect(files?.first?["path"] as? String == output + "/small.bin")
                    #expect(files?.first?["length"] as? String == size && files?.first?["index"] as? String == "1")
                    #expect(try await aria2.call("aria2.getPeers", [added]).list.isEmpty)
                    let options = try await aria2.call("aria2.getOption", [added]).object
                    #expect(options["dir"] as? String == output && options["continue"] as? String == "true")
                    let stopped = try await aria2.call("aria2.tellStopped", [0, 10, ["gid"]]).list as? [[String: String]]
                    #expect(stopped == [["gid": added]])
                    #expect(try await aria2.call("aria2.tellActive").list.isEmpty)
                    #expect(try await aria2.call("aria2.tellWaiting", [0, 10]).list.isEmpty)

                    // What a finished download refuses, in aria2's words.
                    let noServers = try await aria2.call("aria2.getServers", [added])
                    #expect(noServers.errorMessage == "No active download for GID#\(added)")
                    #expect(try await aria2.call("aria2.pause", [added]).errorMessage == "GID#\(added) cannot be paused now")
                    #expect(try await aria2.call("aria2.remove", [added]).errorMessage
                        == "Active Download not found for GID#\(added)")
                    #expect(try await aria2.call("aria2.unpause", [added]).errorMessage
                        == "GID#\(added) cannot be unpaused now")
                    #expect(try await aria2.call("aria2.changePosition", [added, 0, "POS_SET"]).errorMessage
                        == "GID#\(added) not found in the waiting queue")
                    #expect(try await aria2.call("aria2.tellStatus", ["0123456789abcdef"]).errorMessage
                        == "GID 0123456789abcdef is not found")

                    #expect(try await aria2.call("aria2.removeDownloadResult", [added]).string == "OK")
                    #expect(try await aria2.call("aria2.tellStatus", [added]).errorMessage == "GID \(added) is not found")
                    return try #require(try await aria2.call("aria2.addUri", [[url], ["out": "again.bin"]]).string)
                }
                try await harness.waitFor(try await harness.id(of: again), "done") { $0 == .done }
                try await harness.clients { _, aria2 async throws in
                    #expect(try await aria2.call("aria2.tellStopped", [0, 10, ["gid"]]).list as? [[String: String]]
                        == [["gid": again]])
                    #expect(try await aria2.call("aria2.purgeDownloadResult").string == "OK")
                    #expect(try await aria2.call("aria2.tellStopped", [0, 10]).list.isEmpty)
                }
                #expect(FileManager.default.contents(atPath: harness.output.file("again.bin")) == Data(expectedBytes("small.bin")))
            }
        }
    }

    /// The methods that name a download that runs or waits (a slow server's): the active and waiting lists,
    /// its servers, pausing and unpausing (each, and all), its options changed, its place in the queue, and
    /// removing it.
    @Test func theMethodsOfARunningDownload() async throws {
        try await withSampleServer(rate: 64 << 10) { slow in
            try await InProcessService.with { harness in
                let running = try await harness.clients { _, aria2 async throws in
                    try #require(try await aria2.call("aria2.addUri", [[slow.downloadURL("large.bin")]]).string)
                }
                let runningID = try await harness.id(of: running)
                try await harness.waitFor(runningID, "downloading") { $0 == .downloading }
                let waiting = try await harness.clients { _, aria2 async throws in
                    let active = try await aria2.call("aria2.tellActive", [["gid", "status"]]).list as? [[String: String]]
                    #expect(active == [["gid": running, "status": "active"]])
                    let servers = try await aria2.call("aria2.getServers", [running]).list as? [[String: Any]]
                    let server = (servers?.first?["servers"] as? [[String: Any]])?.first
                    #expect(server?["uri"] as? String == slow.downloadURL("large.bin"))
                    #expect(server?["downloadSpeed"] is String)
                    #expect(try await aria2.call("aria2.getGlobalStat").object["numActive"] as? String == "1")

                    #expect(try await aria2.call("aria2.pause", [running]).string == running)
                    // Added paused, and put first in the waiting list.
                    let waiting = try #require(try await aria2.call("aria2.addUri", [
                        [slow.downloadURL("medium.bin")], ["pause": "true"]]).string)
                    return waiting
                }
                let waitingID = try await harness.id(of: waiting)
                try await harness.waitUntilPaused(runningID)
                try await harness.clients { _, aria2 async throws in
                    let listed = { (aria2: Aria2Caller) in
                        try await aria2.call("aria2.tellWaiting", [0, 10, ["gid", "status"]]).list as? [[String: String]]
                    }
                    #expect(try await listed(aria2) == [["gid": running, "status": "paused"], ["gid": waiting, "status": "paused"]])
                    #expect(try await aria2.call("aria2.changePosition", [waiting, 0, "POS_SET"]).result as? Int == 0)
                    #expect(try await listed(aria2) == [["gid": waiting, "status": "paused"], ["gid": running, "status": "paused"]])
                    let last = try await aria2.call("aria2.tellWaiting", [-1, 1, ["gid"]]).list as? [[String: String]]
                    #expect(last == [["gid": running]])

                    let changed = try await aria2.call("aria2.changeOption", [running, ["max-download-limit": "2K", "split": "2", "max-connection-per-server": "2"]])
                    #expect(changed.string == "OK")
                    let options = try await aria2.call("aria2.getOption", [running]).object
                    #expect(options["max-download-limit"] as? String == "2048" && options["max-connection-per-server"] as? String == "2")

                    #expect(try await aria2.call("aria2.unpause", [running]).string == running)
                    #expect(try await aria2.call("aria2.tellStatus", [running, ["status"]]).object["status"] as? String != "paused")
                }
                try await harness.waitFor(runningID, "active again") { $0.isActive }
                try await harness.clients { _, aria2 async throws in
                    let busy = try await aria2.call("aria2.changeOption", [running, ["split": "3"]])
                    #expect(busy.errorMessage == "GID#\(running) is running: only max-download-limit can change now; pause it first")
                    #expect(try await aria2.call("aria2.forcePause", [running]).string == running)
                }
                try await harness.waitUntilPaused(runningID)
                try await harness.clients { _, aria2 async throws in
                    #expect(try await aria2.call("aria2.unpauseAll").string == "OK")
                }
                try await harness.waitFor(waitingID, "unpaused") { $0 != .paused }
                try await harness.clients { _, aria2 async throws in
                    #expect(try await aria2.call("aria2.pauseAll").string == "OK")
                }
                for id in [runningID, waitingID] { try await harness.waitUntilPaused(id) }
                try await harness.clients { _, aria2 async throws in
                    #expect(try await aria2.call("aria2.unpause", [waiting]).string == waiting)
                    #expect(try await aria2.call("aria2.forcePauseAll").string == "OK")
                }
                try await harness.waitUntilPaused(waitingID)
                try await harness.clients { _, aria2 async throws in
                    #expect(try await aria2.call("aria2.remove", [running]).string == running)
                    #expect(try await aria2.call("aria2.forceRemove", [waiting]).string == waiting)
                }
                for id in [runningID, waitingID] { try await harness.waitFor(id, "removed") { $0 == .cancelled } }
                try await harness.clients { _, aria2 async throws in
                    let stopped = try await aria2.call("aria2.tellStopped", [0, 10, ["status"]]).list as? [[String: String]]
                    #expect(stopped == [["status": "removed"], ["status": "removed"]])
                }
            }
        }
    }
}

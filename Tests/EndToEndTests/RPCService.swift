import Foundation
import HaulCore
import HaulService
import SampleServer
import Testing
import TestSupport

/// A haul service with its aria2 JSON-RPC face on, for one test: its URL and secret.
struct RPCService {
    let home = ServiceHome()
    let dir = TempDirectory()
    var url = ""
    var secret = ""
    var pid = 0

    /// With the aria2 face on, a service waits for front ends and never leaves by itself unless told: a test
    /// process that dies before its homes stop their services (a sanitizer's abort) would leave them running.
    /// Idle for this many seconds, they go (no test here idles that long).
    static let idleExit = "300"

    /// Downloads go to `dir/dl`; `dir/more` is a second allowed root.
    /// `environment` is added to the service's (a HOME whose `~/.ssh` it uses).
    static func start(_ extra: [String] = [], environment: [String: String] = [:]) async throws -> RPCService {
        var service = RPCService()
        try FileManager.default.createDirectory(atPath: service.dir.file("dl"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: service.dir.file("more"), withIntermediateDirectories: true)
        let start = try await HaulProcess.run(
            ["service", "start", "--json", "--rpc-listen", "127.0.0.1:0", "--output-dir", service.dir.file("dl"),
             "--rpc-allowed-dir", service.dir.file("dl"), "--rpc-allowed-dir", service.dir.file("more"),
             "--idle-exit", Self.idleExit] + extra,
            in: service.dir.path, environment: service.home.environment.merging(environment) { $1 })
        #expect(start.status == 0, "\(start.stderr)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [String: Any])
        let rpc = try #require(status["rpc"] as? [String: Any], "\(start.stdout)")
        service.url = try #require(rpc["url"] as? String)
        service.pid = try #require(status["pid"] as? Int)
        let secretFile = try #require(rpc["secretFile"] as? String)
        service.secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return service
    }

    struct Answer {
        var status: Int
        var body: [String: Any]
        var headers: String

        var result: Any? { body["result"] }
        var errorCode: Int? { (body["error"] as? [String: Any])?["code"] as? Int }
        var errorMessage: String? { (body["error"] as? [String: Any])?["message"] as? String }
    }

    /// POSTs `body` with curl (a real HTTP client, so the headers are what a client sends).
    func post(_ body: String, headers: [String] = [], method: String = "POST") async throws -> Answer {
        let bodyFile = dir.file("body-\(UUID().uuidString)")
        try Data(body.utf8).write(to: URL(fileURLWithPath: bodyFile))
        return try await curl(["-X", method, "--data-binary", "@" + bodyFile] + headers.flatMap { ["-H", $0] }, url)
    }

    func curl(_ arguments: [String], _ target: String) async throws -> Answer {
        let out = dir.file("reply-\(UUID().uuidString)")
        let head = out + ".headers"
        let run = try await runProcess(["/usr/bin/curl", "-s", "-o", out, "-D", head, "-w", "%{http_code}"] + arguments + [target])
        let body = (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
        let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        let headers = (try? String(contentsOfFile: head, encoding: .utf8)) ?? ""
        return Answer(status: Int(run.output.suffix(3)) ?? 0, body: object, headers: headers)
    }

    /// One call with the secret.
    func call(_ method: String, _ params: [Any] = [], id: Any = 1) async throws -> Answer {
        let document: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method, "params": ["token:" + secret] + params]
        return try await post(String(decoding: try JSONSerialization.data(withJSONObject: document), as: UTF8.self))
    }

    /// The service still answers, with the secret.
    func stillAnswers() async throws -> Bool {
        let version = try await call("aria2.getVersion")
        return version.status == 200 && (version.result as? [String: Any])?["version"] != nil
    }

    /// The service's stdout and stderr (a sanitizer's report lands here too), for a failure's message.
    var log: String { (try? String(contentsOfFile: home.path + "/service.log", encoding: .utf8)) ?? "(no service.log)" }

    func haul(_ arguments: [String]) async throws -> HaulProcess.Exit {
        try await HaulProcess.run(arguments, in: dir.path, environment: home.environment)
    }
}

extension RPCService {
    /// The same home, started again (a new port).
    static func restart(_ old: RPCService) async throws -> RPCService {
        var service = old
        let start = try await old.haul(["service", "start", "--json", "--rpc-listen", "127.0.0.1:0",
                                        "--output-dir", old.dir.file("dl"), "--rpc-allowed-dir", old.dir.file("dl"),
                                        "--rpc-allowed-dir", old.dir.file("more"), "--idle-exit", idleExit])
        let status = try #require(try JSONSerialization.jsonObject(with: Data(start.stdout.utf8)) as? [String: Any])
        service.url = try #require((status["rpc"] as? [String: Any])?["url"] as? String)
        return service
    }
}

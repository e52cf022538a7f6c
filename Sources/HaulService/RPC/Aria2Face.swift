import Foundation
import HaulCore

/// The aria2 JSON-RPC face's calls, whatever carried them (HTTP POST, GET or a WebSocket message): the
/// secret checked for each, `system.multicall` unrolled, then the service's aria2 methods.
struct Aria2Face: Sendable {
    let service: Service
    let secret: RPCSecret
    let paths: Aria2Paths
    let gate: SecretGate

    /// Methods aria2 answers without the secret: they only list names.
    static let open: Set<String> = ["system.listMethods", "system.listNotifications"]

    /// The reply document and the HTTP status for a request body.
    func respond(body: some Collection<UInt8>, peer: String) async -> (reply: JSON, status: Int) {
        switch JSONRPC.request(body: body) {
        case .single(.failure(let failure)):
            return (JSONRPC.error(failure, id: failure.id), failure.httpStatus)
        case .single(.success(let call)):
            return await respond(call, peer: peer)
        case .batch(let calls):
            var replies: [JSON] = []
            replies.reserveCapacity(calls.count)
            for call in calls {
                switch call {
                case .failure(let failure): replies.append(JSONRPC.error(failure, id: failure.id))
                case .success(let call): replies.append(await respond(call, peer: peer).reply)
                }
            }
            return (.array(replies), 200)
        }
    }

    func respond(_ call: JSONRPC.Call, peer: String) async -> (reply: JSON, status: Int) {
        let outcome = await perform(call.method, call.params, peer: peer, nested: false)
        let status = switch outcome {
        case .success: 200
        case .failure(let failure): failure.httpStatus
        }
        return (JSONRPC.reply(outcome, id: call.id), status)
    }

    private func perform(_ method: String, _ params: [JSON], peer: String, nested: Bool) async
        -> Result<JSON, JSONRPC.Failure>
    {
        var params = params
        // A leading `token:` is always taken off, whether or not the method needs it.
        var token: String?
        if case .string(let first)? = params.first, first.hasPrefix("token:") {
            token = String(first.dropFirst("token:".count))
            params.removeFirst()
        }
        if method == "system.multicall" {
            guard !nested else { return .failure(.aria2("system.multicall cannot be nested")) }
            return await multicall(params, peer: peer)
        }
        if !Self.open.contains(method) {
            if let refusal = await authorize(token, peer: peer) { return .failure(refusal) }
        }
        return await service.aria2(method, params, paths: paths)
    }

    /// Each inner call carries its own token; the answer holds, for each, `[result]` or a fault struct.
    private func multicall(_ params: [JSON], peer: String) async -> Result<JSON, JSONRPC.Failure> {
        guard let calls = params.first?.array else { return .failure(.aria2("system.multicall needs an array of calls")) }
        guard calls.count <= JSONRPC.maxBatch else {
            return .failure(.aria2("system.multicall takes at most \(JSONRPC.maxBatch) calls"))
        }
        var results: [JSON] = []
        results.reserveCapacity(calls.count)
        for call in calls {
            guard let name = call["methodName"]?.string else {
                results.append(Self.fault(.aria2("methodName is missing")))
                continue
            }
            let inner: [JSON]
            switch call["params"] {
            case nil, .null?: inner = []
            case .array(let list)?: inner = list
            default:
                results.append(Self.fault(.aria2("params must be an array")))
                continue
            }
            switch await perform(name, inner, peer: peer, nested: true) {
            case .success(let result): results.append([result])
            case .failure(let failure): results.append(Self.fault(failure))
            }
        }
        return .success(.array(results))
    }

    private static func fault(_ failure: JSONRPC.Failure) -> JSON {
        ["code": .int(Int64(failure.code)), "message": .string(failure.message)]
    }

    /// nil when `token` is the secret: the right secret is always answered, whatever came before it from
    /// the same address (every local client shares 127.0.0.1, and a stale front end polling with an old
    /// secret, or another local user, must not lock the owner's front ends out). A wrong one is answered
    /// after a short delay, and past the limit a minute with 429 instead of 400.
    private func authorize(_ token: String?, peer: String) async -> JSONRPC.Failure? {
        if let token, secret.matches(token) { return nil }
        let blocked = await gate.isBlocked(peer)
        if !blocked { await gate.failed(peer) }
        try? await gate.clock.sleep(for: SecretGate.delay)
        return blocked ? .tooManyWrongSecrets : .unauthorized
    }
}

/// Counts wrong secrets per peer address: more than `limit` in a minute and that peer's wrong secrets are
/// refused (429) until the minute has passed. Only wrong ones: a right secret is never held back.
actor SecretGate {
    static let limit = 10
    static let window: Duration = .seconds(60)
    /// How long a wrong secret waits for its answer.
    static let delay: Duration = .milliseconds(200)

    /// When each peer's wrong secrets came, as time since the origin of `clock`.
    private var failures: [String: [Duration]] = [:]
    /// The service's clock (a test's manual one): the minute is timed on it, and a wrong secret's answer waits
    /// on it.
    nonisolated let clock: MomentClock

    init(clock: MomentClock) {
        self.clock = clock
    }

    init<C: Clock<Duration>>(clock: C) {
        self.init(clock: MomentClock(clock))
    }

    func isBlocked(_ peer: String) -> Bool {
        prune(peer)
        return (failures[peer]?.count ?? 0) >= Self.limit
    }

    func failed(_ peer: String) {
        prune(peer)
        failures[peer, default: []].append(clock.now.sinceOrigin)
    }

    private func prune(_ peer: String) {
        guard let times = failures[peer] else { return }
        let cutoff = clock.now.sinceOrigin - Self.window
        let kept = times.filter { $0 > cutoff }
        failures[peer] = kept.isEmpty ? nil : kept
    }
}

extension JSONRPC.Failure {
    static let tooManyWrongSecrets = JSONRPC.Failure(code: 1, message: "Too many wrong secrets; try again in a minute",
                                                      status: 429)
}

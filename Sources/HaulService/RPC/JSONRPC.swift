import Foundation

/// JSON-RPC 2.0 as aria2 1.36 speaks it: what a request holds, and the replies and errors it gets.
enum JSONRPC {
    /// One call of a request (or of a batch).
    struct Call: Sendable {
        var method: String
        var params: [JSON]
        /// Echoed in its own JSON type; `.null` when the request had none.
        var id: JSON
    }

    /// An error object `{"code": C, "message": M}`, and the HTTP status a single call answers with.
    struct Failure: Error, Sendable, Equatable {
        var code: Int
        var message: String
        /// The HTTP status when not the usual one for the code.
        var status: Int?
        /// The id of the request that could not be read as a call, when it had one: echoed, as aria2 does.
        var id: JSON = .null

        static func == (a: Failure, b: Failure) -> Bool {
            a.code == b.code && a.message == b.message && a.status == b.status
        }

        init(code: Int, message: String, status: Int? = nil) {
            self.code = code
            self.message = message
            self.status = status
        }

        /// aria2's own errors (bad parameters, an unknown GID, a wrong secret) are code 1.
        static func aria2(_ message: String) -> Failure { Failure(code: 1, message: message) }
        static let unauthorized = Failure.aria2("Unauthorized")
        static let parse = Failure(code: -32700, message: "Parse error.")
        static let invalidRequest = Failure(code: -32600, message: "Invalid Request.")
        static let methodNotFound = Failure(code: -32601, message: "Method not found.")
        static let invalidParams = Failure(code: -32602, message: "Invalid params.")

        func echoing(_ id: JSON) -> Failure {
            var failure = self
            failure.id = id
            return failure
        }

        var httpStatus: Int {
            if let status { return status }
            return code == -32601 ? 404 : 400
        }
    }

    /// A request body: one call, or a batch (a JSON array) of calls, each parsed on its own.
    enum Request {
        case single(Result<Call, Failure>)
        case batch([Result<Call, Failure>])
    }

    /// Most calls a batch may hold; more is refused whole.
    static let maxBatch = 100

    static func request(body: some Collection<UInt8>) -> Request {
        guard let document = JSON.parse(body) else { return .single(.failure(.parse)) }
        if case .array(let elements) = document {
            guard !elements.isEmpty, elements.count <= maxBatch else { return .single(.failure(.invalidRequest)) }
            return .batch(elements.map(call))
        }
        return .single(call(document))
    }

    /// `GET /jsonrpc?method=M&id=I&params=BASE64`: `params` is the base64 (standard or URL-safe) of the
    /// JSON array of parameters.
    static func request(query: [String: String]) -> Result<Call, Failure> {
        guard let method = query["method"], !method.isEmpty else { return .failure(.invalidRequest) }
        // As aria2 does: a query's id is its text (`id=7` is "7").
        let id = query["id"].map(JSON.string) ?? .null
        var params: [JSON] = []
        if let encoded = query["params"], !encoded.isEmpty {
            var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            guard let data = Data(base64Encoded: base64), case .array(let list)? = JSON.parse(data) else {
                return .failure(.parse)
            }
            params = list
        }
        return .success(Call(method: method, params: params, id: id))
    }

    private static func call(_ document: JSON) -> Result<Call, Failure> {
        guard case .object = document else { return .failure(.invalidRequest) }
        let id = document["id"] ?? .null
        guard let method = document["method"]?.string else { return .failure(Failure.invalidRequest.echoing(id)) }
        switch document["params"] {
        case nil, .null?: return .success(Call(method: method, params: [], id: id))
        case .array(let params)?: return .success(Call(method: method, params: params, id: id))
        default: return .failure(Failure.invalidParams.echoing(id))
        }
    }

    /// The id of a request that could not be read as a call: aria2 answers such errors with id null.
    static func reply(_ outcome: Result<JSON, Failure>, id: JSON) -> JSON {
        switch outcome {
        case .success(let result): return ["id": id, "jsonrpc": "2.0", "result": result]
        case .failure(let failure): return error(failure, id: id)
        }
    }

    static func error(_ failure: Failure, id: JSON) -> JSON {
        ["id": id, "jsonrpc": "2.0", "error": ["code": .int(Int64(failure.code)), "message": .string(failure.message)]]
    }

    /// A notification to WebSocket clients: no id.
    static func notification(_ method: String, gid: String) -> JSON {
        ["jsonrpc": "2.0", "method": .string(method), "params": [["gid": .string(gid)]]]
    }
}

import FoundationEssentials
import Glibc
import HaulCore

/// A client of the service: the CLI's commands and the attached TUI. It speaks the control API over the
/// Unix socket through the project's own transport (libcurl, `CURLOPT_UNIX_SOCKET_PATH`), and starts the
/// service when none answers.
package struct ServiceClient: Sendable {
    package let directory: StateDirectory
    /// The transport given, or nil for the shared one, taken at the first request: `CurlDriver.shared` waits for
    /// libcurl's load (begun in the background at the start), which a client that finds no socket must not
    /// wait for before it starts the service.
    private let givenDriver: CurlDriver?
    private var driver: CurlDriver { givenDriver ?? .shared }
    /// `connect` started the service, with its `starting` arguments: it has those settings already.
    package private(set) var startedTheService = false

    package init(directory: StateDirectory, driver: CurlDriver? = nil) {
        self.directory = directory
        givenDriver = driver
    }

    /// A client of a service that answers: the one running, or one started now (`start` with these
    /// arguments after `haul service run`).
    package static func connect(_ directory: StateDirectory, starting arguments: [String]? = [])
        async throws(HaulError) -> ServiceClient
    {
        var client = ServiceClient(directory: directory)
        if let what = directory.socketObstruction { throw directory.socketObstructed(by: what) }
        // No socket, no service: it is started at once, not after a hello that cannot be answered (the hello
        // goes through curl, and waited for libcurl's load, 4-5 ms, before the service's start could begin).
        let startAtOnce = arguments != nil && directory.socketIsMissing
        if !startAtOnce, (try? await client.hello()) != nil { return client }
        guard let arguments else {
            throw HaulError(.other, "no service runs on \(directory.path)")
        }
        if try await ServiceLauncher.start(directory, arguments: arguments) {
            _ = try await client.hello()
            client.startedTheService = true
            return client
        }
        // The one started ended at once: another client's service won the lock, and answers once it
        // listens; or it failed, and its log says why.
        var wait = Duration.milliseconds(20)
        var waited = Duration.zero
        while true {
            do {
                _ = try await client.hello()
                return client
            } catch {
                guard waited < .seconds(5) else {
                    throw HaulError(.other, "cannot start the service on \(directory.socket): see \(directory.log)")
                }
            }
            try? await Task.sleep(for: wait)
            waited += wait
            wait = min(wait * 2, .milliseconds(500))
        }
    }

    // MARK: commands

    func hello() async throws(HaulError) -> Wire.Hello {
        let hello: Wire.Hello = try await call(.get, "/v1/hello")
        guard hello.service == "haul" else { throw HaulError(.other, "\(directory.socket) is not a haul service") }
        guard hello.protocolVersion == Wire.protocolVersion else {
            throw HaulError(.other, "the service runs haul \(hello.version), which speaks protocol "
                            + "\(hello.protocolVersion), not \(Wire.protocolVersion); stop it with `haul service stop`")
        }
        return hello
    }

    package func add(_ jobs: [DownloadJob]) async throws(HaulError) -> [Wire.Added] {
        let (status, body) = try await exchange(.post, "/v1/downloads", body: Wire.encode(Wire.AddRequest(jobs: jobs)))
        // A service older than this client reads whole jobs only (`{"jobs": [...]}`) and refuses the shared
        // form as a bad request: sent again as it reads it.
        if status == 400 {
            let response: Wire.AddResponse = try await call(.post, "/v1/downloads", body: WholeJobs(jobs: jobs))
            return response.added
        }
        let response: Wire.AddResponse = try answer(status, body)
        return response.added
    }

    /// `POST /v1/downloads` as a service of before the shared form reads it.
    private struct WholeJobs: Encodable {
        let jobs: [DownloadJob]
    }

    package func list() async throws(HaulError) -> [Wire.Download] {
        try await call(.get, "/v1/downloads")
    }

    /// Unknown ids and refusals come back as `.failure` (exit 2 for the CLI); a service that cannot be
    /// reached throws.
    package func perform(_ verb: String, _ selection: Wire.Selection) async throws(HaulError)
        -> Result<[DownloadID], Wire.Failure>
    {
        let (status, body) = try await exchange(.post, "/v1/downloads/\(verb)", body: Wire.encode(selection))
        if status == 200 { return .success(try decode(Wire.Applied.self, body).ids) }
        return .failure(try decode(Wire.Failure.self, body))
    }

    /// Deletes what haul wrote for the selected downloads, stopping those that run
    /// (`POST /v1/downloads/remove-files`); their rows stay, saying "removed with files".
    package func removeFiles(_ selection: Wire.Selection) async throws(HaulError) -> Result<Wire.FilesRemoval, Wire.Failure> {
        let (status, body) = try await exchange(.post, "/v1/downloads/remove-files", body: Wire.encode(selection))
        if status == 200 { return .success(try decode(Wire.FilesRemoval.self, body)) }
        return .failure(try decode(Wire.Failure.self, body))
    }

    /// Moves a waiting download in the queue (`POST /v1/downloads/move`): its new position, or why not.
    package func move(_ id: DownloadID, to place: QueuePlace) async throws(HaulError) -> Result<Wire.Moved, Wire.Failure> {
        let (status, body) = try await exchange(.post, "/v1/downloads/move", body: Wire.encode(Wire.Move(id: id, to: place)))
        if status == 200 { return .success(try decode(Wire.Moved.self, body)) }
        return .failure(try decode(Wire.Failure.self, body))
    }

    /// Gives a stopped download a new address (`POST /v1/downloads/refresh`); the service checks that it serves
    /// the same file.
    package func refresh(_ id: DownloadID, to url: String) async throws(HaulError) -> Result<Wire.Refreshed, Wire.RefreshFailure> {
        let (status, body) = try await exchange(.post, "/v1/downloads/refresh", body: Wire.encode(Wire.Refresh(id: id, url: url)))
        if status == 200 { return .success(try decode(Wire.Refreshed.self, body)) }
        if let failure = try? Wire.decode(Wire.RefreshFailure.self, from: body) { return .failure(failure) }
        return .failure(Wire.RefreshFailure(error: try decode(Wire.Failure.self, body).error,
                                            exitCode: FailureCategory.usage.exitCode))
    }

    package func status() async throws(HaulError) -> Wire.Status {
        try await call(.get, "/v1/service/status")
    }

    func setLimit(_ ids: [DownloadID], _ limit: Int64?) async throws(HaulError) {
        let _: Wire.Applied = try await call(.post, "/v1/downloads/limit", body: Wire.DownloadLimit(ids: ids, limit: limit))
    }

    package func setLimit(_ overall: Int64?) async throws(HaulError) {
        let _: Wire.Limit = try await call(.post, "/v1/limit", body: Wire.Limit(overall: overall))
    }

    /// Downloads at once, from now on (`-j` given to a client of a service that runs already).
    package func setJobs(_ jobs: Int) async throws(HaulError) {
        let _: Wire.Jobs = try await call(.post, "/v1/jobs", body: Wire.Jobs(jobs: jobs))
    }

    /// Asks the service to stop, and returns once it has (its downloads paused and checkpointed).
    package func stop() async throws(HaulError) {
        let _: Wire.Applied = try await call(.post, "/v1/service/stop", body: Wire.Selection(ids: []))
        try await ServiceLauncher.waitUntilStopped(directory)
    }

    /// The service's events (`GET /v1/events`): first what it holds (a snapshot), `.live` where the snapshot
    /// ends, then each event as it happens, in the runs one read of the socket brings (so that a reader wakes once
    /// a read, not once an event). Events of a kind this version does not know are skipped
    /// (`ManagerEvent.UnknownKind`). Ends when the service goes, or refuses the stream.
    package func events() -> AsyncStream<EventFeed> {
        events { $0 }
    }

    /// The same stream, each part as `transform` makes it (nil: left out), in the one task that reads the socket.
    package func events<Part: Sendable>(_ transform: @escaping @Sendable (EventFeed) -> Part?) -> AsyncStream<Part> {
        var request = request(.get, "/v1/events")
        // Quiet stretches are normal here: the stream ends when the service closes it, not on a timer.
        request.options.stallTimeout = 0
        let transfer = driver.start(request)
        return AsyncStream { continuation in
            let reader = Task {
                defer { continuation.finish() }
                guard (try? await transfer.head())?.status == 200 else { return }
                var lines = ServerSentEvents()
                let decoder = JSONDecoder()
                do {
                    for try await bytes in transfer.bytes {
                        var batch: [ManagerEvent] = []
                        for part in lines.parts(bytes) {
                            switch part {
                            case .data(let data):
                                if let event = try? decoder.decode(ManagerEvent.self, from: data) { batch.append(event) }
                            case .live:
                                if !batch.isEmpty, let part = transform(.events(batch)) { continuation.yield(part) }
                                batch.removeAll()
                                if let part = transform(.live) { continuation.yield(part) }
                            }
                        }
                        if !batch.isEmpty, let part = transform(.events(batch)) { continuation.yield(part) }
                    }
                } catch {}
            }
            continuation.onTermination = { _ in
                reader.cancel()
                transfer.cancel()
            }
        }
    }

    // MARK: the exchange

    private func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
        var request = HTTPRequest(url: "http://localhost" + path, method: method)
        request.unixSocketPath = directory.socket
        request.headers = ["Content-Type: application/json", "Accept: application/json"]
        request.options.connectTimeout = 5
        request.options.stallTimeout = 30
        request.options.maxRedirects = 0
        return request
    }

    private func call<Response: Decodable>(_ method: HTTPRequest.Method, _ path: String) async throws(HaulError)
        -> Response
    {
        let (status, body) = try await exchange(method, path, body: nil)
        return try answer(status, body)
    }

    private func call<Body: Encodable, Response: Decodable>(_ method: HTTPRequest.Method, _ path: String,
                                                            body: Body) async throws(HaulError) -> Response {
        let (status, data) = try await exchange(method, path, body: Wire.encode(body))
        return try answer(status, data)
    }

    private func answer<Response: Decodable>(_ status: Int, _ body: Data) throws(HaulError) -> Response {
        guard (200..<300).contains(status) else {
            let message = (try? Wire.decode(Wire.Failure.self, from: body))?.error ?? "answered \(status)"
            throw HaulError(.other, "the service: \(message)")
        }
        return try decode(Response.self, body)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ body: Data) throws(HaulError) -> T {
        do { return try Wire.decode(type, from: body) } catch {
            throw HaulError(.other, "the service's answer is not what this haul understands")
        }
    }

    private func exchange(_ method: HTTPRequest.Method, _ path: String, body: Data?) async throws(HaulError)
        -> (Int, Data)
    {
        // libcurl connects by path, through a link: what is there is looked at first (the directory is the
        // user's own, 0700, so nothing else changes it in between).
        if let what = directory.socketObstruction { throw directory.socketObstructed(by: what) }
        var request = request(method, path)
        request.body = body.map { Array($0) }
        let transfer = driver.start(request)
        defer { transfer.cancel() }
        do {
            let head = try await transfer.head()
            var data = Data()
            for try await batch in transfer.bytes {
                batch.withUnsafeBytes { data.append(contentsOf: $0) }
            }
            return (head.status, data)
        } catch {
            let failure = HaulError.from(error)
            // libcurl words a socket that nothing answers on as a TCP port ("failed to connect to localhost
            // port 80"): said here as what it is.
            let why = failure.category == .network ? "no answer (it is not running, or it stopped meanwhile)" : failure.message
            throw HaulError(.other, "cannot reach the service at \(directory.socket): \(why)")
        }
    }
}

/// Splits a server-sent event stream into its events' `data`, and finds the `: live` comment that ends the
/// service's snapshot.
struct ServerSentEvents {
    enum Part: Equatable {
        case data(Data)
        /// The comment `: live`: the snapshot is complete.
        case live
    }

    private var line: [UInt8] = []
    private var data: [UInt8] = []

    /// The events this batch completes.
    mutating func feed<S: Sequence<UInt8>>(_ bytes: S) -> [Data] {
        parts(bytes).compactMap { part in
            if case .data(let data) = part { return data }
            return nil
        }
    }

    /// The events this batch completes, and where the snapshot ends among them.
    mutating func parts<S: Sequence<UInt8>>(_ bytes: S) -> [Part] {
        var parts: [Part] = []
        for byte in bytes {
            guard byte == 0x0A else {
                line.append(byte)
                continue
            }
            if line.last == 0x0D { line.removeLast() }
            if line.isEmpty {
                if !data.isEmpty { parts.append(.data(Data(data))) }
                data.removeAll(keepingCapacity: true)
            } else if line.starts(with: "data:".utf8) {
                var value = line.dropFirst(5)
                if value.first == 0x20 { value = value.dropFirst() }
                if !data.isEmpty { data.append(0x0A) }
                data.append(contentsOf: value)
            } else if line.elementsEqual(": live".utf8) {
                parts.append(.live)
            }
            line.removeAll(keepingCapacity: true)
        }
        return parts
    }
}

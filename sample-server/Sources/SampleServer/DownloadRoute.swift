import Foundation
import Hummingbird
import NIOCore

/// `GET|HEAD /files/download?NAME`: a file with validators and single-range support, with faults applied.
struct DownloadRoute: Sendable {
    let catalog: Catalog
    let controller: ServerController
    let log: RequestLog

    func respond(to request: Request, context: SampleRequestContext) -> Response {
        respond(to: request, name: request.uri.query.flatMap { $0.removingPercentEncoding } ?? "", channel: context.channel)
    }

    /// The answer for the file `name`, however the request named it (`/signed/NAME` too).
    func respond(to request: Request, name: String, channel: any Channel) -> Response {
        let response = answer(request, name: name, channel: channel)
        guard request.method == .head else { return response }
        return Response(status: response.status, headers: response.headers)
    }

    /// The full GET answer; HEAD sends the same status and headers without the body.
    private func answer(_ request: Request, name: String, channel: any Channel) -> Response {
        let rangeHeader = request.headers[.range]
        let head = request.method == .head
        let (faults, rate) = controller.admit(name: name, range: rangeHeader, head: head)
        let method = request.method.rawValue
        guard let file = catalog.file(named: name) else {
            log.write("\(method) \(name.debugDescription) -> 404")
            return Response(status: .notFound, body: ResponseBody(byteBuffer: ByteBuffer(string: "no such file\n")))
        }
        if controller.claimUnavailable(name: name, head: head) {
            log.write("\(method) \(name) -> 503 (fault), Retry-After: \(faults.retryAfterSeconds)")
            var headers = HTTPFields()
            headers[.retryAfter] = String(faults.retryAfterSeconds)
            return Response(
                status: .serviceUnavailable, headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(string: "busy, retry later\n")))
        }

        let pastStart = rangeHeader.map { !$0.hasPrefix("bytes=0-") } ?? false
        let validators = file.validators(salt: pastStart ? faults.etagSaltPastStart ?? faults.etagSalt : faults.etagSalt)
        var headers = HTTPFields()
        headers[.acceptRanges] = "bytes"
        if !faults.omitValidators {
            headers[.eTag] = validators.etag
            headers[.lastModified] = validators.lastModified
        }
        headers[.contentType] = file.contentType
        headers[.contentDisposition] = faults.contentDisposition ?? Self.contentDisposition(for: file.name)
        // A conditional GET of the whole file: 304 when it has not changed since.
        if rangeHeader == nil, !faults.omitValidators, let since = request.headers[.ifModifiedSince],
           let seconds = HTTPDate.parse(since), validators.modifiedSeconds <= seconds {
            log.write("\(method) \(name) If-Modified-Since: \(since) -> 304")
            var unchanged = HTTPFields()
            unchanged[.eTag] = validators.etag
            unchanged[.lastModified] = validators.lastModified
            return Response(status: .notModified, headers: unchanged)
        }

        let range = resolveRange(request: request, size: file.size, validators: validators, faults: faults)
        let status: HTTPResponse.Status
        let bytes: Range<Int>
        switch range {
        case .whole:
            status = .ok
            bytes = 0..<file.size
        case .partial(let asked):
            status = .partialContent
            let (closed, total) = Self.misplaced(asked, size: file.size, by: faults.wrongRange)
            bytes = closed.lowerBound..<(closed.upperBound + 1)
            headers[.contentRange] = "bytes \(closed.lowerBound)-\(closed.upperBound)/\(total)"
        case .unsatisfiable:
            log.write("\(method) \(name) \(rangeHeader ?? "") -> 416")
            headers[.contentRange] = "bytes */\(file.size)"
            headers[.contentLength] = "0"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        headers[.contentLength] = String(bytes.count)
        log.write("\(method) \(name)\(rangeHeader.map { " \($0)" } ?? "") -> \(status.code) (\(bytes.count) bytes)")
        if request.method == .head {
            return Response(status: status, headers: headers)
        }
        let admitted = faults.bodiesAtOnce != nil
        if let limit = faults.bodiesAtOnce, !controller.admitBody(limit: limit) {
            log.write("\(method) \(name) -> 503 (fault: \(limit) bodies at once)")
            return Response(status: .serviceUnavailable,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: "too many connections\n")))
        }
        controller.recordBody(bytes)

        let plan = bodyPlan(file, asked: name, bytes: bytes, rate: rate, faults: faults)
        let streamer = BodyStreamer(plan: plan, controller: controller, channel: channel, log: log, admitted: admitted)
        return Response(status: status, headers: headers, body: streamer.responseBody())
    }

    /// How the body of `bytes` of `file` (asked for as `name`) is sent: at `rate`, with the faults that fall in
    /// it (a stall, a drop, the holds inside it, in order).
    private func bodyPlan(_ file: ServedFile, asked name: String, bytes: Range<Int>, rate: Int?,
                          faults: SampleServerFaults) -> BodyPlan {
        BodyPlan(
            file: file,
            range: bytes,
            rate: rate,
            stall: faults.stallSeconds.map { (after: Swift.max(0, faults.stallAfterBytes), duration: .seconds($0)) },
            dropAfter: controller.claimDrop(name: name, bodyLength: bytes.count),
            holds: faults.holdAt.enumerated()
                .filter { bytes.contains($0.element) }
                .map { (after: $0.element - bytes.lowerBound, releases: $0.offset + 1) }
                .sorted { $0.after < $1.after })
    }

    private func resolveRange(
        request: Request, size: Int, validators: Validators, faults: SampleServerFaults
    ) -> RangeRequest {
        guard !faults.ignoreRange else { return .whole }
        if !faults.ignoreIfRange, let ifRange = request.headers[.ifRange], !validators.matches(ifRange: ifRange) {
            return .whole
        }
        return RangeRequest(header: request.headers[.range], size: size)
    }

    /// The bytes a ``SampleServerFaults/RangeFault`` sends instead of `asked`, and the total size it states.
    static func misplaced(_ asked: ClosedRange<Int>, size: Int, by fault: SampleServerFaults.RangeFault?)
        -> (ClosedRange<Int>, total: Int)
    {
        switch fault {
        case nil:
            return (asked, size)
        case .fromStart:
            return (0...(asked.count - 1), size)
        case .shifted where asked.lowerBound == 0:
            return (asked, size)
        case .shifted(let delta):
            let first = Swift.min(Swift.max(0, asked.lowerBound + delta), size - 1)
            return (first...Swift.min(size - 1, first + asked.count - 1), size)
        case .wrongTotal:
            return (asked, size + 1000)
        }
    }

    /// `attachment; filename="NAME"`, with an RFC 8187 `filename*` when the name is not plain ASCII.
    static func contentDisposition(for name: String) -> String {
        let plain = name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" }
        if plain {
            return "attachment; filename=\"\(name)\""
        }
        let fallback = String(
            String.UnicodeScalarView(
                name.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" ? $0 : "_" }))
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(PercentEncoding.encode(name))"
    }
}

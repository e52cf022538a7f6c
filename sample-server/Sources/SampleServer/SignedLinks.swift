import COpenSSL
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// Links that expire, as a CDN signs them: `GET /sign/NAME` answers a fresh link,
/// `BASE/signed/NAME?expires=T&n=N&sig=HEX` (`N` a number of its own for each link), and `GET|HEAD
/// /signed/NAME?expires=T[&n=N]&sig=HEX` serves the file as `/files/download` does (ranges, validators, faults)
/// while `T` (seconds since 1970) is not past the server's clock (``SampleServerConfiguration/now``) and `sig` is
/// the HMAC-SHA256 of `NAME`, `T` and `N` under the server's key: 403 otherwise. The key is random for each server, so a link of one server is no link of another. With
/// `uses`, each link serves that many requests and then answers 403 too (a one-time token's link).
///
/// HMAC through OpenSSL's libcrypto, which the project already links for its digests (swift-crypto would build
/// a second copy of BoringSSL beside the one NIOSSL has).
struct SignedLinks: Sendable {
    let download: DownloadRoute
    let log: RequestLog
    let key: [UInt8]
    let now: @Sendable () -> Int64
    let lifetime: Int64
    let uses: Int?
    /// Requests each link (by its signature) has served.
    private let served = NIOLockedValueBox<[String: Int]>([:])
    /// The `n` of the last link `/sign/` made.
    private let signedCount = NIOLockedValueBox(0)

    init(download: DownloadRoute, log: RequestLog, now: @escaping @Sendable () -> Int64, lifetime: Int64, uses: Int?) {
        self.download = download
        self.log = log
        var generator = SystemRandomNumberGenerator()
        key = (0..<32).map { _ in UInt8.random(in: 0 ... .max, using: &generator) }
        self.now = now
        self.lifetime = lifetime
        self.uses = uses
    }

    /// `GET /sign/NAME`: the link, on one line, for the host the request named.
    func sign(_ request: Request, context: SampleRequestContext) -> Response {
        let name = String(request.uri.path.dropFirst("/sign/".count)).removingPercentEncoding ?? ""
        let host = request.head.authority ?? "127.0.0.1"
        let expires = now() + lifetime
        let n = String(signedCount.withLockedValue { count in
            count += 1
            return count
        })
        let link = "http://\(host)/signed/\(PercentEncoding.encode(name))?expires=\(expires)&n=\(n)"
            + "&sig=\(signature(name, expires, nonce: n))"
        log.write("GET /sign/\(name) -> 200 (expires \(expires))")
        return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: link + "\n")))
    }

    /// `GET|HEAD /signed/NAME?expires=T&sig=HEX`.
    func serve(_ request: Request, context: SampleRequestContext) -> Response {
        let name = String(request.uri.path.dropFirst("/signed/".count)).removingPercentEncoding ?? ""
        let query = request.uri.queryParameters
        let method = request.method.rawValue
        guard let expires = query["expires"].flatMap({ Int64(String($0)) }), let sig = query["sig"].map(String.init),
              Self.same(Array(sig.utf8), Array(signature(name, expires, nonce: query["n"].map(String.init) ?? "").utf8))
        else {
            log.write("\(method) /signed/\(name) -> 403 (bad signature)")
            return Response(status: .forbidden, body: ResponseBody(byteBuffer: ByteBuffer(string: "bad signature\n")))
        }
        guard now() <= expires else {
            log.write("\(method) /signed/\(name) -> 403 (expired)")
            return Response(status: .forbidden, body: ResponseBody(byteBuffer: ByteBuffer(string: "link expired\n")))
        }
        if let uses, served.withLockedValue({ served in
            served[sig, default: 0] += 1
            return served[sig, default: 0] > uses
        }) {
            log.write("\(method) /signed/\(name) -> 403 (used up)")
            return Response(status: .forbidden, body: ResponseBody(byteBuffer: ByteBuffer(string: "link used up\n")))
        }
        return download.respond(to: request, name: name, channel: context.channel)
    }

    /// Lower-case hex of HMAC-SHA256(key, "NAME\nT\nN").
    func signature(_ name: String, _ expires: Int64, nonce: String = "") -> String {
        let message = Array("\(name)\n\(expires)\n\(nonce)".utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { key in
            _ = HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), message, message.count, &digest, &length)
        }
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    /// Equal bytes, compared in time that does not depend on where they differ.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

import FoundationEssentials
import Glibc
import HaulCore

/// Reads a SuperStorage-API server's `/files/list` (JSON) and `/files/status` (one line of text) with a
/// plain GET through the curl driver.
struct FilesClient: Sendable {
    /// GETs a URL and returns its body; injectable for tests.
    var get: @Sendable (String) async throws -> [UInt8]

    /// Bodies larger than this are refused: a listing is small.
    static let maximumBody = 8 << 20

    /// With every option at its default.
    static let curl = curl(TransferOptions())

    /// GETs through the curl driver with the command line's transfer options: its timeouts (a connect that
    /// takes longer than `connectTimeout` seconds, a body with no byte for `stallTimeout`), and its CA
    /// certificates, proxy, credentials and the rest, as every download of that command line gets them.
    static func curl(_ options: TransferOptions) -> FilesClient {
        FilesClient { url in try await fetch(url, options: options) }
    }

    private static func fetch(_ url: String, options: TransferOptions) async throws -> [UInt8] {
        let transfer = CurlDriver.shared.start(HTTPRequest(url: url, options: options))
        let head = try await transfer.head()
        guard (200..<300).contains(head.status) else {
            throw FilesError(message: "the server answered \(head.status)")
        }
        var body: [UInt8] = []
        for try await batch in transfer.bytes {
            batch.withUnsafeBytes { body.append(contentsOf: $0) }
            guard body.count <= maximumBody else { throw FilesError(message: "the answer is too large") }
        }
        return body
    }

    func list(server: String) async -> Result<[RemoteFile], FilesError> {
        do {
            let body = try await get(FilesAddress.list(server: server))
            return .success(try JSONDecoder().decode([RemoteFile].self, from: Data(body)))
        } catch let error as FilesError {
            return .failure(error)
        } catch is DecodingError {
            return .failure(FilesError(message: "the list is not the JSON the SuperStorage API sends"))
        } catch {
            return .failure(FilesError(message: HaulError.from(error).message))
        }
    }

    /// The status line, or nil when the server does not give one.
    func status(server: String) async -> String? {
        guard let body = try? await get(FilesAddress.status(server: server)) else { return nil }
        let line = String(decoding: body, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)
        return line?.isEmpty == false ? line : nil
    }
}

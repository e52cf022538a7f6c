import Foundation
import Hummingbird

/// `GET /files/list` (JSON) and `GET /files/status` (one line of text).
struct CatalogRoutes: Sendable {
    let catalog: Catalog
    let controller: ServerController

    private struct ListEntry: Encodable {
        let name: String
        let size: Int
        let date: String
    }

    func list(_ request: Request, context: SampleRequestContext) throws -> Response {
        let entries = catalog.files().map {
            ListEntry(name: $0.name, size: $0.size, date: HTTPDate.iso8601($0.modified))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(entries)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }

    func status(_ request: Request, context: SampleRequestContext) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: statusLine() + "\n")))
    }

    func statusLine() -> String {
        let files = catalog.files()
        let total = files.reduce(0) { $0 + $1.size }
        let rate = controller.rate.map { "rate \(Self.formatBytes($0))/s per connection" } ?? "rate unlimited"
        let faults = controller.faults == SampleServerFaults() ? "" : ", faults active"
        return "SuperStorage sample server: \(files.count) files, \(Self.formatBytes(total)), \(rate)\(faults)"
    }

    /// Decimal units, as download tools print them: `1.43 GB`, `512 KB`, `999 B`.
    static func formatBytes(_ count: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1_000, unit < units.count - 1 {
            value /= 1_000
            unit += 1
        }
        if unit == 0 || value >= 100 {
            return "\(Int(value.rounded())) \(units[unit])"
        }
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) \(units[unit])"
    }
}

import Foundation
import SampleServer
import Testing

@Suite("List and status")
struct CatalogTests {
    private struct Entry: Decodable, Equatable {
        let name: String
        let size: Int
        let date: String
    }

    @Test func listIsSortedJSONOfEveryFile() async throws {
        try await withServer(SampleServerConfiguration(port: 0, files: testFiles, jpegs: true)) { server in
            let response = try await RawHTTPClient.fetch(from: server, "/files/list")
            #expect(response.status == 200)
            #expect(response["content-type"]?.hasPrefix("application/json") == true)
            let entries = try JSONDecoder().decode([Entry].self, from: Data(response.body))
            let names = entries.map(\.name)
            #expect(names == names.sorted())
            #expect(Set(names) == Set(testFiles.map(\.name) + ["photo-large.jpg", "photo-medium.jpg", "photo-small.jpg"]))
            #expect(entries.first { $0.name == "small.bin" }?.size == 1 << 20)
            #expect(entries.allSatisfy { ISO8601DateFormatter().date(from: $0.date) != nil })
            #expect(entries.map(\.name) == server.catalog.map(\.name))
            #expect(entries.map(\.size) == server.catalog.map(\.size))
        }
    }

    @Test func statusIsOneLine() async throws {
        try await withServer { server in
            let response = try await RawHTTPClient.fetch(from: server, "/files/status")
            #expect(response.status == 200)
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(text == "SuperStorage sample server: 4 files, 22.02 MB, rate unlimited\n")
            server.setRate(1_000)
            let throttled = try await RawHTTPClient.fetch(from: server, "/files/status")
            #expect(String(decoding: throttled.body, as: UTF8.self).contains("rate 1.00 KB/s per connection"))
        }
    }

    @Test func unknownPathsAre404() async throws {
        try await withServer { server in
            let notFound = try await RawHTTPClient.fetch(from: server, "/files/nothing")
            #expect(notFound.status == 404)
        }
    }

    @Test func downloadURLsArePercentEncoded() async throws {
        try await withServer { server in
            #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
            #expect(server.downloadURL("a b.bin") == "\(server.baseURL)/files/download?a%20b.bin")
        }
    }
}

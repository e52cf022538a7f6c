import Foundation
import HaulCore

/// A `DownloadJob` as it may be written to disk: its sources' (its URL's, its mirrors') and the proxy's passwords masked (`URLRedaction.masked`) and the
/// request headers that carry credentials (`Authorization`, `Proxy-Authorization`, `Cookie`, any case)
/// dropped. Secrets live only in the memory of the service that was given them.
///
/// A download whose secrets were withheld cannot be resumed by a later service process: the stored job
/// lacks what the server wants. The service that loads such a row after a restart marks it failed with a
/// message saying so, rather than sending the request without credentials.
struct WithheldJob: Equatable {
    /// The job without its secrets.
    var job: DownloadJob
    /// Whether anything was removed.
    var secretsWithheld: Bool

    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    init(_ job: DownloadJob) {
        var kept = job
        // Every source's password, the mirrors' too.
        for index in kept.sources.indices { kept.sources[index].url = URLRedaction.masked(job.sources[index].url) }
        kept.headers = job.headers.filter { !Self.isSecret(header: $0) }
        if let proxy = job.transfer.proxy {
            // curl takes a proxy without a scheme too (`user:pw@host:3128`).
            kept.transfer.proxy = proxy.contains("://") ? URLRedaction.masked(proxy)
                : String(URLRedaction.masked("http://" + proxy).dropFirst("http://".count))
        }
        // The login name stays (it is shown as `user:***@` would be); its password does not.
        if kept.transfer.password != nil { kept.transfer.password = nil }
        self.job = kept
        secretsWithheld = kept != job
    }

    /// "Name: value" whose name (trimmed, any case) is one of `secretHeaders`. A line without a colon is
    /// all name.
    static func isSecret(header: String) -> Bool {
        let name = header.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return secretHeaders.contains(name.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// The JSON of the `job` column. Keys sorted, so one job always gives the same text.
    /// `encoder` comes from `encoder()`, made once for many jobs (a long `-i` list).
    func encoded(with encoder: JSONEncoder) throws(StoreError) -> String {
        do {
            return String(decoding: try encoder.encode(job), as: UTF8.self)
        } catch {
            throw StoreError(.other, "cannot store the download: its options do not encode (\(error))")
        }
    }

    /// Encodes the jobs of one insert, each as `encoded(with:)` would, but a run of jobs that differ only in
    /// their URL (a long `-i` list) costs one job's encoding and a string's: the first is encoded with a
    /// marker for its URL, and each next one is that text with its own URL, encoded as a string, in the
    /// marker's place (keys sorted: the URL is always in the same place). 1000 jobs took the insert 10 ms
    /// encoded one by one, on the way to the first download.
    struct Encoder {
        private let encoder = WithheldJob.encoder()
        /// In no job: control characters around a random number, new for each insert (a job whose text holds
        /// it elsewhere all the same is encoded whole).
        private let marker = "\u{1}haul-url-\(UInt64.random(in: 0 ... .max))\u{1}"
        /// The last job's options (its URL left out) and its text on either side of the URL's string.
        private var last: (options: DownloadJob, before: String, after: String)?

        mutating func encode(_ withheld: WithheldJob) throws(StoreError) -> String {
            var options = withheld.job
            options.url = ""
            if let last, last.options == options {
                return last.before + (try string(withheld.job.url)) + last.after
            }
            var marked = withheld
            marked.job.url = marker
            let text = try marked.encoded(with: encoder)
            let quoted = try string(marker)
            let parts = text.components(separatedBy: quoted)
            guard parts.count == 2 else {
                last = nil
                return try withheld.encoded(with: encoder)
            }
            last = (options, parts[0], parts[1])
            return parts[0] + (try string(withheld.job.url)) + parts[1]
        }

        /// `text` as a JSON string, quoted, as the encoder writes it inside a job.
        private func string(_ text: String) throws(StoreError) -> String {
            do {
                return String(decoding: try encoder.encode(text), as: UTF8.self)
            } catch {
                throw StoreError(.other, "cannot store the download: its URL does not encode (\(error))")
            }
        }
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The job of a `job` column.
    static func decoded(_ json: String) throws(StoreError) -> DownloadJob {
        do {
            return try JSONDecoder().decode(DownloadJob.self, from: Data(json.utf8))
        } catch {
            throw StoreError(.other, "cannot read a download's options from \(Store.fileName): \(error)")
        }
    }
}

import FoundationEssentials
import Glibc
import HaulCore

/// The documents of the control API (docs/protocol.md), shared by the service and its clients.
package enum Wire {
    /// Raised when a change would break what a client of the previous version relies on.
    static let protocolVersion = ManagerEvent.wireVersion

    /// `GET /v1/hello`: who answers, so a client knows it speaks to a haul service it understands.
    package struct Hello: Codable, Sendable, Equatable {
        var service = "haul"
        var version = HaulVersion.string
        var protocolVersion = Wire.protocolVersion
        package var pid: Int32

        package init(pid: Int32) { self.pid = pid }
    }

    /// `POST /v1/downloads`. On the wire either `{"jobs": [JOB, ...]}` or, as haul's clients send it, each run
    /// of jobs that differ only in their URL as one JOB: `{"shared": [JOB, ...], "urls": [URL, ...], "uses":
    /// [i, ...]}`, the n-th download being `shared[uses[n]]` with `urls[n]` for its URL (`uses` left out when
    /// one JOB is shared by all). A long `-i` list then costs one JOB to encode and to decode, not one a line:
    /// 1000 URLs took the service 11 ms to decode as whole jobs, on the way to the first download.
    package struct AddRequest: Codable, Sendable, Equatable {
        package var jobs: [DownloadJob]
        package init(jobs: [DownloadJob]) { self.jobs = jobs }

        enum CodingKeys: String, CodingKey {
            case jobs, shared, urls, uses
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let jobs = try container.decodeIfPresent([DownloadJob].self, forKey: .jobs) {
                self.jobs = jobs
                return
            }
            let shared = try container.decode([DownloadJob].self, forKey: .shared)
            let urls = try container.decode([String].self, forKey: .urls)
            let uses = try container.decodeIfPresent([Int].self, forKey: .uses)
            if let uses, uses.count != urls.count {
                throw DecodingError.dataCorruptedError(forKey: .uses, in: container,
                                                       debugDescription: "not one entry for each URL")
            }
            var jobs: [DownloadJob] = []
            jobs.reserveCapacity(urls.count)
            for (index, url) in urls.enumerated() {
                let use = uses?[index] ?? 0
                guard shared.indices.contains(use), uses != nil || shared.count == 1 else {
                    throw DecodingError.dataCorruptedError(forKey: uses == nil ? .shared : .uses, in: container,
                                                           debugDescription: "no shared job \(use)")
                }
                var job = shared[use]
                job.url = url
                jobs.append(job)
            }
            self.jobs = jobs
        }

        package func encode(to encoder: any Encoder) throws {
            var shared: [DownloadJob] = []
            var urls: [String] = []
            var uses: [Int] = []
            urls.reserveCapacity(jobs.count)
            uses.reserveCapacity(jobs.count)
            for job in jobs {
                var options = job
                options.url = ""
                // Runs, not a search: a list of n distinct jobs stays n comparisons.
                if shared.last != options { shared.append(options) }
                urls.append(job.url)
                uses.append(shared.count - 1)
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(shared, forKey: .shared)
            try container.encode(urls, forKey: .urls)
            if shared.count > 1 { try container.encode(uses, forKey: .uses) }
        }
    }

    package struct Added: Codable, Sendable, Equatable {
        package var id: DownloadID
        package var file: String

        package init(id: DownloadID, file: String) {
            self.id = id
            self.file = file
        }
    }

    package struct AddResponse: Codable, Sendable {
        package var added: [Added]

        package init(added: [Added]) { self.added = added }
    }

    /// The body of `POST /v1/downloads/{pause,resume,cancel,retry,remove}`: some ids, or all.
    package struct Selection: Codable, Sendable, Equatable {
        package var ids: [DownloadID]?
        package var all: Bool?
        /// With pause or cancel: answer once the stopped downloads' tasks have ended (checkpointed, their
        /// `.part` released), not as soon as they are told.
        package var wait: Bool?

        package init(ids: [DownloadID], wait: Bool? = nil) {
            self.ids = ids
            self.wait = wait
        }

        package init(all: Bool, wait: Bool? = nil) {
            self.all = all
            self.wait = wait
        }
    }

    /// The body of `POST /v1/downloads/move`: a waiting download and where it goes in the queue.
    package struct Move: Codable, Sendable, Equatable {
        package var id: DownloadID
        package var to: QueuePlace

        package init(id: DownloadID, to: QueuePlace) {
            self.id = id
            self.to = to
        }
    }

    /// The answer to a move: the download and its position in the waiting queue now (from 0).
    package struct Moved: Codable, Sendable, Equatable {
        package var id: DownloadID
        package var position: Int

        package init(id: DownloadID, position: Int) {
            self.id = id
            self.position = position
        }
    }

    /// What a command did: the ids it applied to.
    package struct Applied: Codable, Sendable, Equatable {
        package var ids: [DownloadID]

        package init(ids: [DownloadID]) { self.ids = ids }
    }

    /// Every error answer: one line for people, and the ids that were not known when that was the problem.
    package struct Failure: Codable, Sendable, Equatable, Error {
        package var error: String
        package var unknown: [DownloadID]?

        package init(error: String, unknown: [DownloadID]? = nil) {
            self.error = error
            self.unknown = unknown
        }
    }

    /// One download as `haul ls` and `GET /v1/downloads` show it.
    package struct Download: Codable, Sendable, Equatable {
        package var id: DownloadID
        /// Its password masked.
        var url: String
        /// Where the file is (or goes, without `.part`); the output directory and the name until the server
        /// has answered.
        package var file: String
        package var state: String
        package var completed: Int64
        /// nil while unknown.
        package var total: Int64?
        /// Bytes per second now; 0 unless downloading.
        package var speed: Double
        /// One line, when failed.
        package var error: String?
        package var category: String?
        /// What went wrong, as data (`FailureReason`'s word: "http-404", "file-not-found", "host-key-unknown"),
        /// when failed and known; nil otherwise.
        package var reason: String?
        /// ISO 8601.
        var added: String
        /// Seconds the finished download took.
        package var seconds: Double?
        /// The last thing that happened to it without stopping it.
        var fact: DownloadFact?
        /// The name alone, as the TUI shows it.
        package var name: String
        /// Its aria2 GID (16 hex digits), the name the JSON-RPC face knows it by; nil from an older service.
        var gid: String?
        /// Each of its sources, when it has more than one (mirrors); nil (left out) for a download from one.
        package var sources: [Source]?
        /// `rm --files` deleted what haul wrote for it (`true`; `false` otherwise, nil from an older service).
        package var removedWithFiles: Bool?
        /// The config file's category that placed its file (`[categories.NAME]`); nil for none. (`category` is
        /// older, and a failure's.)
        package var fileCategory: String?

        /// One source of a download, as `haul ls --json` shows it.
        package struct Source: Codable, Sendable, Equatable {
            /// Its password masked.
            package var url: String
            /// `SourceStatus.State`'s word: waiting, active, idle, failed, dropped.
            package var state: String
            package var bytes: Int64
            /// Bytes per second now.
            package var speed: Double
            package var connections: Int
            /// Why it failed or was dropped, one line; null otherwise.
            package var error: String?

            package init(_ status: SourceStatus) {
                url = status.url
                state = status.state.rawValue
                bytes = status.bytes
                speed = status.bytesPerSecond
                connections = status.connections
                error = status.reason
            }

            /// Every key, `error` as `null` when there is none.
            package func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(url, forKey: .url)
                try container.encode(state, forKey: .state)
                try container.encode(bytes, forKey: .bytes)
                try container.encode(speed.rounded(), forKey: .speed)
                try container.encode(connections, forKey: .connections)
                try container.encode(error, forKey: .error)
            }
        }

        private enum CodingKeys: String, CodingKey {
            case id, url, file, state, completed, total, speed, error, category, reason, added, seconds, fact, name, gid, sources
            case removedWithFiles, fileCategory
        }

        package init(id: DownloadID, url: String, file: String, state: String, completed: Int64, total: Int64?,
                     speed: Double, error: String?, category: String?, added: String, seconds: Double?,
                     fact: DownloadFact?, name: String, gid: String?, sources: [Source]? = nil, reason: String? = nil) {
            self.id = id
            self.url = url
            self.file = file
            self.state = state
            self.completed = completed
            self.total = total
            self.speed = speed
            self.error = error
            self.category = category
            self.reason = reason
            self.added = added
            self.seconds = seconds
            self.fact = fact
            self.name = name
            self.gid = gid
            self.sources = sources
        }

        /// Every key, an unknown value as `null` (scripts test `total == null`, not a missing key); `sources`
        /// only for a download from several.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(url, forKey: .url)
            try container.encode(file, forKey: .file)
            try container.encode(state, forKey: .state)
            try container.encode(completed, forKey: .completed)
            try container.encode(total, forKey: .total)
            try container.encode(speed.rounded(), forKey: .speed)
            try container.encode(error, forKey: .error)
            try container.encode(category, forKey: .category)
            try container.encode(reason, forKey: .reason)
            try container.encode(added, forKey: .added)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(fact, forKey: .fact)
            try container.encode(name, forKey: .name)
            try container.encode(gid, forKey: .gid)
            try container.encodeIfPresent(sources, forKey: .sources)
            try container.encode(removedWithFiles == true, forKey: .removedWithFiles)
            try container.encode(fileCategory, forKey: .fileCategory)
        }
    }

    /// `GET /v1/service/status`, and `haul service status --json`.
    package struct Status: Codable, Sendable, Equatable {
        package var running: Bool
        package var pid: Int32?
        package var socket: String
        package var downloads: Int
        package var active: Int
        package var attached: Int?
        package var version: String?
        /// The aria2 JSON-RPC face, when it listens.
        package var rpc: RPC?
        /// The overall receive cap in bytes per second, when there is one.
        package var limit: Int64?
        /// Downloads at once (`-j`), while a service runs.
        package var jobs: Int?
        /// Why the queue cannot be written now (its file read-only), in one line; absent when it can.
        package var store: String?
        /// Where the queue's schedule stands (`--schedule`, `--limit-schedule`); absent without one.
        package var schedule: ScheduleStatus?

        /// What to give an aria2 front end: the URL, and the file that holds the secret (never the secret).
        package struct RPC: Codable, Sendable, Equatable {
            package var url: String
            package var secretFile: String

            package init(url: String, secretFile: String) {
                self.url = url
                self.secretFile = secretFile
            }
        }

        private enum CodingKeys: String, CodingKey {
            case running, pid, socket, downloads, active, attached, version, rpc, limit, jobs, store, schedule
        }

        /// Every key; `pid` is `null` when no service runs.
        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(running, forKey: .running)
            try container.encode(pid, forKey: .pid)
            try container.encode(socket, forKey: .socket)
            try container.encode(downloads, forKey: .downloads)
            try container.encode(active, forKey: .active)
            try container.encode(attached, forKey: .attached)
            try container.encode(version, forKey: .version)
            try container.encodeIfPresent(rpc, forKey: .rpc)
            try container.encodeIfPresent(limit, forKey: .limit)
            try container.encodeIfPresent(jobs, forKey: .jobs)
            try container.encodeIfPresent(store, forKey: .store)
            try container.encodeIfPresent(schedule, forKey: .schedule)
        }

        package init(running: Bool, pid: Int32?, socket: String, downloads: Int, active: Int,
                    attached: Int? = nil, version: String? = nil) {
            self.running = running
            self.pid = pid
            self.socket = socket
            self.downloads = downloads
            self.active = active
            self.attached = attached
            self.version = version
        }
    }

    /// `POST /v1/downloads/limit`: these downloads' own cap, bytes per second; `null` lifts it.
    package struct DownloadLimit: Codable, Sendable, Equatable {
        package var ids: [DownloadID]
        package var limit: Int64?

        package init(ids: [DownloadID], limit: Int64?) {
            self.ids = ids
            self.limit = limit
        }
    }

    /// `POST /v1/limit`: the overall receive cap, bytes per second; `null` lifts it.
    /// `POST /v1/jobs`: downloads at once, from now on.
    package struct Jobs: Codable, Sendable, Equatable {
        package var jobs: Int

        package init(jobs: Int) {
            self.jobs = jobs
        }
    }

    package struct Limit: Codable, Sendable, Equatable {
        package var overall: Int64?

        package init(overall: Int64?) {
            self.overall = overall
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(overall, forKey: .overall)
        }

        private enum CodingKeys: String, CodingKey { case overall }
    }

    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// One JSON document, compact.
    package static func encode<T: Encodable>(_ value: T) -> Data {
        encode(value, with: encoder())
    }

    /// The same with an `encoder()` made once for many documents (a stream of events).
    package static func encode<T: Encodable>(_ value: T, with encoder: JSONEncoder) -> Data {
        // Encoding these plain documents cannot fail (no non-finite number is ever put in one).
        (try? encoder.encode(value)) ?? Data("null".utf8)
    }

    package static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }
}

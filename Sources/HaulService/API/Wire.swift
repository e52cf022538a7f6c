import Foundation
import HaulCore

/// The documents of the control API (docs/protocol.md), shared by the service and its clients.
public enum Wire {
    /// Raised when a change would break what a client of the previous version relies on.
    public static let protocolVersion = 1

    /// `GET /v1/hello`: who answers, so a client knows it speaks to a haul service it understands.
    public struct Hello: Codable, Sendable, Equatable {
        public var service = "haul"
        public var version = HaulVersion.string
        public var protocolVersion = Wire.protocolVersion
        public var pid: Int32
    }

    /// `POST /v1/downloads`.
    public struct AddRequest: Codable, Sendable {
        public var jobs: [DownloadJob]
        public init(jobs: [DownloadJob]) { self.jobs = jobs }
    }

    public struct Added: Codable, Sendable, Equatable {
        public var id: DownloadID
        public var file: String
    }

    public struct AddResponse: Codable, Sendable {
        public var added: [Added]
    }

    /// The body of `POST /v1/downloads/{pause,resume,cancel,retry,remove}`: some ids, or all.
    public struct Selection: Codable, Sendable, Equatable {
        public var ids: [DownloadID]?
        public var all: Bool?
        /// With pause or cancel: answer once the stopped downloads' tasks have ended (checkpointed, their
        /// `.part` released), not as soon as they are told.
        public var wait: Bool?

        public init(ids: [DownloadID], wait: Bool? = nil) {
            self.ids = ids
            self.wait = wait
        }

        public init(all: Bool, wait: Bool? = nil) {
            self.all = all
            self.wait = wait
        }
    }

    /// What a command did: the ids it applied to.
    public struct Applied: Codable, Sendable, Equatable {
        public var ids: [DownloadID]

        public init(ids: [DownloadID]) { self.ids = ids }
    }

    /// Every error answer: one line for people, and the ids that were not known when that was the problem.
    public struct Failure: Codable, Sendable, Equatable, Error {
        public var error: String
        public var unknown: [DownloadID]?

        public init(error: String, unknown: [DownloadID]? = nil) {
            self.error = error
            self.unknown = unknown
        }
    }

    /// One download as `haul ls` and `GET /v1/downloads` show it.
    public struct Download: Codable, Sendable, Equatable {
        public var id: DownloadID
        /// Its password masked.
        public var url: String
        /// Where the file is (or goes, without `.part`); the output directory and the name until the server
        /// has answered.
        public var file: String
        public var state: String
        public var completed: Int64
        /// nil while unknown.
        public var total: Int64?
        /// Bytes per second now; 0 unless downloading.
        public var speed: Double
        /// One line, when failed.
        public var error: String?
        public var category: String?
        /// ISO 8601.
        public var added: String
        /// Seconds the finished download took.
        public var seconds: Double?
        /// The last thing that happened to it without stopping it.
        public var fact: DownloadFact?
        /// The name alone, as the TUI shows it.
        public var name: String

        private enum CodingKeys: String, CodingKey {
            case id, url, file, state, completed, total, speed, error, category, added, seconds, fact, name
        }

        /// Every key, an unknown value as `null` (scripts test `total == null`, not a missing key).
        public func encode(to encoder: any Encoder) throws {
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
            try container.encode(added, forKey: .added)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(fact, forKey: .fact)
            try container.encode(name, forKey: .name)
        }
    }

    /// `GET /v1/service/status`, and `haul service status --json`.
    public struct Status: Codable, Sendable, Equatable {
        public var running: Bool
        public var pid: Int32?
        public var socket: String
        public var downloads: Int
        public var active: Int
        public var attached: Int?
        public var version: String?

        private enum CodingKeys: String, CodingKey {
            case running, pid, socket, downloads, active, attached, version
        }

        /// Every key; `pid` is `null` when no service runs.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(running, forKey: .running)
            try container.encode(pid, forKey: .pid)
            try container.encode(socket, forKey: .socket)
            try container.encode(downloads, forKey: .downloads)
            try container.encode(active, forKey: .active)
            try container.encode(attached, forKey: .attached)
            try container.encode(version, forKey: .version)
        }

        public init(running: Bool, pid: Int32?, socket: String, downloads: Int, active: Int,
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

    /// One event of `GET /v1/events`, a server-sent event's `data`: the engine's `ManagerEvent` as a flat
    /// object. `event` says which; the fields that do not belong to it are absent.
    public struct Event: Codable, Sendable, Equatable {
        public var event: String
        public var id: DownloadID
        public var url: String?
        public var file: String?
        public var path: String?
        public var total: Int64?
        public var state: String?
        public var error: HaulError?
        public var completed: Int64?
        public var batch: Int64?
        public var rate: Double?
        public var fact: DownloadFact?
        public var bytes: Int64?
        public var skipped: Bool?
        public var seconds: Double?

        init(_ event: String, _ id: DownloadID) {
            self.event = event
            self.id = id
        }

        /// The wire form of a manager event.
        public init(_ managerEvent: ManagerEvent) {
            switch managerEvent {
            case .added(let id, let url, let file):
                self.init("added", id)
                self.url = url
                self.file = file
            case .state(let id, let state):
                self.init("state", id)
                self.state = state.name
                if case .failed(let failure) = state { error = failure }
            case .started(let id, let file, let path, let total):
                self.init("started", id)
                self.file = file
                self.path = path
                self.total = total
            case .progress(let id, let progress):
                self.init("progress", id)
                completed = progress.completed
                batch = progress.batchBytes
                total = progress.total
                rate = progress.bytesPerSecond
            case .fact(let id, let fact):
                self.init("fact", id)
                self.fact = fact
            case .finished(let id, let result, let seconds):
                self.init("finished", id)
                file = result.file
                path = result.path
                bytes = result.bytes
                skipped = result.skipped
                self.seconds = seconds
            case .removed(let id):
                self.init("removed", id)
            }
        }

        /// The manager event it stands for; nil for one this version does not know (a newer service's).
        public var managerEvent: ManagerEvent? {
            switch event {
            case "added": return .added(id: id, url: url ?? "", file: file ?? "")
            case "state": return state.flatMap { DownloadState(name: $0, error: error) }.map { .state(id: id, $0) }
            case "started": return .started(id: id, file: file ?? "", path: path ?? "", total: total)
            case "progress":
                return .progress(id: id, DownloadProgress(completed: completed ?? 0, batchBytes: batch ?? 0,
                                                          total: total, bytesPerSecond: rate ?? 0))
            case "fact": return fact.map { .fact(id: id, $0) }
            case "finished":
                return .finished(id: id, DownloadResult(file: file ?? "", path: path ?? "", bytes: bytes ?? 0,
                                                        skipped: skipped ?? false), seconds: seconds ?? 0)
            case "removed": return .removed(id: id)
            default: return nil
            }
        }
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// One JSON document, compact.
    public static func encode<T: Encodable>(_ value: T) -> Data {
        // Encoding these plain documents cannot fail (no non-finite number is ever put in one).
        (try? encoder().encode(value)) ?? Data("null".utf8)
    }

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }
}

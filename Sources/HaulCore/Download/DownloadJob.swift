/// One URL to fetch and where its file goes.
package struct DownloadJob: Sendable, Equatable, Codable {
    package var url: String
    /// Created if missing.
    package var outputDirectory: String
    /// `-O`: the file name to use instead of the server's, in `outputDirectory`: a plain name (no `/`, not
    /// `.` or `..`), or the download fails with a usage error.
    package var outputName: String?
    package var existingFile = ExistingFilePolicy.rename
    /// Extra request headers, "Name: value".
    package var headers: [String] = []
    package var transfer = TransferOptions()
    /// Connections for this file (Range requests), 1...16.
    package var segments = DownloadJob.defaultSegments
    /// Retries on transient errors, each resuming where the last attempt stopped.
    package var retries = DownloadJob.defaultRetries

    /// The defaults the command line shows and a stored job without these fields takes.
    package static let defaultSegments = 1
    package static let defaultRetries = 5
    /// Continue from `NAME.part` and its state file when they match this URL.
    package var resume = true
    /// A cancelled JPEG leaves `STEM.partial.EXT` (`--no-partial-preview` turns this off).
    package var partialPreview = true
    /// Verify the finished file before it takes its name.
    package var checksum: Checksum?
    /// Run when the download is done (`--on-complete`), or has failed (`--on-error`; not when cancelled).
    package var onComplete: Hook?
    package var onError: Hook?
    /// `-N`: when the file exists, ask the server only for a newer one (`If-Modified-Since` its mtime), and
    /// replace it with that; a `304` keeps it.
    package var timestamping = false
    /// The finished file takes the server's `Last-Modified` as its mtime (`--no-remote-time` turns it off).
    package var remoteTime = true
    /// The finished file is synced before it takes its name, and the directory after (the default).
    /// `--no-sync` turns both off: the name comes at once, and a power loss or system crash soon after may
    /// leave the named file short or empty (haul itself stopping loses nothing: every byte was handed to the
    /// kernel). The resume state's checkpoints stay durable either way.
    package var sync = true

    /// A directory `outputDirectory` must lie in, reached from it with no symbolic link followed (an RPC
    /// `dir`, checked against the allowed roots when the download was added: a link swapped in below the
    /// root before the download starts must not lead it elsewhere). nil: the path is opened as it is.
    package var confinedTo: String?

    package init(url: String, outputDirectory: String, outputName: String? = nil) {
        self.url = url
        self.outputDirectory = outputDirectory
        self.outputName = outputName
    }

    private enum CodingKeys: String, CodingKey {
        case url, outputDirectory, outputName, existingFile, headers, transfer, segments, retries, resume,
            partialPreview, checksum, onComplete, onError, timestamping, remoteTime, sync, confinedTo
    }

    /// A job stored by an older haul, or sent by an older client, lacks the options added since: they take
    /// their defaults. `url` and `outputDirectory` are required.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(url: try container.decode(String.self, forKey: .url),
                  outputDirectory: try container.decode(String.self, forKey: .outputDirectory),
                  outputName: try container.decodeIfPresent(String.self, forKey: .outputName))
        let defaults = DownloadJob(url: url, outputDirectory: outputDirectory)
        existingFile = try container.decodeIfPresent(ExistingFilePolicy.self, forKey: .existingFile) ?? defaults.existingFile
        headers = try container.decodeIfPresent([String].self, forKey: .headers) ?? defaults.headers
        transfer = try container.decodeIfPresent(TransferOptions.self, forKey: .transfer) ?? defaults.transfer
        segments = try container.decodeIfPresent(Int.self, forKey: .segments) ?? defaults.segments
        retries = try container.decodeIfPresent(Int.self, forKey: .retries) ?? defaults.retries
        resume = try container.decodeIfPresent(Bool.self, forKey: .resume) ?? defaults.resume
        partialPreview = try container.decodeIfPresent(Bool.self, forKey: .partialPreview) ?? defaults.partialPreview
        checksum = try container.decodeIfPresent(Checksum.self, forKey: .checksum)
        onComplete = try container.decodeIfPresent(Hook.self, forKey: .onComplete)
        onError = try container.decodeIfPresent(Hook.self, forKey: .onError)
        timestamping = try container.decodeIfPresent(Bool.self, forKey: .timestamping) ?? false
        remoteTime = try container.decodeIfPresent(Bool.self, forKey: .remoteTime) ?? true
        sync = try container.decodeIfPresent(Bool.self, forKey: .sync) ?? true
        confinedTo = try container.decodeIfPresent(String.self, forKey: .confinedTo)
    }
}

/// What a download tells its reporter while it runs.
package enum DownloadEvent: Sendable, Equatable {
    /// The server answered and the file name is settled; bytes go to `path` + ".part", the file `part`
    /// names (`PartFile.identity`: it keeps the identity when it takes its name).
    case started(file: String, path: String, total: Int64?, part: String?)
    case progress(DownloadProgress)
    /// Something the user should know that does not stop the download.
    case fact(DownloadFact)
}

/// An expected digest (`--checksum ALGO=HEX`).
package struct Checksum: Sendable, Equatable, Codable {
    package var algorithm: FileDigest.Algorithm
    /// Lower-case hex.
    package var hex: String

    /// Parses `sha512=HEX`, `sha256=HEX`, `sha1=HEX` or `md5=HEX` (also as aria2 spells them: `sha-256=HEX`,
    /// `sha-1=HEX`);
    /// nil with a reason otherwise.
    package static func parse(_ text: String) -> Result<Checksum, HaulError> {
        parsed(text).mapError { HaulError(.usage, $0.words(option: "--checksum")) }
    }

    /// Why a `ALGO=HEX` is no checksum, as data: each place that reads one words it its own way.
    package enum Problem: Error, Equatable {
        case unknownAlgorithm
        case wrongLength(FileDigest.Algorithm)

        /// Said of `option` ("--checksum"; "it" for an input file's `checksum=`): "OPTION wants sha512=HEX,
        /// ...", "OPTION: a sha256 digest is 64 hex digits".
        package func words(option: String) -> String {
            switch self {
            case .unknownAlgorithm: "\(option) wants sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX"
            case .wrongLength: "\(option): " + phrase
            }
        }

        /// The digest's length without an option's name ("a sha256 digest is 64 hex digits").
        var phrase: String {
            switch self {
            case .unknownAlgorithm: words(option: "--checksum")
            case .wrongLength(let algorithm): "a \(algorithm.rawValue) digest is \(algorithm.hexLength) hex digits"
            }
        }
    }

    /// `parse` with the problem as data.
    package static func parsed(_ text: String) -> Result<Checksum, Problem> {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        let name = parts.first?.lowercased().replacing("-", with: "") ?? ""
        guard parts.count == 2, let algorithm = FileDigest.Algorithm(rawValue: name) else {
            return .failure(.unknownAlgorithm)
        }
        let hex = parts[1].lowercased()
        // On the bytes: Character.isHexDigit also takes the fullwidth forms ("\u{FF41}"), which no digest holds.
        let hexDigits = { (byte: UInt8) in (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) }
        guard hex.utf8.count == algorithm.hexLength, hex.utf8.allSatisfy(hexDigits) else {
            return .failure(.wrongLength(algorithm))
        }
        return .success(Checksum(algorithm: algorithm, hex: hex))
    }
}

extension DownloadJob {
    /// The name its file is planned under until the server answers (`-O`, or the URL's last segment made safe):
    /// what the queue and the screen show meanwhile, and what names a checksum list's entry.
    package var plannedName: String {
        outputName ?? FileNaming.sanitize(FileNaming.lastPathSegment(of: url))
    }
}

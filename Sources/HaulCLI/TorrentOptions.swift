import ArgumentParser
import HaulCore
import HaulTorrent

/// The options of a torrent or magnet download (`haul FILE.torrent`, `haul 'magnet:?...'`).
struct TorrentOptions: ParsableArguments {
    @Option(name: .customLong("select-file"), help: ArgumentHelp(
        "Download only these files of a torrent, by their 1-based numbers in its list: 1,3-5 (aria2's syntax).",
        valueName: "list"))
    var selectFile: String?

    @Option(name: .customLong("bt-tracker"), help: ArgumentHelp(
        "Announce a torrent to this tracker too (repeatable).", valueName: "url"))
    var trackers: [String] = []

    @Option(name: .customLong("bt-listen-port"), help: ArgumentHelp(
        "Port to take BitTorrent peers' connections on, 0 for any free one (default 6881, or the next free one).",
        valueName: "n"))
    var listenPort: Int?

    @Option(name: .customLong("bt-max-peers"), help: ArgumentHelp("Most peer connections (default: libtorrent's, 200).", valueName: "n"))
    var maxPeers: Int?

    @Option(name: .customLong("bt-metadata-timeout"), help: ArgumentHelp(
        "Seconds a magnet may wait for its peers to send the torrent's file list before it fails (default 180).",
        valueName: "seconds"))
    var metadataTimeout: Double?

    @Option(name: .customLong("seed-ratio"), help: ArgumentHelp(
        "Once a torrent's files are verified, send its pieces to other peers until it has sent this many times their size (default 1.0; 0: no ratio bound, as aria2).",
        valueName: "ratio"))
    var seedRatio: Double?

    @Option(name: .customLong("seed-time"), help: ArgumentHelp(
        "Seed a finished torrent for at most this many minutes (0: do not seed); with --seed-ratio, whichever comes first.",
        valueName: "minutes"))
    var seedTime: Double?

    @Option(name: .customLong("max-upload-limit"), help: ArgumentHelp(
        "Overall upload rate cap for torrents, e.g. 500K, 2M (default: none).", valueName: "rate"))
    var maxUploadLimit: String?

    @Flag(name: .customLong("no-dht"), help: "Find no torrent peers through the DHT.")
    var noDHT = false

    @Flag(name: .customLong("no-pex"), help: "Exchange no peer lists with a torrent's peers (PEX).")
    var noPEX = false

    @Flag(name: .customLong("no-lpd"), help: "Look for no torrent peers on the local network (local peer discovery).")
    var noLPD = false

    @Flag(name: .customLong("no-port-mapping"), help: "Ask the router for no port (UPnP, NAT-PMP) for torrent peers.")
    var noPortMapping = false

    func validate() throws {
        if let selectFile, case .failure(let error) = FileSelection.parse(selectFile) { throw ValidationError(error.message) }
        if let listenPort { try Limits.check("--bt-listen-port", listenPort, 0...65535) }
        if let maxPeers { try Limits.check("--bt-max-peers", maxPeers, 1...65535) }
        if let seedRatio, !(0...1_000_000).contains(seedRatio) {
            throw ValidationError("--seed-ratio must be from 0 to 1000000, not \(seedRatio)")
        }
        if let seedTime, !(0...43_200_000).contains(seedTime) {
            throw ValidationError("--seed-time must be from 0 to 43200000 minutes, not \(seedTime)")
        }
        if let maxUploadLimit, RateLimit.parse(maxUploadLimit) == nil {
            throw ValidationError("--max-upload-limit: '\(maxUploadLimit)' is not a rate such as 500K or 2M, from 1 (byte/s) to 1024G")
        }
        if let metadataTimeout, !Limits.seconds.contains(metadataTimeout) {
            throw ValidationError("--bt-metadata-timeout must be from 0.1 to 2592000 seconds (30 days), not \(metadataTimeout)")
        }
    }

    /// The session's settings; `interface` (`--interface`, an address) is the one it listens and connects on.
    func sessionOptions(interface: String?, downloadRate: Int64?) -> TorrentSessionOptions {
        var options = TorrentSessionOptions()
        options.downloadRateLimit = Int(clamping: downloadRate ?? 0)
        options.uploadRateLimit = Int(clamping: maxUploadLimit.flatMap(RateLimit.parse) ?? 0)
        let port = listenPort ?? 6881
        if let interface {
            options.listenInterfaces = (interface.contains(":") ? "[\(interface)]" : interface) + ":\(port)"
            options.outgoingInterfaces = interface
            // On loopback every peer has the same address: one connection per address would leave one peer.
            options.allowSameAddress = interface.hasPrefix("127.") || interface == "::1"
        } else {
            options.listenInterfaces = "0.0.0.0:\(port),[::]:\(port)"
        }
        options.dht = !noDHT
        options.pex = !noPEX
        options.localDiscovery = !noLPD
        options.upnp = !noPortMapping
        options.natPMP = !noPortMapping
        options.maxConnections = maxPeers ?? 0
        return options
    }

    /// When a finished torrent stops seeding, as aria2 has it: `--seed-time 0` not at all; a ratio of 0 is no
    /// ratio bound; with neither given, ratio 1.0.
    var seeding: TorrentJob.Seeding {
        if let seedTime, seedTime == 0 { return .none }
        let ratio = seedRatio ?? (seedTime == nil ? 1.0 : nil)
        return TorrentJob.Seeding(ratio: ratio.flatMap { $0 > 0 ? $0 : nil },
                                  time: seedTime.map { .milliseconds(Int64(($0 * 60_000).rounded())) })
    }
}

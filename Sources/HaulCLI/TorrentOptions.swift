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

    @OptionGroup var session: TorrentSessionSettings

    func validate() throws {
        if let selectFile, case .failure(let error) = FileSelection.parse(selectFile) { throw ValidationError(error.message) }
        if let seedRatio, !(0...1_000_000).contains(seedRatio) {
            throw ValidationError("--seed-ratio must be from 0 to 1000000, not \(seedRatio)")
        }
        if let seedTime, !(0...43_200_000).contains(seedTime) {
            throw ValidationError("--seed-time must be from 0 to 43200000 minutes, not \(seedTime)")
        }
        if let metadataTimeout, !Limits.seconds.contains(metadataTimeout) {
            throw ValidationError("--bt-metadata-timeout must be from 0.1 to 2592000 seconds (30 days), not \(metadataTimeout)")
        }
    }

    /// The session's settings (`TorrentSessionSettings`).
    func sessionOptions(interface: String?, downloadRate: Int64?) -> TorrentSessionOptions {
        session.options(interface: interface, downloadRate: downloadRate)
    }

    /// When a finished torrent stops seeding, as aria2 has it: `--seed-time 0` not at all; a ratio of 0 is no
    /// ratio bound; with neither given, ratio 1.0.
    var seeding: TorrentJob.Seeding { .given(ratio: seedRatio, minutes: seedTime) }

    /// These options for a queue's job (`DownloadJob.torrent`), its source still to be set.
    var spec: TorrentSpec {
        TorrentSpec(selection: selectFile, trackers: trackers, seedRatio: seedRatio, seedMinutes: seedTime,
                    metadataTimeout: metadataTimeout)
    }
}

/// The settings of a libtorrent session: a plain run's, and the service's (`haul service start`).
package struct TorrentSessionSettings: ParsableArguments {
    package init() {}

    @Option(name: .customLong("bt-listen-port"), help: ArgumentHelp(
        "Port to take BitTorrent peers' connections on, 0 for any free one (default 6881, or the next free one).",
        valueName: "n"))
    var listenPort: Int?

    @Option(name: .customLong("bt-max-peers"), help: ArgumentHelp("Most peer connections (default: libtorrent's, 200).", valueName: "n"))
    var maxPeers: Int?

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

    package func validate() throws {
        if let listenPort { try Limits.check("--bt-listen-port", listenPort, 0...65535) }
        if let maxPeers { try Limits.check("--bt-max-peers", maxPeers, 1...65535) }
        if let maxUploadLimit, RateLimit.parse(maxUploadLimit) == nil {
            throw ValidationError("--max-upload-limit: '\(maxUploadLimit)' is not a rate such as 500K or 2M, from 1 (byte/s) to 1024G")
        }
    }

    /// The session's settings; `interface` (`--interface`, an address) is the one it listens and connects on.
    package func options(interface: String?, downloadRate: Int64?) -> TorrentSessionOptions {
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

    /// The arguments that give these settings to `haul service run`.
    var arguments: [String] {
        var list: [String] = []
        if let listenPort { list += ["--bt-listen-port", String(listenPort)] }
        if let maxPeers { list += ["--bt-max-peers", String(maxPeers)] }
        if let maxUploadLimit { list += ["--max-upload-limit", maxUploadLimit] }
        if noDHT { list.append("--no-dht") }
        if noPEX { list.append("--no-pex") }
        if noLPD { list.append("--no-lpd") }
        if noPortMapping { list.append("--no-port-mapping") }
        return list
    }
}

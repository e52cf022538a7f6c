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
        if let metadataTimeout, !Limits.seconds.contains(metadataTimeout) {
            throw ValidationError("--bt-metadata-timeout must be from 0.1 to 2592000 seconds (30 days), not \(metadataTimeout)")
        }
    }

    /// The session's settings; `interface` (`--interface`, an address) is the one it listens and connects on.
    func sessionOptions(interface: String?) -> TorrentSessionOptions {
        var options = TorrentSessionOptions()
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
}

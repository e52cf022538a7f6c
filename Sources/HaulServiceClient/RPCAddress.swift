import HaulCore

/// The address of `--rpc-listen`, read the same way by the command line (which checks it) and the service.
package enum RPCAddress {
    /// Parses `ADDR:PORT` (`127.0.0.1:6800`, `[::1]:6800`, `localhost:6800`); nil with the reason.
    package static func listenAddress(_ text: String) -> Result<(host: String, port: Int), HaulError> {
        let problem = HaulError(.usage, "--rpc-listen wants ADDRESS:PORT such as 127.0.0.1:6800, not '\(text)'")
        guard let colon = text.lastIndex(of: ":") else { return .failure(problem) }
        var host = String(text[..<colon])
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port), !host.isEmpty else {
            return .failure(problem)
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return .success((host, port))
    }

    /// 127.0.0.0/8, ::1 and localhost.
    package static func isLoopback(_ host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower == "::1" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

import Foundation
import HaulCore
import NIOSSL

/// How the aria2 JSON-RPC face listens and what it allows (`haul service start --rpc-listen ...`).
package struct RPCConfiguration: Sendable, Equatable {
    /// A loopback address unless `allowRemote`.
    var host: String
    /// 0: the kernel picks one (tests); `haul service status` shows the real one.
    var port: Int
    /// The file that holds the secret; `STATE/rpc-secret` (made on first use) unless given.
    var secretFile: String
    /// Where a download without `dir` goes.
    var outputDirectory: String
    /// `dir` must lie under one of these; the output directory when empty.
    package var allowedDirectories: [String] = []
    /// Web origins (`https://ariang.example`, `null`) allowed besides none and browser extensions.
    package var allowedOrigins: [String] = []
    /// Listening on other than loopback needs this.
    package var allowRemote = false
    /// PEM files of a certificate chain and its private key: the face speaks HTTPS and WSS (aria2's
    /// `--rpc-secure`). Without them the transport is plaintext.
    package var certificateFile: String?
    package var privateKeyFile: String?

    /// `http` or `https`.
    var scheme: String { certificateFile == nil ? "http" : "https" }

    /// The TLS configuration of the certificate and key, read and checked now; nil without them.
    package func tls() throws(HaulError) -> TLSConfiguration? {
        guard let certificateFile, let privateKeyFile else { return nil }
        try Self.checkPrivateKeyFile(privateKeyFile)
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw HaulError(.usage, "--rpc-certificate \(certificateFile): not a PEM certificate (\(error))")
        }
        guard !chain.isEmpty else { throw HaulError(.usage, "--rpc-certificate \(certificateFile): no certificate in it") }
        do {
            key = try NIOSSLPrivateKey(file: privateKeyFile, format: .pem)
        } catch {
            throw HaulError(.usage, "--rpc-private-key \(privateKeyFile): not a PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        // A key that is not the certificate's is found now, not at the first client's handshake.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw HaulError(.usage, "--rpc-private-key \(privateKeyFile) does not go with --rpc-certificate \(certificateFile) (\(error))")
        }
        return configuration
    }

    /// The private key must be the user's alone, as ssh wants its keys: a regular file no one else may read.
    private static func checkPrivateKeyFile(_ path: String) throws(HaulError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw HaulError(.usage, "--rpc-private-key \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw HaulError(.usage, "--rpc-private-key \(path): not a regular file") }
        if info.st_mode & 0o077 != 0 {
            throw HaulError(.usage, "--rpc-private-key \(path) may be read by other users; `chmod 600` it")
        }
    }

    package init(host: String, port: Int, secretFile: String, outputDirectory: String) {
        self.host = host
        self.port = port
        self.secretFile = secretFile
        self.outputDirectory = outputDirectory
    }

    /// Where to download and what `dir` may name.
    var paths: Aria2Paths {
        Aria2Paths(base: outputDirectory, roots: allowedDirectories)
    }
}

/// The aria2 face's secret: read from its file, or made once (random, hex) and kept 0600. Compared in
/// constant time.
struct RPCSecret: Sendable {
    private let bytes: [UInt8]

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    /// Reads `path`; when it is the state directory's own file and absent, makes it. The file must be a
    /// regular file (a link is not followed) and not empty.
    static func load(_ path: String, create: Bool) throws(HaulError) -> RPCSecret {
        if create {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 {
                var generator = SystemRandomNumberGenerator()
                let secret = (0..<4).map { _ in
                    let hex = String(generator.next() as UInt64, radix: 16)
                    return String(repeating: "0", count: 16 - hex.count) + hex
                }.joined() + "\n"
                let written = secret.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, secret.utf8.count) }
                let synced = fsync(fd) == 0
                close(fd)
                guard written == secret.utf8.count, synced else {
                    unlink(path)
                    throw HaulError(.fileIO, "cannot write the RPC secret to \(path)")
                }
            } else if errno != EEXIST {
                throw HaulError(.fileIO, "cannot create the RPC secret file \(path): \(String(cString: strerror(errno)))")
            }
        }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw HaulError(.fileIO, "cannot read the RPC secret file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 4096 else {
            throw HaulError(.usage, "the RPC secret file \(path) is not a small regular file")
        }
        // As with the TLS key: a secret other users may read or change is no secret.
        guard info.st_mode & 0o077 == 0 else {
            throw HaulError(.usage, "the RPC secret file \(path) has mode \(String(info.st_mode & 0o777, radix: 8)), "
                            + "others may read it; make it 600 (chmod 600)")
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { throw HaulError(.usage, "the RPC secret file \(path) is empty") }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw HaulError(.usage, "the RPC secret file \(path) is empty") }
        return RPCSecret(text)
    }

    /// Constant time in the length of the secret: every byte is compared, whatever differs first.
    func matches(_ candidate: String) -> Bool {
        let given = Array(candidate.utf8)
        var difference = UInt8(given.count == bytes.count ? 0 : 1)
        for index in 0..<bytes.count {
            difference |= bytes[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }
}

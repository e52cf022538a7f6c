import Foundation
import SampleServer
import Testing
import TestSupport

/// vsftpd from Debian, in its inetd mode (`listen=NO`): the test holds a loopback listener and starts one
/// vsftpd for each connection, its control connection on standard input and output. So the port is known
/// before anything connects and nothing waits for a server to start. Anonymous logins only, chrooted to
/// `root` (which needs root: `unavailable` says so elsewhere); a named user gets 530.
final class Vsftpd: Sendable {
    enum Security: Sendable {
        case plain
        /// `ftps://`: TLS from the first byte.
        case implicitTLS
        /// `ftp://` with AUTH TLS, which this server demands of every login and transfer.
        case explicitTLS
    }

    /// Why these tests cannot run here, or nil.
    static var unavailable: String? {
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/vsftpd") {
            return "vsftpd is not installed (make deps installs it)"
        }
        if geteuid() != 0 { return "vsftpd's anonymous chroot needs root, and these tests run as uid \(geteuid())" }
        return nil
    }

    let port: Int
    /// The served directory: what is there is at `url(NAME)`.
    let root: String
    private let dir: TempDirectory
    private let listener: Int32
    private let servers: ServerProcesses

    init(_ security: Security = .plain, certificate: (String, String)? = nil) throws {
        dir = TempDirectory()
        root = dir.file("root")
        let empty = dir.file("empty")
        for path in [root, empty] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        }
        var config = """
            listen=NO
            listen_ipv6=NO
            anonymous_enable=YES
            local_enable=NO
            write_enable=NO
            anon_root=\(root)
            no_anon_password=YES
            ftp_username=nobody
            seccomp_sandbox=NO
            secure_chroot_dir=\(empty)
            xferlog_enable=YES
            xferlog_std_format=NO
            log_ftp_protocol=YES
            vsftpd_log_file=\(dir.file("vsftpd.log"))

            """
        if security != .plain, let (certificate, key) = certificate {
            // vsftpd 3.0.3's default ciphers are ones OpenSSL 3 no longer offers; curl starts a TLS session on
            // each data connection without resuming the control connection's.
            config += """
                ssl_enable=YES
                rsa_cert_file=\(certificate)
                rsa_private_key_file=\(key)
                allow_anon_ssl=YES
                force_anon_logins_ssl=YES
                force_anon_data_ssl=YES
                ssl_ciphers=HIGH
                require_ssl_reuse=NO
                implicit_ssl=\(security == .implicitTLS ? "YES" : "NO")

                """
        }
        try Data(config.utf8).write(to: URL(fileURLWithPath: dir.file("vsftpd.conf")))
        (listener, port) = try loopbackListener()
        servers = ServerProcesses()
        let (listener, servers, configPath) = (listener, servers, dir.file("vsftpd.conf"))
        let errors = open(dir.file("stderr"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        Thread.detachNewThread {
            defer { close(errors) }
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if let server = try? ServerProcess(["/usr/sbin/vsftpd", configPath], socket: connection, errors: errors) {
                    servers.add(server)
                }
                close(connection)
            }
        }
    }

    func url(_ name: String, scheme: String = "ftp", login: String = "") -> String {
        "\(scheme)://\(login)127.0.0.1:\(port)/\(name)"
    }

    /// Writes a served file (readable by vsftpd's unprivileged user).
    func serve(_ name: String, _ bytes: [UInt8]) throws {
        let path = root + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
    }

    /// The FTP commands the clients sent so far, in order (`REST 1048576`, `RETR big.bin`, ...).
    var commands: [String] {
        let log = (try? String(contentsOfFile: dir.file("vsftpd.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let start = line.range(of: "FTP command: Client \"127.0.0.1\", \"") else { return nil }
            return String(line[start.upperBound...].dropLast())
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        servers.stopAll()
    }

    deinit { stop() }
}

/// The processes a test's server started, stopped with it.
final class ServerProcesses: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var processes: [ServerProcess] = []

    func add(_ process: ServerProcess) { lock.withLock { processes.append(process) } }

    func stopAll() {
        for process in lock.withLock({ processes }) { process.stop() }
    }
}

/// OpenSSH's sshd in the foreground on a free loopback port, with a host key made for the test, one client
/// key it authorizes (in `home`'s `.ssh`, which haul is given as its HOME).
final class Sshd: Sendable {
    static var unavailable: String? {
        for tool in ["/usr/sbin/sshd", "/usr/bin/ssh-keygen"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is not installed (make deps installs openssh-server and openssh-client)"
        }
        return nil
    }

    let port: Int
    /// The HOME haul runs with: `.ssh/id_ed25519` (authorized), `.ssh/known_hosts` (see `trust`).
    let home: String
    /// Served files are here; `url` names them by this absolute path.
    let root: String
    /// The host key's line for known_hosts (`ssh-ed25519 AAAA...`) and its fingerprint (`SHA256:...`).
    let hostKey: String
    let fingerprint: String
    private let dir: TempDirectory
    private let process: ServerProcess
    /// sshd's output (kept: its reader lives as long as the server).
    private let log: LineCollector

    private init(port: Int, home: String, root: String, hostKey: String, fingerprint: String, dir: TempDirectory,
                 process: ServerProcess, log: LineCollector) {
        (self.port, self.home, self.root, self.hostKey, self.fingerprint) = (port, home, root, hostKey, fingerprint)
        (self.dir, self.process, self.log) = (dir, process, log)
    }

    static func start() async throws -> Sshd {
        let dir = TempDirectory()
        let home = dir.file("home")
        let root = dir.file("files")
        for path in [home + "/.ssh", root] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        // sshd refuses to start as root without its privilege separation directory, which only its
        // service's start makes.
        if geteuid() == 0, !FileManager.default.fileExists(atPath: "/run/sshd") {
            try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        }
        for key in [dir.file("host_key"), home + "/.ssh/id_ed25519"] {
            let made = try await runProcess(["/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", key])
            try #require(made.status == 0, "ssh-keygen: \(made.output)")
        }
        try FileManager.default.copyItem(atPath: home + "/.ssh/id_ed25519.pub", toPath: dir.file("authorized_keys"))
        let listed = try await runProcess(["/usr/bin/ssh-keygen", "-l", "-f", dir.file("host_key.pub")])
        let fingerprint = String(listed.output.split(separator: " ")[1])
        let publicKey = try String(contentsOfFile: dir.file("host_key.pub"), encoding: .utf8)
        let hostKey = publicKey.split(separator: " ").prefix(2).joined(separator: " ")
        try Data("""
            ListenAddress 127.0.0.1
            HostKey \(dir.file("host_key"))
            AuthorizedKeysFile \(dir.file("authorized_keys"))
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            UsePAM no
            StrictModes no
            PidFile none
            Subsystem sftp internal-sftp

            """.utf8).write(to: URL(fileURLWithPath: dir.file("sshd_config")))
        // The port is free when asked, but sshd binds it a moment later: a test beside this one may take it
        // first (sshd then says "Bind to port ... failed" and ends), and the next port is tried.
        var attempt = 0
        while true {
            attempt += 1
            let port = try freeLoopbackPort()
            let errors = Pipe()
            let process = try ServerProcess(["/usr/sbin/sshd", "-D", "-e", "-f", dir.file("sshd_config"), "-p", "\(port)"],
                                            errors: errors.fileHandleForWriting.fileDescriptor)
            try errors.fileHandleForWriting.close()
            let log = LineCollector(errors.fileHandleForReading)
            let listening = try await log.first("sshd to listen", within: 30) { $0.hasPrefix("Server listening on") }
            guard listening != nil else {
                process.stop()
                let taken = log.lines.contains { $0.contains("Bind to port") || $0.contains("Cannot bind any address") }
                try #require(taken && attempt < 5, "sshd did not start: \(log.lines.suffix(10))")
                continue
            }
            let sshd = Sshd(port: port, home: home, root: root, hostKey: hostKey, fingerprint: fingerprint, dir: dir,
                            process: process, log: log)
            sshd.trust(sshd.knownHostsLine)
            return sshd
        }
    }

    /// known_hosts's line for this server's key: OpenSSH writes `[HOST]:PORT` for a port that is not 22.
    var knownHostsLine: String { "[127.0.0.1]:\(port) \(hostKey)" }

    /// Makes `lines` haul's `~/.ssh/known_hosts`.
    func trust(_ lines: String...) {
        _ = FileManager.default.createFile(atPath: home + "/.ssh/known_hosts",
                                           contents: Data(lines.map { $0 + "\n" }.joined().utf8))
    }

    func url(_ name: String, scheme: String = "sftp") -> String { "\(scheme)://127.0.0.1:\(port)\(root)/\(name)" }

    func serve(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name))
    }

    /// Waits until sshd has logged `count` logins since it started (one "Accepted publickey" line each).
    func waitForLogins(_ count: Int, within seconds: Double = 30) async throws {
        let logins = LockedLines()
        try await log.waitFor("\(count) logins", within: seconds) { line in
            guard line.hasPrefix("Accepted publickey") else { return false }
            logins.append(line)
            return logins.snapshot.count >= count
        }
    }

    /// The logins sshd logged so far.
    var logins: Int { log.lines.filter { $0.hasPrefix("Accepted publickey") }.count }

    /// haul's environment: this HOME, and no SSH agent of the machine's.
    var environment: [String: String] { ["HOME": home, "SSH_AUTH_SOCK": ""] }

    func stop() { process.stop() }

    deinit { stop() }
}

/// The size and SHA-256 of a file's bytes (nil: no file), which a test compares: two 16 MiB arrays that
/// differ would print megabytes.
func sizeAndDigest(_ bytes: [UInt8]?) -> String? {
    bytes.map { "\($0.count) bytes, sha256 \(OpenSSLDigest.hex(.sha256, of: $0))" }
}

/// A test file of `size` bytes, the same for a given `seed`.
func testBytes(_ size: Int, seed: UInt64 = 1) -> [UInt8] {
    var generator = SplitMix64(seed: seed)
    var bytes = [UInt8]()
    bytes.reserveCapacity(size + 8)
    while bytes.count < size {
        withUnsafeBytes(of: generator.next()) { bytes.append(contentsOf: $0) }
    }
    return Array(bytes.prefix(size))
}

// swift-tools-version:6.1
import Foundation
import PackageDescription

// HaulCLI sees the members of the modules it imports, not of what those import in turn: TOMLKit imports
// Foundation, whose `String` extensions (`trimmingCharacters`, `contains`, `range(of:)`) would otherwise be
// picked over the standard library's and link Foundation, CoreFoundation and ICU into `haul`
// (docs/benchmarks-history.md, "Thirty-second pass"). haul's modules import FoundationEssentials; the others import
// nothing that brings Foundation. Its files import CLinux beside Glibc: a C type both declare (`stat`) is
// counted as either one's, depending on the order the compiler loaded them.
let essentialsOnly: [SwiftSetting] = [.enableUpcomingFeature("MemberImportVisibility")]

// TOMLKit imports Foundation, so autolinking names the static libFoundation.a before libFoundationEssentials.a
// on `haul`'s link line. libFoundation.a carries weak copies of some of FoundationEssentials' own
// specializations; the linker takes the first archive that defines a symbol, so the first such reference
// (TOMLKit's `Data(base64Encoded:)`) drew in Foundation's NSString and with it the rest of Foundation,
// CoreFoundation and ICU: 48 MB of the binary, its constructors and relocations at every start. Naming
// libFoundationEssentials.a among the inputs puts it first. Its path is that of the toolchain evaluating this
// manifest (the one that builds), found from where its PackageDescription library is mapped; without it the
// link is as before.
//
// Only in a static-stdlib link, which `make release` and `make install` ask for by setting HAUL_STATIC_STDLIB=1
// beside `--static-swift-stdlib` (a manifest cannot see the flag itself): the archive needs the toolchain's
// other static libraries (`-l_FoundationCollections`, ...), which only that link names. Any other build (a
// plain `swift build -c release`, the man page plugin's) links the shared Swift libraries as usual.
let essentialsFirst: [String] = Context.environment["HAUL_STATIC_STDLIB"] != "1" ? [] : {
    // Read to its end line by line: a file of /proc reports no size, and a read sized by it may stop short.
    guard let maps = fopen("/proc/self/maps", "r") else { return [] }
    defer { fclose(maps) }
    var buffer: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(buffer) }
    let suffix = "/lib/swift/pm/ManifestAPI/libPackageDescription.so"
    while getline(&buffer, &capacity, maps) > 0, let buffer {
        let line = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasSuffix(suffix), let path = line.split(separator: " ").last else { continue }
        let archive = String(path.dropLast(suffix.count)) + "/lib/swift_static/linux/libFoundationEssentials.a"
        return FileManager.default.fileExists(atPath: archive) ? [archive] : []
    }
    return []
}()

// pkg-config's compile flags for `library` (its include directories), for a C target that includes its headers
// but does not link it: libchafa is loaded when first used (Sources/CLoadOnUse), and a system library target
// would add pkg-config's linker flags as well. Where pkg-config is missing or does not know the library, the
// directories Debian and Ubuntu install it in (`debianIncludes`): SwiftPM keeps this manifest's result in its
// cache until the manifest changes, so an empty answer from a build run before `make deps` would otherwise
// outlive the packages' install, and every later build would fail on the header it cannot find.
func compileFlags(of library: String) -> [String] {
    pkgConfigFlags(of: library) ?? debianIncludes(of: library).map { "-I" + $0 }
}

// The include directories of `library`'s -dev package (and of those its headers include) on Debian and Ubuntu.
func debianIncludes(of library: String) -> [String] {
    #if arch(arm64)
    let multiarch = "/usr/lib/aarch64-linux-gnu"
    #else
    let multiarch = "/usr/lib/x86_64-linux-gnu"
    #endif
    switch library {
    case "chafa":
        return ["/usr/include/chafa", multiarch + "/chafa/include", "/usr/include/glib-2.0", multiarch + "/glib-2.0/include"]
    case "libxml-2.0":
        return ["/usr/include/libxml2"]
    default:
        return []
    }
}

// libtorrent's compile flags: its defines change the layout of its types (TORRENT_USE_OPENSSL adds members), so
// they must be the ones Debian's library was built with. Without pkg-config, what libtorrent-rasterbar.pc
// of libtorrent-rasterbar-dev 2.0.8 says.
func torrentFlags() -> [String] {
    pkgConfigFlags(of: "libtorrent-rasterbar") ?? [
        "-fexceptions", "-DTORRENT_LINKING_SHARED", "-DBOOST_ASIO_ENABLE_CANCELIO", "-DBOOST_ASIO_NO_DEPRECATED",
        "-DTORRENT_USE_OPENSSL", "-DTORRENT_USE_LIBCRYPTO", "-DTORRENT_SSL_PEERS", "-DOPENSSL_NO_SSL2",
        "-DBOOST_ALL_NO_LIB",
    ]
}

func pkgConfigFlags(of library: String) -> [String]? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["pkg-config", "--cflags", library]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
}

let package = Package(
    name: "Haul",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "haul", targets: ["haul"]),
        .executable(name: "haul-server", targets: ["haul-server"]),
        .executable(name: "sample-server", targets: ["sample-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Without its default traits: haul reads no swift-configuration (`ConfigurationSupport`, which builds that
        // package and its collections preview, 86 files) and decodes no URL-encoded dates (`FullFoundation`).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // libcurl (libcurl4-openssl-dev), loaded when first used rather than linked: the loader would map it
        // and its thirty libraries before `main`, which is most of a download's start (Sources/CCurl/curl.c).
        // libcrypto is linked: the digests use it, and OpenSSL's init is asked for before curl's.
        .target(
            name: "CCurl", path: "Sources/CCurl",
            linkerSettings: [.linkedLibrary("crypto")]),
        // C libraries, each behind a small shim header of typed wrappers.
        // The picture libraries and ncurses are loaded when first used rather than linked (Sources/CLoadOnUse).
        .target(name: "CLoadOnUse", path: "Sources/CLoadOnUse"),
        // ncurses (libncurses-dev), loaded when the screen starts. ncursesw.pc only adds -D flags; shim.h
        // defines them.
        .target(name: "CNcurses", dependencies: ["CLoadOnUse"], path: "Sources/CNcurses"),
        // libjpeg (libjpeg-dev), loaded when a JPEG is first decoded or encoded.
        .target(name: "CJPEG", dependencies: ["CLoadOnUse"], path: "Sources/CJPEG"),
        // libchafa: pictures at the terminal's real resolution (kitty, sixel, iTerm2, or symbols), loaded when a
        // picture is first drawn (libchafa-dev and libglib2.0-dev for its headers).
        .target(
            name: "CChafa", dependencies: ["CLoadOnUse"], path: "Sources/CChafa",
            cSettings: [.unsafeFlags(compileFlags(of: "chafa"))]),
        // libpng's progressive reader (libpng-dev): partial and interlaced PNGs, loaded when a PNG is first
        // decoded or encoded.
        .target(name: "CPNG", dependencies: ["CLoadOnUse"], path: "Sources/CPNG"),
        // libxml2 (libxml2-dev), the metalink parser, configured for untrusted input (Sources/CXML2/xml.c). Loaded
        // when a metalink is first read rather than linked: Debian's libxml2 needs ICU, which the loader would
        // otherwise map and relocate at every start.
        .target(
            name: "CXML2", dependencies: ["CLoadOnUse"], path: "Sources/CXML2",
            cSettings: [.unsafeFlags(compileFlags(of: "libxml-2.0"))]),
        // glibc's _GNU_SOURCE interfaces (O_DIRECT, thread names).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // OpenSSL's libcrypto, the digests of `--checksum` and `haul verify`: libcurl's TLS loads it anyway (a
        // second crypto library, swift-crypto's BoringSSL, was 1,000 more files to build and link).
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // XXH3, the checksum of each block a download records (crash resume, `haul verify`).
        .systemLibrary(
            name: "CXXHash", path: "Sources/CXXHash",
            providers: [.apt(["libxxhash-dev"])]),

        // libtorrent-rasterbar (libtorrent-rasterbar-dev), the BitTorrent engine, behind a C API of our own
        // (include/haul_torrent.h): Swift's C++ interop does not take its Boost.Asio headers cleanly, and an
        // exception must not cross Swift frames, so every call is caught in C++ and handed back as a string.
        // Linked, not loaded on first use as the C libraries above are: a C++ API has no plain symbols to
        // dlsym, and its templates are compiled into this target.
        .target(
            name: "CTorrent", path: "Sources/CTorrent",
            cxxSettings: [.unsafeFlags(["-fexceptions"] + torrentFlags())],
            linkerSettings: [.linkedLibrary("torrent-rasterbar"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        // What every face shares of a download: its job, state, facts, progress and errors, the events that
        // change them, and `DownloadRecord`, the one place those events are applied. Plain values: no I/O, no clock
        // of its own, no dependency.
        .target(name: "HaulModel", swiftSettings: essentialsOnly),

        // The engine: transport, downloads, files on disk. No terminal code.
        .target(
            name: "HaulCore",
            dependencies: [
                "HaulModel", "CCurl", "CLinux", "CXXHash", "COpenSSL", "CXML2",
                // pthread-based locks: visible to the thread sanitizer, unlike Synchronization.Mutex on Linux.
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),

        // Torrents and magnets: their metadata, names on disk, a libtorrent session and its events (CTorrent).
        .target(
            name: "HaulTorrent",
            dependencies: [
                "HaulCore", "CTorrent",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),

        // The full-screen front end: pure state/update/render, plus the one type that calls ncurses.
        .target(
            name: "HaulTUI",
            dependencies: [
                "HaulCore", "CNcurses", "CJPEG", "CPNG", "CChafa",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),

        // The per-user service's client, which the CLI and the TUI use: its wire format, the Unix-socket
        // client, the launcher that starts the service, its state directory. No server code: `haul` links
        // this, not what follows.
        .target(
            name: "HaulServiceClient",
            dependencies: ["HaulCore", "CLinux"]),

        // The per-user service: the queue's store (GRDB/SQLite), the control API on a Unix socket
        // (Hummingbird), the aria2 JSON-RPC face, its lifecycle.
        .target(
            name: "HaulService",
            dependencies: [
                "HaulCore", "HaulServiceClient", "HaulTorrent", "CLinux",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The aria2 JSON-RPC face's WebSocket (notifications).
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                // Its TLS (`--rpc-certificate`), with swift-nio-ssl's BoringSSL.
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),

        // The command line and the full-screen front end, with the service's client: `haul` and
        // `haul-server` are this and a `main`.
        .target(
            name: "HaulCLI",
            dependencies: [
                "HaulCore",
                "HaulTorrent",
                "HaulTUI",
                "HaulServiceClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The config file, $XDG_CONFIG_HOME/haul/config.toml.
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: essentialsOnly),

        // `haul`: everything but the service and the sample server, which it hands to `haul-server`. A
        // download's start pays for the code linked in (the loader relocates its pages, the runtime scans
        // its conformance records when the command line is parsed): without Hummingbird, NIO, GRDB,
        // SQLite and NIOSSL's BoringSSL, the start is shorter (docs/benchmarks.md).
        .executableTarget(
            name: "haul",
            dependencies: ["HaulCLI"],
            linkerSettings: [
                // A release binary links with the toolchain's lld and packs its 171,000 relative relocations
                // (DT_RELR, glibc 2.36+): the 3 MiB relocation table the loader read through at every start is
                // 25 KiB, and a download's resident set is 4-5 MiB smaller (docs/benchmarks.md). The toolchain's
                // static-stdlib link line asks for --export-dynamic, which put our 40,000 Swift symbols in the
                // dynamic table: every library's relocations looked through them, and the runtime's dladdr of
                // itself (finding its own path) scanned them at each start. Nothing looks our symbols up by
                // name, so none is exported: a start 2-4 ms shorter, 1.7-2.5 MiB less resident.
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                              "-Xlinker", "--no-export-dynamic"],
                             .when(platforms: [.linux], configuration: .release)),
                .unsafeFlags(essentialsFirst, .when(platforms: [.linux], configuration: .release)),
            ]),

        // `haul-server`: `haul` with the per-user service (`haul service run`) and `--demo`'s sample server.
        .executableTarget(
            name: "haul-server",
            dependencies: [
                "HaulCLI", "HaulCore", "HaulService", "HaulServiceClient", "HaulTorrent", "SampleServer",
            ],
            linkerSettings: [
                // As `haul`'s.
                .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                              "-Xlinker", "--no-export-dynamic"],
                             .when(platforms: [.linux], configuration: .release)),
            ]),

        // The generated files' bytes, in C: optimised even in a debug build, and not instrumented by the thread
        // sanitizer (the suite serves and checks about a gigabyte of them; as a debug-built Swift loop it was
        // half of the sanitized suite's CPU: docs/architecture.md, "Running the suite").
        .target(
            name: "CGeneratedBytes", path: "sample-server/Sources/CGeneratedBytes",
            cSettings: [.unsafeFlags(["-O2"])]),
        // The SuperStorage-API sample server, used by `--demo` and by the tests.
        .target(
            name: "SampleServer",
            dependencies: [
                "CJPEG", "CGeneratedBytes",
                // HMAC-SHA256 for its links that expire (`SignedLinks`).
                "COpenSSL",
                .product(name: "Hummingbird", package: "hummingbird"),
                // HTTPS with a test's own certificate authority (`--cacert` tests).
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // To stop with a graceful shutdown rather than by cancelling (see SampleServer.stop).
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "sample-server/Sources/SampleServer"),
        .executableTarget(
            name: "sample-server",
            dependencies: [
                "SampleServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "sample-server/Sources/sample-server"),

        // bench/tui: the screen's time per key with a long queue (not a test; see bench/README.md). It reads
        // the screen's internals: in release, build it with `-Xswiftc -enable-testing`.
        .executableTarget(name: "tui-bench", dependencies: ["HaulTUI", "HaulCore"], path: "bench/tui"),

        // Helpers shared by the test targets: temp dirs, a manual clock, the server, the real binary.
        .target(
            name: "TestSupport",
            dependencies: [
                "SampleServer",
                "CJPEG", "CLinux", "COpenSSL",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"),
        // The model alone: what it builds on is the standard library.
        .testTarget(name: "HaulModelTests", dependencies: ["HaulModel"]),
        .testTarget(
            name: "HaulCoreTests",
            dependencies: [
                "HaulCore", "SampleServer", "TestSupport", "CJPEG", "CLinux",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            // Documents the tests read by their path (the metalink parser's inputs), not resources of the bundle.
            exclude: ["Fixtures"]),
        .testTarget(
            name: "SampleServerTests",
            dependencies: [
                "SampleServer",
                "CJPEG",
                "TestSupport",
            ]),
        .testTarget(
            name: "HaulTUITests",
            dependencies: ["HaulTUI", "HaulCore", "TestSupport", "CLoadOnUse", "CJPEG", "CPNG", "CChafa"]),
        .testTarget(
            name: "HaulServiceTests",
            dependencies: [
                "HaulService", "HaulServiceClient", "HaulCore", "TestSupport",
                // The sample server's own types (its signed links, `ChangeUriTests`): imported, so named here, or a
                // change of their layout leaves these tests compiled against the old one.
                "SampleServer",
                // The tests reach under the store: a damaged schema, a size limit on the writer connection.
                .product(name: "GRDB", package: "GRDB.swift"),
                // A stand-in for a service of an earlier version on the control socket.
                .product(name: "Hummingbird", package: "hummingbird"),
                // The service's routes and aria2 methods driven in process (the router test client).
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                // Locks the thread sanitizer sees (Synchronization's Mutex is a futex it does not).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]),
        // Torrents on a loopback swarm the tests start (opentracker, aria2c seeding), downloaded by the real `haul`.
        .testTarget(
            name: "TorrentTests",
            dependencies: ["haul", "haul-server", "HaulTorrent", "HaulCore", "HaulServiceClient", "TestSupport",
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["haul", "haul-server", "SampleServer", "HaulCore", "HaulTUI", "HaulService", "HaulServiceClient",
                           "TestSupport",
                           // Locks the thread sanitizer sees (Synchronization's Mutex is a futex it does not).
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)

// `make test-tsan` (HAUL_TSAN=1): our own modules built under the thread sanitizer, in the same build folder
// as `make test`, so the dependencies are reused as that build left them, not instrumented. A race between two
// accesses in our code (closures and generics we hand to a dependency are compiled, and instrumented, in ours)
// is still seen; one inside a dependency is its own suite's to find. CI's TSan build went from a clean build
// of everything (about 490 s) to our modules alone (157 s); see docs/architecture.md, "Running the suite".
if Context.environment["HAUL_TSAN"] == "1" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=thread"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=thread"])]
    }
}

// `bench/tui` in release (HAUL_BENCH_TESTABLE=1): the screen's module built with -enable-testing, so that
// tui-bench can import it @testable with the optimiser on; only that module's flags change.
if Context.environment["HAUL_BENCH_TESTABLE"] == "1" {
    for target in package.targets where target.name == "HaulTUI" {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enable-testing"])]
    }
}

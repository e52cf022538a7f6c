import Foundation

/// One file as `/files/list` describes it.
public struct CatalogEntry: Sendable, Hashable {
    /// The name to pass to `/files/download?NAME`.
    public let name: String
    /// Size in bytes.
    public let size: Int
    /// Last modification, as served in `Last-Modified` (without any fault salt).
    public let date: Date

    /// Creates an entry.
    public init(name: String, size: Int, date: Date) {
        self.name = name
        self.size = size
        self.date = date
    }
}

/// Everything the server serves, by name: generated files and JPEGs first, then the root directory's files.
struct Catalog: Sendable {
    /// The fixed modification date of the generated files: 2024-01-01T00:00:00Z.
    static let generatedDate = 1_704_067_200

    private let builtIn: [String: ServedFile]
    private let root: RootDirectory?

    init(files: [GeneratedFile], jpegs: [GeneratedJPEG], root: RootDirectory?) {
        var builtIn: [String: ServedFile] = [:]
        for file in files {
            builtIn[file.name] = ServedFile(
                name: file.name, size: file.size, modified: Self.generatedDate, content: .generated(file))
        }
        for jpeg in jpegs {
            builtIn[jpeg.name] = ServedFile(
                name: jpeg.name, size: jpeg.data.readableBytes, modified: Self.generatedDate, content: .memory(jpeg.data))
        }
        self.builtIn = builtIn
        self.root = root
    }

    func file(named name: String) -> ServedFile? {
        builtIn[name] ?? root?.file(named: name)
    }

    /// All files, sorted by name; root files never shadow built-in ones.
    func files() -> [ServedFile] {
        let rootFiles = (root?.files() ?? []).filter { builtIn[$0.name] == nil }
        return (Array(builtIn.values) + rootFiles).sorted { $0.name < $1.name }
    }

    func entries() -> [CatalogEntry] {
        files().map {
            CatalogEntry(name: $0.name, size: $0.size, date: Date(timeIntervalSince1970: TimeInterval($0.modified)))
        }
    }
}

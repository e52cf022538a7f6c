import GRDB

/// Why the store could not open, read or write `haul.sqlite`: a kind the service can act on and one line
/// for people (no newline, no SQL, no statement arguments).
struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        /// The file is not a database SQLite can read (random bytes, truncated, corrupt), or not haul's.
        /// The store never touches such a file: the user moves it away.
        case unreadable
        /// Migrations this build does not know were applied: a newer haul wrote it.
        case newerSchema
        /// SQLite reported a full disk (or an I/O error) on a write; what was stored before is intact.
        case diskFull
        /// The file cannot be written (made read-only or immutable, a read-only mount): the queue reads, and
        /// the store opens it again for writing once it can be written.
        case readOnly
        /// The file or its directory is not what the store expects (missing directory, not a regular
        /// file, another owner).
        case file
        /// Anything else SQLite or the job's encoding reported.
        case other
    }

    var kind: Kind
    var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = Self.oneLine(message)
    }

    var description: String { message }

    /// What an error thrown while `doing` ("cannot write the queue") becomes.
    static func from(_ error: any Error, doing: String) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as DatabaseError:
            switch error.resultCode {
            case .SQLITE_FULL:
                return StoreError(.diskFull, "\(doing): disk full (\(Store.fileName))")
            case .SQLITE_IOERR:
                // ENOSPC while growing the -wal or -shm file surfaces as an I/O error, not SQLITE_FULL.
                return StoreError(.diskFull, "\(doing): disk full or I/O error (\(Store.fileName))")
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return unreadable(error.message ?? "\(error.resultCode)")
            case .SQLITE_READONLY:
                return readOnly(doing)
            default:
                return StoreError(.other, "\(doing) (\(Store.fileName)): \(error.message ?? "\(error.resultCode)")")
            }
        default:
            return StoreError(.other, "\(doing) (\(Store.fileName)): \(error)")
        }
    }

    /// `doing` failed because the file cannot be written.
    static func readOnly(_ doing: String) -> StoreError {
        StoreError(.readOnly, "\(doing): \(Store.fileName) cannot be written (read-only)")
    }

    static func unreadable(_ reason: String) -> StoreError {
        StoreError(.unreadable,
                   "\(Store.fileName) is not a readable database: \(reason); move it away to start a new queue")
    }

    /// Newlines and other control characters become spaces: the message is one line wherever it lands.
    private static func oneLine(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    }
}

/// Runs `body`, turning whatever it throws into a `StoreError` that says what was being done.
func storeOperation<T>(_ doing: String, _ body: () throws -> T) throws(StoreError) -> T {
    do {
        return try body()
    } catch {
        throw StoreError.from(error, doing: doing)
    }
}

/// An expected digest (`--checksum ALGO=HEX`).
package struct Checksum: Sendable, Equatable, Codable {
    package var algorithm: DigestAlgorithm
    /// Lower-case hex.
    package var hex: String

    package init(algorithm: DigestAlgorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex
    }

    /// Parses `sha512=HEX`, `sha256=HEX`, `sha1=HEX` or `md5=HEX` (also as aria2 spells them: `sha-256=HEX`,
    /// `sha-1=HEX`);
    /// nil with a reason otherwise.
    package static func parse(_ text: String) -> Result<Checksum, HaulError> {
        parsed(text).mapError { HaulError(.usage, $0.words(option: "--checksum")) }
    }

    /// Why a `ALGO=HEX` is no checksum, as data: each place that reads one words it its own way.
    package enum Problem: Error, Equatable {
        case unknownAlgorithm
        case wrongLength(DigestAlgorithm)

        /// Said of `option` ("--checksum"; "it" for an input file's `checksum=`): "OPTION wants sha512=HEX,
        /// ...", "OPTION: a sha256 digest is 64 hex digits".
        package func words(option: String) -> String {
            switch self {
            case .unknownAlgorithm: "\(option) wants sha512=HEX, sha256=HEX, sha1=HEX or md5=HEX"
            case .wrongLength: "\(option): " + phrase
            }
        }

        /// The digest's length without an option's name ("a sha256 digest is 64 hex digits").
        package var phrase: String {
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
        guard parts.count == 2, let algorithm = DigestAlgorithm(rawValue: name) else {
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

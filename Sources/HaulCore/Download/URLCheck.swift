import FoundationEssentials
import Glibc

/// Refuses what is not an http(s) URL before any connection is made.
package enum URLCheck {
    /// nil when `text` is a usable http or https URL; otherwise the reason, for a usage error.
    package static func problem(with text: String) -> String? {
        guard !text.isEmpty else { return "empty URL" }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return "URL contains spaces or control characters"
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            return "not a valid URL"
        }
        guard scheme == "http" || scheme == "https" else { return "unsupported URL scheme \"\(scheme)\"" }
        // As written (`encodedHost`): `host` would decode an IDNA name through ICU for every download only
        // to see that it is not empty.
        guard let host = components.encodedHost, !host.isEmpty else { return "URL has no host" }
        return nil
    }
}

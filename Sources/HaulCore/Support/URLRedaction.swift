/// URLs as they may be shown or stored: a password in the user information (`user:secret@host`) becomes
/// `user:***@host`. Everything haul prints, reports or writes to disk about a URL goes through `masked`.
package enum URLRedaction {
    /// `https://user:pw@host/x` -> `https://user:***@host/x`; a URL without a password is returned as it is.
    package static func masked(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let authorityStart = scheme.upperBound
        let authorityEnd = url[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        let authority = url[authorityStart..<authorityEnd]
        // The last `@` ends the user information (as in curl's parser: a password may hold a raw `@`).
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else {
            return url
        }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }
}

import Foundation

/// What an HTTP status means for a download.
enum HTTPStatus {
    /// Throws the SPEC's error for a status that ends the download; returns for 2xx.
    static func check(_ head: ResponseHead) throws(HaulError) {
        let status = head.status
        switch status {
        case 200..<300:
            return
        case 401, 407:
            throw HaulError(.authentication, "server answered \(describe(status))", httpStatus: status)
        case 416:
            throw HaulError(.protocol, "server answered \(describe(status))", httpStatus: status)
        case 400..<600:
            throw HaulError(.server, "server answered \(describe(status))", httpStatus: status,
                            retryAfter: retryAfter(head["Retry-After"]))
        default:
            throw HaulError(.protocol, "unexpected answer \(describe(status))", httpStatus: status)
        }
    }

    static func describe(_ status: Int) -> String {
        let reasons = [
            301: "Moved Permanently", 302: "Found", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 407: "Proxy Authentication Required",
            408: "Request Timeout", 410: "Gone", 416: "Range Not Satisfiable", 429: "Too Many Requests",
            500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout",
        ]
        return reasons[status].map { "\(status) \($0)" } ?? "\(status)"
    }

    /// `Retry-After` as seconds ("120") or an HTTP date.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return .seconds(max(0, seconds)) }
        // An HTTP date is printable ASCII. Anything else stays away from DateFormatter: swift-corelibs-foundation
        // traps ("Incorrect range CFRange") when its parse stops inside a grapheme cluster, as in "Mo\u{200D}" or a
        // date followed by a combining mark, so one header from a server would end the whole process.
        guard let date = HTTPDate.parse(value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1000)))
    }
}

/// HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`), whatever the process's locale.
enum HTTPDate {
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }

    static func parse(_ value: String) -> Date? {
        // An HTTP date is printable ASCII. Anything else stays away from DateFormatter: swift-corelibs-foundation
        // traps ("Incorrect range CFRange") when its parse stops inside a grapheme cluster, as in "Mo\u{200D}" or a
        // date followed by a combining mark, so one header from a server would end the whole process.
        guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return formatter().date(from: value.trimmingCharacters(in: .whitespaces))
    }

    static func format(_ date: Date) -> String {
        let formatter = formatter()
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

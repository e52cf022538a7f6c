import CCurl
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
        guard let date = HTTPDate.parse(value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1000)))
    }
}

/// HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`), whatever the process's locale.
///
/// Read by libcurl's `curl_getdate` (the three forms RFC 9110 names, and the sloppier ones servers send),
/// written by hand: no `DateFormatter`, whose ICU set-up for every Last-Modified was a fifth of the CPU of a
/// thousand small downloads.
enum HTTPDate {
    static func parse(_ value: String) -> Date? {
        // An HTTP date is printable ASCII; anything else (a NUL above all) is no date.
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let seconds = curl_getdate(value, nil)
        guard seconds != -1 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate, as `If-Modified-Since` sends it.
    static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

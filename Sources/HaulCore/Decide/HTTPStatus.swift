import CCurl
import FoundationEssentials
import Glibc

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
                            retryAfter: retryAfter(head[.retryAfter]))
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
    ///
    /// `now` is the wall clock's, not the downloader's: an HTTP date names a moment of the calendar, which
    /// only the system's time can be measured against. What comes of it is a `Duration`, and the wait for it
    /// runs on the downloader's clock (`.retry`), so a test's manual clock still drives the retry.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingWhitespace(), !value.isEmpty else { return nil }
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
        (fixdate(value) ?? curlDate(value)).map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// Seconds since 1970 as `curl_getdate` reads `value`.
    static func curlDate(_ value: String) -> Int64? {
        // An HTTP date is printable ASCII; anything else (a NUL above all) is no date.
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let seconds = curl_getdate(value, nil)
        return seconds == -1 ? nil : Int64(seconds)
    }

    /// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one form RFC 9110 lets
    /// senders use, read by hand; nil for anything else, which `curl_getdate` then reads. (Its `sscanf`s
    /// cost 12,000 instructions a Last-Modified, 2.5% of a thousand small downloads.) A day the month does
    /// not have, a leap second or an unknown day name is left to curl, so both readers agree on every input.
    static func fixdate(_ value: String) -> Int64? {
        var value = value
        return value.withUTF8 { b -> Int64? in
            guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20,
                b[16] == 0x20, b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20,
                b[26] == UInt8(ascii: "G"), b[27] == UInt8(ascii: "M"), b[28] == UInt8(ascii: "T")
            else { return nil }
            func number(_ at: Int, _ digits: Int) -> Int64? {
                var n: Int64 = 0
                for i in at..<(at + digits) {
                    let digit = b[i] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    n = n * 10 + Int64(digit)
                }
                return n
            }
            // A three-letter name as one number, looked up among the names' (comparing each name's UTF-8 view
            // with the bytes went through the generic `elementsEqual`: 2,500 instructions a date).
            func name(_ at: Int, in names: [UInt32]) -> Int? {
                names.firstIndex(of: UInt32(b[at]) << 16 | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]))
            }
            guard name(0, in: dayKeys) != nil, let month = name(8, in: monthKeys), let day = number(5, 2),
                let year = number(12, 4), let hour = number(17, 2), let minute = number(20, 2),
                let second = number(23, 2), year >= 1970, hour < 24, minute < 60, second < 60
            else { return nil }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            guard day >= 1, day <= monthDays[month] + (month == 1 && leap ? 1 : 0) else { return nil }
            // Days from 1970-01-01 to the date (the proleptic Gregorian calendar, as `timegm`).
            let y = month < 2 ? year - 1 : year
            let era = y / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * Int64(month < 2 ? month + 10 : month - 2) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return days * 86_400 + hour * 3600 + minute * 60 + second
        }
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    /// The months' lengths in a common year.
    private static let monthDays: [Int64] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let dayKeys = days.map(key)
    private static let monthKeys = months.map(key)
    /// A three-letter ASCII name's bytes as one number, the first in the high bits.
    private static func key(_ name: String) -> UInt32 {
        name.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

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

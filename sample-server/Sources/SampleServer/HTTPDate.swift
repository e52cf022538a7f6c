/// Formats instants (whole seconds since 1970, UTC) as IMF-fixdate for HTTP headers and as ISO 8601 for JSON.
///
/// Hand-written so it needs no locale, formatter object or lock.
enum HTTPDate {
    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func imfFixdate(_ seconds: Int) -> String {
        let parts = CivilTime(seconds)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(weekdays[parts.weekday]), \(pad(parts.day)) \(months[parts.month - 1]) \(parts.year) "
            + "\(pad(parts.hour)):\(pad(parts.minute)):\(pad(parts.second)) GMT"
    }

    /// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); nil for anything else.
    static func parse(_ text: String) -> Int? {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let words = text.split(separator: " ")
        guard words.count == 6, words[5] == "GMT", let day = Int(words[1]), let month = months.firstIndex(of: String(words[2])),
            let year = Int(words[3]) else { return nil }
        let clock = words[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3 else { return nil }
        // days_from_civil (Howard Hinnant), the inverse of `CivilTime`.
        let y = month < 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let shiftedMonth = month < 2 ? month + 10 : month - 2
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + clock[0] * 3_600 + clock[1] * 60 + clock[2]
    }

    /// `1994-11-06T08:49:37Z`.
    static func iso8601(_ seconds: Int) -> String {
        let parts = CivilTime(seconds)
        return "\(parts.year)-\(pad(parts.month))-\(pad(parts.day))T"
            + "\(pad(parts.hour)):\(pad(parts.minute)):\(pad(parts.second))Z"
    }

    private static func pad(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}

/// Calendar fields of a UTC instant (proleptic Gregorian; Howard Hinnant's `civil_from_days`).
private struct CivilTime {
    var year, month, day, hour, minute, second, weekday: Int

    init(_ seconds: Int) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        hour = secondOfDay / 3_600
        minute = secondOfDay % 3_600 / 60
        second = secondOfDay % 60
        weekday = ((days % 7) + 11) % 7
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }
}

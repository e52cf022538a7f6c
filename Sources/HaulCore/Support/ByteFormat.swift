/// Human-readable sizes, rates and durations, as shown in progress lines and the TUI.
package enum ByteFormat {
    /// "0 B", "512 B", "1.5 KiB", "20.0 MiB", "1.00 GiB".
    package static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let digits = value >= 100 ? 0 : (value >= 10 ? 1 : 2)
        return "\(fixed(value, digits)) \(units[unit])"
    }

    /// "12.3 MiB/s".
    package static func rate(_ bytesPerSecond: Double) -> String {
        size(Int64(bytesPerSecond.rounded())) + "/s"
    }

    /// "0:07", "12:34", "1:02:03".
    package static func duration(seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let total = Int(seconds.rounded())
        let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60)
        let mm = h > 0 && m < 10 ? "0\(m)" : "\(m)"
        let ss = s < 10 ? "0\(s)" : "\(s)"
        return h > 0 ? "\(h):\(mm):\(ss)" : "\(mm):\(ss)"
    }

    /// Fixed-point formatting without Foundation's locale-dependent formatters.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int64((value * scale).rounded())
        let whole = scaled / Int64(scale)
        guard digits > 0 else { return "\(whole)" }
        var fraction = String(scaled % Int64(scale))
        while fraction.count < digits { fraction = "0" + fraction }
        return "\(whole).\(fraction)"
    }
}

import HaulServiceClient

extension Wire.Event {
    /// The JSON of this event written directly: what `Wire.encode` writes (its keys sorted, `/` as it is,
    /// numbers as `JSONEncoder` writes them), nil for an event that carries a nested object (a failure, a
    /// fact) or a number JSON cannot hold: those go through `JSONEncoder`. Every attached client gets every
    /// event of every download, and the encoder took about 5 us an event: 1000 small files from `haul add` to
    /// a service with one client attached took 455 and 415 ms of its CPU against 505 and 430 (two sets of 12
    /// alternating rounds), the last file named at 303 and 284 ms against 332 and 298.
    func directJSON() -> [UInt8]? {
        guard error == nil, fact == nil, rate?.isFinite ?? true, seconds?.isFinite ?? true else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(64 + (url?.utf8.count ?? 0) + (file?.utf8.count ?? 0) + (path?.utf8.count ?? 0))
        var first = true
        func key(_ name: StaticString) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            out.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }
        func integer(_ name: StaticString, _ value: Int64?) {
            guard let value else { return }
            key(name)
            out.append(contentsOf: String(value).utf8)
        }
        func double(_ name: StaticString, _ value: Double?) {
            guard let value else { return }
            key(name)
            // As `JSONEncoder`: a whole number without its ".0".
            let text = value.description
            out.append(contentsOf: (text.hasSuffix(".0") ? text.dropLast(2) : Substring(text)).utf8)
        }
        func string(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            JSON.write(string: value, to: &out)
        }
        // In the order of the keys' names, as `JSONEncoder` with `.sortedKeys` writes them.
        integer("batch", batch)
        integer("bytes", bytes)
        integer("completed", completed)
        string("event", event)
        string("file", file)
        integer("id", Int64(id))
        string("path", path)
        double("rate", rate)
        double("seconds", seconds)
        if let skipped {
            key("skipped")
            out.append(contentsOf: (skipped ? "true" : "false").utf8)
        }
        string("state", state)
        integer("total", total)
        string("url", url)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

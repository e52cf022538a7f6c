/// Keeps one transfer's receiving to its cap: a token bucket checked at each chunk curl hands over.
///
/// Not libcurl's `CURLOPT_MAX_RECV_SPEED_LARGE`: libcurl (7.88) reads the socket in a loop while it has data, up
/// to a hundred reads of its buffer, and measures only after the loop. Against a fast server it took 2.2 MiB
/// at once at `--limit-rate 50K`, then read nothing for 45 s to bring its average back, and haul's stall
/// timeout (30 s) took that silence for a dead server: the capped download failed, retry after retry.
///
/// Here a chunk is taken while the transfer has credit (it may end in debt by that chunk); the next one waits,
/// paused in curl (which stops reading the socket, so the server's TCP window closes), until the debt is paid.
/// Over any span the transfer receives at most `rate` per second plus one chunk and a tenth of a second's saved
/// credit, and the driver sizes curl's buffer to the cap (`chunkSize`) so a chunk is a small part of a second.
struct ReceivePacer {
    /// Bytes per second, > 0.
    private(set) var rate: Int64
    /// Bytes that may be taken now; negative: owed.
    private var credit: Double = 0
    private var last: TransferInstant

    init(rate: Int64, now: TransferInstant) {
        self.rate = Swift.max(1, rate)
        last = now
    }

    /// The most credit saved while the transfer receives less than its cap (a tenth of a second's worth).
    private var savings: Double { Double(rate) / 10 }

    enum Verdict: Equatable {
        /// Take the chunk.
        case take
        /// Hold it (pause the transfer) until then; the same chunk is taken then.
        case wait(until: TransferInstant)
    }

    /// Whether a chunk of `count` bytes arriving `now` is taken, or when it can be.
    mutating func admit(_ count: Int, at now: TransferInstant) -> Verdict {
        refill(to: now)
        if credit < 0 { return .wait(until: paidOff(from: now)) }
        credit -= Double(count)
        return .take
    }

    /// A new cap (a rebalance, or the user's live limit). The time so far counts at the old one.
    mutating func setRate(_ newRate: Int64, now: TransferInstant) {
        refill(to: now)
        rate = Swift.max(1, newRate)
        credit = Swift.min(credit, savings)
    }

    /// When the debt, as it stands `now`, is paid off (the instant credit is back to zero or above).
    func paidOff(from now: TransferInstant) -> TransferInstant {
        guard credit < 0 else { return now }
        // Rounded up, and one more nanosecond: woken at that instant, the chunk is taken.
        let nanoseconds = (-credit * 1e9 / Double(rate)).rounded(.up) + 1
        return TransferInstant(nanoseconds: now.nanoseconds + Int64(Swift.min(nanoseconds, 1e15)))
    }

    private mutating func refill(to now: TransferInstant) {
        guard now > last else { return }
        credit = Swift.min(savings, credit + Double(now.nanoseconds - last.nanoseconds) * Double(rate) / 1e9)
        last = now
    }

    /// curl's receive buffer for a transfer capped at `rate`: an eighth of a second's worth, within libcurl's
    /// bounds (1 KiB) and haul's largest chunk, so the pauses are short and the bytes flow smoothly.
    static func chunkSize(rate: Int64, largest: Int) -> Int {
        Int(Swift.min(Int64(largest), Swift.max(1024, rate / 8)))
    }

    /// Whether a running transfer's `buffer` no longer fits a cap of `rate` (0: none). Too large: one chunk
    /// would take longer than `longestChunk` to pace out (the line would stand still that long, then jump).
    /// Too small: the cap wants chunks eight times larger and would bring more than `mostChunks` a second
    /// (a callback per 2 KiB at full speed; at a low cap small chunks cost nothing, and a share of an overall
    /// cap that rises as other downloads end is no reason for a new request). Worth a new request, though
    /// the bytes the server already queued on the old connection are sent again: so not for a chunk of a
    /// second, nor for a few hundred callbacks a second.
    static func isMisfit(buffer: Int, rate: Int64, largest: Int) -> Bool {
        if rate > 0, Int64(buffer) > rate * longestChunk { return true }
        let wanted = rate > 0 ? chunkSize(rate: rate, largest: largest) : largest
        return wanted >= buffer * 8 && (rate == 0 || rate > Int64(buffer) * mostChunks)
    }

    /// Seconds one chunk may take at the cap before the transfer is refitted (`isMisfit`).
    static let longestChunk: Int64 = 4
    /// Chunks a second a transfer may take at its cap before it is refitted to larger ones (`isMisfit`).
    static let mostChunks: Int64 = 1000
}

import CCurl

/// The curl thread's receive caps: each transfer's share of the overall cap and of its download's, and the
/// pacer that holds a transfer to it.
extension DriverLoop {
    /// Resumes the transfers the pacer held whose time has come (curl hands the held chunk over at once);
    /// returns when the next of the others may go on.
    func resumePaced(now: TransferInstant) -> TransferInstant? {
        var next: TransferInstant?
        for handle in handles.values {
            guard let until = handle.pacedUntil else { continue }
            if until <= now {
                handle.pacedUntil = nil
                handle.noteActivity(at: now)
                curl_easy_pause(handle.easy, CURLPAUSE_CONT)
            }
            // Resuming may have handed over a chunk that ended in debt again: that one waits anew.
            if let until = handle.pacedUntil { next = next.map { Swift.min($0, until) } ?? until }
        }
        return next
    }

    /// Gives every transfer the lower of its caps: its share of the overall cap, and its share of its
    /// download's live cap (split over that download's running transfers) or else its own. 0 lifts the cap.
    func rebalance() {
        let receiving = handles.values.count { !$0.ahead }
        guard receiving > 0 else { return }
        let overallShare = overallRate.map { Swift.max(1, $0 / Int64(receiving)) } ?? .max
        // Every managed download has a live cap, but few have a rate in it: only those are counted, each
        // rate read once (this runs at each transfer's start and end).
        var perDownload: [ObjectIdentifier: (rate: Int64, transfers: Int64)] = [:]
        for handle in handles.values {
            guard let limit = handle.core.limit else { continue }
            let key = ObjectIdentifier(limit)
            if let counted = perDownload[key] {
                perDownload[key] = (counted.rate, counted.transfers + 1)
            } else if let rate = limit.bytesPerSecond {
                perDownload[key] = (rate, 1)
            }
        }
        var misfits: [CurlHandle] = []
        for (easy, handle) in handles where !handle.ahead {
            let core = handle.core
            var cap = overallShare
            if let limit = core.limit {
                // The live cap replaces the one the request started with.
                if let share = perDownload[ObjectIdentifier(limit)] {
                    cap = Swift.min(cap, Swift.max(1, share.rate / share.transfers))
                }
            } else if let own = core.request.options.maxReceiveRate {
                cap = Swift.min(cap, own)
            }
            let applied = cap == .max ? 0 : cap
            guard handle.appliedRate != applied else { continue }
            handle.appliedRate = applied
            if pace(handle, easy: easy, rate: applied) { misfits.append(handle) }
        }
        // Each close rebalances the rest, which may have closed one of these already.
        for handle in misfits where handles[handle.easy] === handle {
            handle.observer?(ObjectIdentifier(handle.core), .refitted)
            close(handle, error: .refit)
        }
    }

    /// Puts `handle` under a cap of `rate` (0: none). A transfer not started yet gets a receive buffer to match,
    /// so that one chunk is a small part of a second at that rate. A running one keeps its buffer (libcurl
    /// must not be given another during a transfer), and its pace holds whatever the chunk size; but when
    /// the buffer is far off the new cap and the transfer's reader can go on from where it stopped
    /// (`Transfer.refitsToCap`), the result is true: the transfer is then ended with `HaulError.refit`, and
    /// its reader asks for the rest with a buffer fitted to the cap (256 KiB chunks at a few KiB/s would come
    /// a minute apart; 2 KiB ones at full speed would cost a callback each).
    private func pace(_ handle: CurlHandle, easy: UnsafeMutableRawPointer, rate: Int64) -> Bool {
        let now = TransferInstant.now
        if rate == 0 {
            handle.pacer = nil
        } else if handle.pacer != nil {
            handle.pacer?.setRate(rate, now: now)
        } else {
            handle.pacer = ReceivePacer(rate: rate, now: now)
        }
        // Not added yet: `add` has set the largest buffer, which an uncapped transfer keeps.
        if !handle.added, rate > 0 {
            handle.bufferSize = ReceivePacer.chunkSize(rate: rate, largest: handle.largestChunk)
            haul_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, handle.bufferSize)
        }
        // A held transfer waits as long as its debt at the new rate says; lifted, it goes on at the next turn.
        if handle.pacedUntil != nil {
            handle.pacedUntil = handle.pacer?.paidOff(from: now) ?? now
        }
        handle.observer?(ObjectIdentifier(handle.core), .capped(bytesPerSecond: rate))
        return handle.added && handle.core.refitsToCap
            && ReceivePacer.isMisfit(buffer: handle.bufferSize, rate: rate, largest: handle.largestChunk)
    }
}

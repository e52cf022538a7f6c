/// One HTTP transfer in flight: its response head, and its body as an `AsyncSequence` of byte batches.
///
/// Reading is the demand: when the reader falls behind by more than the driver's high watermark, curl
/// pauses the transfer, and resumes it once the reader has taken what waits. Cancelling the reading task,
/// calling `cancel()`, or dropping the last reference stops the transfer and frees its handle.
package final class Transfer: Sendable {
    let core: TransferCore

    init(core: TransferCore) {
        self.core = core
    }

    deinit {
        core.cancel()
    }

    var request: HTTPRequest { core.request }

    /// The final response's status and headers (after redirects). Throws the transfer's error when it
    /// failed before any answer, `CancellationError` when cancelled.
    package func head() async throws -> ResponseHead {
        try await core.head()
    }

    /// The body, batch by batch. A batch holds whatever arrived since the previous one was taken.
    package var bytes: TransferBytes { TransferBytes(transfer: self) }

    /// curl ended the transfer without an error: the whole body waits in memory.
    var hasEndedWell: Bool { core.hasEndedWell }

    package func cancel() {
        core.cancel()
    }

    /// Whether the engine may end this transfer with `HaulError.refit` when its cap changes far enough that
    /// its receive buffer no longer fits (see `CurlDriver`'s pacing): set by a reader that can ask for the
    /// rest from where the bytes stopped (a range of a file whose version it can pin). Off by default.
    var refitsToCap: Bool {
        get { core.refitsToCap }
        set { core.refitsToCap = newValue }
    }

    var statistics: TransferStatistics { core.statistics }

    /// How a driver's `TransferObserver` names this transfer.
    var id: ObjectIdentifier { ObjectIdentifier(core) }
}

/// A transfer's body as byte batches. Iterate it once, from one task.
package struct TransferBytes: AsyncSequence, Sendable {
    package typealias Element = ByteBatch
    let transfer: Transfer

    package struct AsyncIterator: AsyncIteratorProtocol {
        let transfer: Transfer
        /// The buffer of the batch returned last: reused for a later batch when nobody kept it.
        var lent: IOBuffer?

        package mutating func next() async throws -> ByteBatch? {
            let batch = try await transfer.core.next(recycling: lent.take())
            if case .buffer(let buffer) = batch?.storage { lent = buffer }
            return batch
        }
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(transfer: transfer)
    }
}

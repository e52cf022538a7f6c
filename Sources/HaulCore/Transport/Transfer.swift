/// One HTTP transfer in flight: its response head, and its body as an `AsyncSequence` of byte batches.
///
/// Reading is the demand: when the reader falls behind by more than the driver's high watermark, curl
/// pauses the transfer, and resumes it once the reader has taken what waits. Cancelling the reading task,
/// calling `cancel()`, or dropping the last reference stops the transfer and frees its handle.
public final class Transfer: Sendable {
    let core: TransferCore

    init(core: TransferCore) {
        self.core = core
    }

    deinit {
        core.cancel()
    }

    public var request: HTTPRequest { core.request }

    /// The final response's status and headers (after redirects). Throws the transfer's error when it
    /// failed before any answer, `CancellationError` when cancelled.
    public func head() async throws -> ResponseHead {
        try await core.head()
    }

    /// The body, batch by batch. A batch holds whatever arrived since the previous one was taken.
    public var bytes: TransferBytes { TransferBytes(transfer: self) }

    public func cancel() {
        core.cancel()
    }

    public var statistics: TransferStatistics { core.statistics }

    /// Returns once the curl handle has been removed and freed (after success, failure or cancel).
    public func waitUntilClosed() async {
        await core.waitUntilClosed()
    }
}

/// A transfer's body as byte batches. Iterate it once, from one task.
public struct TransferBytes: AsyncSequence, Sendable {
    public typealias Element = ByteBatch
    let transfer: Transfer

    public struct AsyncIterator: AsyncIteratorProtocol {
        let transfer: Transfer
        /// The buffer of the batch returned last: reused for a later batch when nobody kept it.
        var lent: IOBuffer?

        public mutating func next() async throws -> ByteBatch? {
            let batch = try await transfer.core.next(recycling: lent.take())
            if case .buffer(let buffer) = batch?.storage { lent = buffer }
            return batch
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(transfer: transfer)
    }
}

/// What a driver tells its observer about a transfer, on the curl thread (for tests of backpressure and
/// of the handle's lifetime; the shared driver has no observer).
package enum TransferEvent: Sendable, Equatable {
    /// Paused because its consumer is behind, for the `count`th time.
    case paused(count: Int)
    /// The handle was removed and freed.
    case closed
    /// It waits for a connection opened ahead to its host (`CurlDriver.start(_:clock:openingAhead:)`) instead
    /// of opening one.
    case waitsForAConnectionOpenedAhead
    /// It waits for another transfer to end before it starts (`CurlDriver.start(_:clock:after:)`).
    case waitsForTheTransferBefore
    /// Its receive cap became this many bytes per second (0: none).
    case capped(bytesPerSecond: Int64)
    /// It is ended with `HaulError.refit`: its buffer no longer fits its cap.
    case refitted
}

package typealias TransferObserver = @Sendable (_ transfer: ObjectIdentifier, _ event: TransferEvent) -> Void

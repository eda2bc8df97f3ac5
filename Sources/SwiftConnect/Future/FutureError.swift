import Foundation

/// Why a future failed when the future itself ended it, rather than the work behind it.
///
/// A future that nothing but its own operators knows about fails with these: one made by a ``Promise`` or from an
/// `async` closure, and the futures derived from it.
///
/// ```swift
/// let answer = Promise<Int>().future
/// answer.cancel()
/// if case .failure(FutureError.cancelled)? = answer.result { print("cancelled") }
/// ```
///
/// A future whose work reports failures in an error type of its own reports these in that type instead, and so
/// does every future derived from it with an operator that has one source (`map`, `flatMap`, `decoded`,
/// `timeout`…): a request's future fails with SwiftConnect's client error, of kind `cancelled` or `timedOut`,
/// wherever in such a chain it is cancelled or timed out. A future that combines several into a new value (`zip`,
/// `all`, `allSettled`) fails with `FutureError` itself; the futures it waits on are cancelled with it and fail
/// in their own type. `race`, whose value is its inputs', fails as a future of that value does (a race of
/// requests' futures: with the client's error).
public enum FutureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// ``Future/cancel()`` ended the future before it completed.
    case cancelled
    /// The future did not complete within the limit of ``Future/timeout(after:on:)``, in seconds: 0 for a limit
    /// that was already over (zero, negative or NaN).
    case timedOut(after: TimeInterval)
    /// ``Future/race(_:)`` was given no futures: with nothing to wait for, nothing could ever come first.
    case emptyRace

    /// A sentence saying what happened.
    public var description: String {
        switch self {
        case .cancelled: "the future was cancelled"
        case .timedOut(let seconds): "the future did not complete within the time limit of \(seconds) s"
        case .emptyRace: "Future.race(_:) was given no futures: none can ever complete first"
        }
    }
}

/// A value type whose futures report a ``FutureError`` in an error type of their own domain.
///
/// A future reports `cancelled` and `timedOut` through its own value type, if it conforms, or else through that
/// of the nearest future it waits on that does (``Future/reported(_:)``): everything chained on a future of a
/// conforming type reports them alike. Nothing else about the value is looked at.
@usableFromInline
protocol FutureErrorReporting {
    /// The error a future of this type fails with instead of `error`.
    static func reportedError(for error: FutureError) -> any Error
}

/// Why a future failed when a step of `flatMap(_:)` or the asynchronous `recover(_:)` returned a future
/// that waits for the future the step completes: that future itself, or one that follows it (a later stage of its
/// chain, a step that returned it, or a combination with it among its inputs). Neither could ever complete, so both
/// fail with this instead, and so does every future on the loop.
///
/// Internal: a public case of ``FutureError`` would break exhaustive `switch`es over it in users' code, a change
/// kept for a release that may make it (the API check against 0.1.0 flags it). Its description says what happened.
@usableFromInline
struct FutureCycleError: Error, Hashable, CustomStringConvertible {
    /// The error; it carries nothing else. Inlinable: ``Future/chain(_:)``, which fails with it, is.
    @inlinable
    init() {}

    @usableFromInline
    var description: String {
        "a flatMap or recover step returned a future that waits for the step's own result: it could never complete"
    }
}

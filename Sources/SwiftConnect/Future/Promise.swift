/// The write side of a ``Future``: completes it exactly once.
///
/// Make a promise, return its ``future``, and complete it when the work is done. A second completion is
/// ignored and, in debug builds, reported through ``FutureDiagnostics``.
///
/// ```swift
/// func fetchNumber() -> Future<Int> {
///     let promise = Promise<Int>()
///     DispatchQueue.global().async { promise.succeed(42) }
///     return promise.future
/// }
/// ```
///
/// ## A promise that is never completed
/// Nothing completes the future for you: a promise dropped before it completes its future leaves the future pending
/// for good. Its callbacks never run; they are freed with the future once nothing holds it. A task awaiting its
/// ``Future/value`` waits until the task is cancelled, which cancels the future. Complete a promise on every path,
/// failing it if need be, or put a limit on the wait with ``Future/timeout(after:on:)``.
public struct Promise<Value: Sendable>: Sendable {
    /// The future this promise completes.
    public let future: Future<Value>

    /// Creates a promise with a pending future.
    @inlinable
    public init() {
        future = Future()
    }

    @usableFromInline
    init(future: Future<Value>) {
        self.future = future
    }

    /// Completes the future with a value.
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - file: The caller's file, for the debug report of a second completion.
    ///   - line: The caller's line, for the same report.
    /// - Returns: `true` if this call completed the future; `false` if it was already complete.
    @inlinable
    @discardableResult
    public func succeed(_ value: Value, file: StaticString = #fileID, line: UInt = #line) -> Bool {
        complete(with: .success(value), file: file, line: line)
    }

    /// Completes the future with an error.
    ///
    /// - Parameters:
    ///   - error: The error.
    ///   - file: The caller's file, for the debug report of a second completion.
    ///   - line: The caller's line, for the same report.
    /// - Returns: `true` if this call completed the future; `false` if it was already complete.
    @inlinable
    @discardableResult
    public func fail(_ error: any Error, file: StaticString = #fileID, line: UInt = #line) -> Bool {
        complete(with: .failure(error), file: file, line: line)
    }

    /// Completes the future with a result.
    ///
    /// Callbacks already added run on the calling thread, in the order they were added, with those of the futures
    /// derived from this one that they complete in turn, before this method returns; but a callback given a queue
    /// (``Future/observe(on:_:)`` with a queue, or one chained after ``Future/receive(on:)``) is only handed to that
    /// queue, and runs there later. A thread that adds a callback at the same moment may take the callbacks waiting
    /// to run and run them first, on its own thread: then they may still be running when this method returns.
    /// Inside callbacks nested more than 32 deep on this thread (each completing a promise whose callbacks complete
    /// the next), the callbacks are left to the outermost completion, which runs them before it returns.
    ///
    /// - Parameters:
    ///   - result: The value or error.
    ///   - file: The caller's file, for the debug report of a second completion.
    ///   - line: The caller's line, for the same report.
    /// - Returns: `true` if this call completed the future; `false` if it was already complete (a cancelled
    ///   future is expected to be completed again by the work it cancelled: that is not reported).
    @inlinable
    @discardableResult
    public func complete(
        with result: Result<Value, any Error>,
        file: StaticString = #fileID,
        line: UInt = #line
    ) -> Bool {
        let (completed, work) = future.complete(
            result,
            reportingDoubleCompletionAt: SourceLocation(file: file, line: line)
        )
        work.run()
        return completed
    }

    /// Completes the future unless it is already complete, without reporting a lost race.
    ///
    /// For producers that race on purpose, such as a response and a timeout.
    ///
    /// - Parameter result: The value or error.
    /// - Returns: `true` if this call completed the future.
    @inlinable
    @discardableResult
    public func completeIfPending(with result: Result<Value, any Error>) -> Bool {
        let (completed, work) = future.complete(result, reportingDoubleCompletionAt: nil)
        work.run()
        return completed
    }

    /// Completes the future with the outcome of `body`: its value, or the error it throws.
    ///
    /// - Parameters:
    ///   - file: The caller's file, for the debug report of a second completion.
    ///   - line: The caller's line, for the same report.
    ///   - body: The work whose outcome completes the future.
    /// - Returns: `true` if this call completed the future.
    @discardableResult
    public func complete(
        file: StaticString = #fileID,
        line: UInt = #line,
        catching body: () throws -> Value
    ) -> Bool {
        complete(with: Result(catching: body), file: file, line: line)
    }

    /// Sets what ``Future/cancel()`` does besides failing the future, such as cancelling a network task.
    ///
    /// Runs at most once. If the future was already cancelled, `handler` runs at once; if it completed
    /// otherwise, `handler` never runs and is released.
    ///
    /// A future has one cancel handler: while it is pending, each call replaces the handler set before, which then
    /// never runs and is released before this method returns. Cancelling runs the last one set. To do several things
    /// on cancellation, set one handler that does them all.
    ///
    /// - Parameter handler: The cancellation action.
    public func setCancelHandler(_ handler: @escaping @Sendable () -> Void) {
        future.setCancelHandler(handler)
    }
}

/// Where in the caller's code something happened, for diagnostics.
@usableFromInline
struct SourceLocation: Sendable {
    @usableFromInline let file: StaticString
    @usableFromInline let line: UInt

    @inlinable
    init(file: StaticString, line: UInt) {
        self.file = file
        self.line = line
    }
}

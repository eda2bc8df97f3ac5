import Dispatch
import Foundation
import SwiftConnect

/// The error ``SwiftConnect/Future/wait(timeout:)`` throws when a future does not complete in time.
public struct FutureTimeoutError: Error, CustomStringConvertible, Sendable {
    /// How long the caller waited, in seconds.
    public let timeout: TimeInterval

    /// Says how long the caller waited.
    public var description: String { "the future did not complete within \(timeout) s" }
}

extension Future {
    /// Blocks the calling thread until the future completes, for tests and command-line tools.
    ///
    /// Works without a run loop: SwiftConnect completes futures on the thread that finishes the work. On the
    /// main thread it runs the main run loop while it waits, so a future that delivers on the main queue
    /// (after ``SwiftConnect/Future/receive(on:)`` with `.main`) completes too.
    ///
    /// ```swift
    /// let todo = try connect.send(GetTodo(id: 1)).wait(timeout: 5)
    /// ```
    ///
    /// - Parameter timeout: The longest wait, in seconds (`.infinity` waits as long as it takes; NaN does not wait).
    /// - Returns: The value.
    /// - Throws: The future's error, or ``FutureTimeoutError`` when it does not complete in time.
    public func wait(timeout: TimeInterval = 10) throws -> Value {
        try waitForResult(timeout: timeout).get()
    }

    /// Blocks the calling thread until the future completes, and returns its result.
    ///
    /// - Parameter timeout: The longest wait, in seconds (`.infinity` waits as long as it takes; NaN does not wait).
    /// - Returns: The result.
    /// - Throws: ``FutureTimeoutError`` when the future does not complete in time.
    public func waitForResult(timeout: TimeInterval = 10) throws -> Result<Value, any Error> {
        if let result { return result }
        let deadline = Self.deadline(after: timeout)
        let semaphore = DispatchSemaphore(value: 0)
        guard Thread.isMainThread else {
            observe { _ in semaphore.signal() }
            guard semaphore.wait(timeout: deadline) == .success, let result else {
                throw FutureTimeoutError(timeout: timeout)
            }
            return result
        }
        // On the main thread, run the main run loop instead of blocking it: a future after `receive(on: .main)`
        // completes on the main queue, which a blocked main thread would never drain (the wait timed out although
        // the result was ready). The no-op block wakes the run loop when the future completes on another thread.
        // It runs in slices: inside a block of the main queue that block cannot run, and if another source keeps
        // the run loop waiting, the slice bounds how late the result is seen.
        observe { _ in
            semaphore.signal()
            DispatchQueue.main.async {}
        }
        while semaphore.wait(timeout: .now()) != .success {
            let now = DispatchTime.now()
            guard now < deadline else { throw FutureTimeoutError(timeout: timeout) }
            let seconds = min(Double(deadline.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9, 0.05)
            guard RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: seconds)) else {
                // The run loop cannot run here (inside a block of the main queue itself): block, as elsewhere.
                guard semaphore.wait(timeout: deadline) == .success else { throw FutureTimeoutError(timeout: timeout) }
                break
            }
        }
        guard let result else { throw FutureTimeoutError(timeout: timeout) }
        return result
    }

    /// Awaits the value, giving up after `timeout` seconds: the timeout leaves the future running (others may
    /// still want its result). Cancelling the awaiting task cancels the future, as ``SwiftConnect/Future/value``
    /// does.
    ///
    /// ```swift
    /// let todo = try await connect.send(GetTodo(id: 1)).value(timeout: 5)
    /// ```
    ///
    /// - Parameter timeout: The longest wait, in seconds (`.infinity` waits as long as it takes; NaN does not wait).
    /// - Returns: The value.
    /// - Throws: The future's error, or ``FutureTimeoutError``.
    public func value(timeout: TimeInterval) async throws -> Value {
        if let result { return try result.get() }
        let timer = Promise<Value>()
        // The scheduled block lives until the deadline, however soon the wait is over: it holds the timer weakly, so
        // that it keeps neither the timer nor its result (the value returned) that long. This future's callback holds
        // the timer while the future is pending, which is as long as the timer can matter.
        let target = TimerTarget(timer)
        DispatchQueue.global().asyncAfter(deadline: Self.deadline(after: timeout)) { [weak target] in
            target?.promise.completeIfPending(with: .failure(FutureTimeoutError(timeout: timeout)))
        }
        observe { target.promise.completeIfPending(with: $0) }
        return try await withTaskCancellationHandler {
            // Not `timer.future.value`: its own cancellation handler would fail the timer first, with a
            // `FutureError`, before this one cancels the future and its request says why (`ConnectError.cancelled`).
            try await withCheckedThrowingContinuation { continuation in
                timer.future.observe { continuation.resume(with: $0) }
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// The moment `timeout` seconds from now. A NaN timeout is over at once: Dispatch reads a NaN interval as
    /// "never", which made a wait with a timeout computed from a missing value hang for ever.
    private static func deadline(after timeout: TimeInterval) -> DispatchTime {
        timeout.isNaN ? .now() : .now() + timeout
    }
}

/// The promise a wait's timer fails when time is up (``SwiftConnect/Future/value(timeout:)``), for the timer to hold
/// weakly.
private final class TimerTarget<Value: Sendable>: Sendable {
    let promise: Promise<Value>

    init(_ promise: Promise<Value>) {
        self.promise = promise
    }
}

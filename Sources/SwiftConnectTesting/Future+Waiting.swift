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
    /// Works without a run loop: SwiftConnect completes futures on the thread that finishes the work, so
    /// blocking the main thread here does not stop the future from completing.
    ///
    /// ```swift
    /// let todo = try connect.send(GetTodo(id: 1)).wait(timeout: 5)
    /// ```
    ///
    /// - Parameter timeout: The longest wait, in seconds.
    /// - Returns: The value.
    /// - Throws: The future's error, or ``FutureTimeoutError`` when it does not complete in time.
    public func wait(timeout: TimeInterval = 10) throws -> Value {
        try waitForResult(timeout: timeout).get()
    }

    /// Blocks the calling thread until the future completes, and returns its result.
    ///
    /// - Parameter timeout: The longest wait, in seconds.
    /// - Returns: The result.
    /// - Throws: ``FutureTimeoutError`` when the future does not complete in time.
    public func waitForResult(timeout: TimeInterval = 10) throws -> Result<Value, any Error> {
        if let result { return result }
        let semaphore = DispatchSemaphore(value: 0)
        observe { _ in semaphore.signal() }
        guard semaphore.wait(timeout: .now() + timeout) == .success, let result else {
            throw FutureTimeoutError(timeout: timeout)
        }
        return result
    }

    /// Awaits the value, giving up after `timeout` seconds without cancelling the future.
    ///
    /// ```swift
    /// let todo = try await connect.send(GetTodo(id: 1)).value(timeout: 5)
    /// ```
    ///
    /// - Parameter timeout: The longest wait, in seconds.
    /// - Returns: The value.
    /// - Throws: The future's error, or ``FutureTimeoutError``.
    public func value(timeout: TimeInterval) async throws -> Value {
        if let result { return try result.get() }
        let timer = Promise<Value>()
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            timer.completeIfPending(with: .failure(FutureTimeoutError(timeout: timeout)))
        }
        observe { timer.completeIfPending(with: $0) }
        return try await withTaskCancellationHandler {
            try await timer.future.value
        } onCancel: {
            self.cancel()
        }
    }
}

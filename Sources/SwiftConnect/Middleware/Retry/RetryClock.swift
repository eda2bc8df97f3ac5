import Dispatch
import Foundation

/// What a ``RetryPolicy`` waits with between attempts: schedules an action after a delay and can cancel it.
///
/// ``DispatchRetryClock`` is the real one. Tests inject a clock that records the delays and runs the actions
/// at once, so backoff and `Retry-After` are checked without waiting (`SwiftConnectTesting` ships
/// `ImmediateRetryClock`). Writing one takes a few lines:
///
/// ```swift
/// struct NoWaitClock: RetryClock {
///     struct Ran: RetryCancellable {
///         func cancel() {}  // the action ran already: nothing to call off
///     }
///     func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable {
///         action()
///         return Ran()
///     }
/// }
/// let connect = Connect(retryPolicy: RetryPolicy(clock: NoWaitClock()))
/// ```
public protocol RetryClock: Sendable {
    /// The current time, against which a `Retry-After` HTTP-date is measured when the response has no readable `Date`.
    ///
    /// Defaults to `Date()`; a test clock returns a fixed date.
    var now: Date { get }

    /// Runs `action` once, after `seconds`, unless the returned token is cancelled first.
    ///
    /// - Parameters:
    ///   - seconds: The delay; 0 or less means as soon as possible.
    ///   - action: What to run. It may run on any thread, or synchronously inside this call.
    /// - Returns: A token whose ``RetryCancellable/cancel()`` stops the action from running and releases it.
    func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable
}

extension RetryClock {
    /// The system's current time.
    public var now: Date { Date() }
}

/// A scheduled action that can be called off, returned by ``RetryClock/schedule(after:_:)``.
public protocol RetryCancellable: Sendable {
    /// Stops the action from running if it has not started; does nothing otherwise. Safe to call repeatedly.
    func cancel()
}

/// The library's own ``RetryCancellable`` values, for its clocks and its test kit's; none is public: a clock of yours
/// returns a token of its own (see ``RetryClock``).
public enum RetryCancellables {
    /// A token with nothing to cancel, for clocks that ran the action already.
    package static let none: any RetryCancellable = NothingToCancel()

    private struct NothingToCancel: RetryCancellable {
        func cancel() {}
    }
}

/// The real ``RetryClock``: runs actions on a dispatch queue after their delay.
///
/// Cancelling a scheduled action releases it (and what it captured) at once, not when its deadline passes.
///
/// ```swift
/// let policy = RetryPolicy(clock: DispatchRetryClock(queue: .global(qos: .utility)))
/// ```
public struct DispatchRetryClock: RetryClock {
    /// The queue the actions run on.
    let queue: DispatchQueue

    /// Creates a clock.
    ///
    /// - Parameter queue: Where actions run. Defaults to the global concurrent queue.
    public init(queue: DispatchQueue = .global()) {
        self.queue = queue
    }

    /// Runs `action` on the clock's queue after `seconds`, unless cancelled first.
    ///
    /// - Parameters:
    ///   - seconds: The delay; negative or non-finite values mean no delay.
    ///   - action: What to run.
    /// - Returns: A token that cancels the action.
    public func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable
    {
        let scheduled = ScheduledAction(action)
        let delay = seconds.isFinite ? max(0, seconds) : 0
        queue.asyncAfter(deadline: .now() + delay) { scheduled.fire() }
        return scheduled
    }
}

/// An action that runs at most once, and that cancelling drops at once.
///
/// The dispatch queue keeps this small box until the deadline; the action and its captures go as soon as
/// the box is fired or cancelled.
final class ScheduledAction: RetryCancellable {
    private let action: Protected<(@Sendable () -> Void)?>

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Protected(action)
    }

    /// Runs the action unless it was cancelled or already ran.
    func fire() {
        let action = self.action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    func cancel() {
        let dropped = action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        _ = dropped  // released outside the lock: its captures may run deinit code
    }
}

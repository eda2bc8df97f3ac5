import Foundation
import SwiftConnect

/// A ``SwiftConnect/RetryClock`` for tests: records every delay it is asked for and runs the action at once,
/// or holds it until the test says so.
///
/// ```swift
/// let clock = ImmediateRetryClock()
/// let transport = FakeTransport()
/// transport.stub(.get, "/todos/1", with: [.status(503), .status(503), .json(["id": 1])])
/// let connect = Connect(transport: transport, retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
///
/// _ = try connect.request(TodoConnector.get(id: 1)).wait()
/// XCTAssertEqual(clock.delays, [0.5, 1.0])  // no time passed
/// ```
///
/// With `holdsActions: true` nothing runs until ``runPendingActions()``, so a test can look at, or cancel,
/// a request while it waits between attempts:
///
/// ```swift
/// let clock = ImmediateRetryClock(holdsActions: true)
/// let future = connect.request(TodoConnector.get(id: 1))
/// XCTAssertEqual(clock.pendingActionCount, 1)  // waiting before attempt 2
/// future.cancel()
/// XCTAssertEqual(clock.cancelledActionCount, 1)
/// ```
///
/// ``now`` is a fixed date (settable) so `Retry-After` HTTP-dates give exact delays.
public final class ImmediateRetryClock: RetryClock {
    private struct State {
        var now: Date
        var delays: [TimeInterval] = []
        var pending: [Pending] = []
        var cancelledCount = 0
        var nextID = 0
    }

    private struct Pending {
        let id: Int
        let action: @Sendable () -> Void
    }

    private let state: Protected<State>
    private let holdsActions: Bool

    /// Creates a clock.
    ///
    /// - Parameters:
    ///   - now: The date ``now`` reports. Defaults to 2024-01-01 00:00:00 GMT.
    ///   - holdsActions: Whether actions wait for ``runPendingActions()`` instead of running at once.
    ///     Defaults to `false`.
    public init(now: Date = Date(timeIntervalSince1970: 1_704_067_200), holdsActions: Bool = false) {
        state = Protected(State(now: now))
        self.holdsActions = holdsActions
    }

    /// The fixed current time, against which a `Retry-After` HTTP-date is measured.
    public var now: Date {
        get { state.withLock { $0.now } }
        set { state.withLock { $0.now = newValue } }
    }

    /// Every delay asked for so far, in seconds, in order.
    public var delays: [TimeInterval] {
        state.withLock { $0.delays }
    }

    /// How many held actions wait for ``runPendingActions()``.
    public var pendingActionCount: Int {
        state.withLock { $0.pending.count }
    }

    /// How many scheduled actions were cancelled before they ran.
    public var cancelledActionCount: Int {
        state.withLock { $0.cancelledCount }
    }

    /// Records the delay, then runs `action` at once, or holds it if the clock was made with `holdsActions`.
    ///
    /// - Parameters:
    ///   - seconds: The delay, recorded as given.
    ///   - action: What to run.
    /// - Returns: A token that cancels a held action (and counts it in ``cancelledActionCount``).
    public func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable
    {
        let id = state.withLock { state -> Int in
            state.delays.append(seconds)
            state.nextID += 1
            if holdsActions { state.pending.append(Pending(id: state.nextID, action: action)) }
            return state.nextID
        }
        if !holdsActions {
            action()
            return RetryCancellables.none
        }
        return Token(clock: self, id: id)
    }

    /// Runs every held action, in the order scheduled, including ones scheduled while running them.
    ///
    /// - Returns: How many actions ran.
    @discardableResult
    public func runPendingActions() -> Int {
        var count = 0
        while let next = takeFirstPending() {
            next.action()
            count += 1
        }
        return count
    }

    /// Forgets the recorded delays (held actions stay).
    public func removeRecordedDelays() {
        state.withLock { $0.delays.removeAll() }
    }

    private func takeFirstPending() -> Pending? {
        state.withLock { state in
            state.pending.isEmpty ? nil : state.pending.removeFirst()
        }
    }

    private func cancel(id: Int) {
        let removed = state.withLock { state -> Pending? in
            guard let index = state.pending.firstIndex(where: { $0.id == id }) else { return nil }
            state.cancelledCount += 1
            return state.pending.remove(at: index)
        }
        _ = removed  // released outside the lock: its captures may run deinit code
    }

    private struct Token: RetryCancellable {
        let clock: ImmediateRetryClock
        let id: Int

        func cancel() {
            clock.cancel(id: id)
        }
    }
}

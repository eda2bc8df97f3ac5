import SwiftConnect

/// A ``ConnectivityMonitor`` that tests switch on and off.
///
/// Each change reaches the observers before ``set(_:)`` returns, on the calling thread, so a test can switch the
/// network and check what happened next without waiting; unless another thread is delivering a change at that
/// moment, or an observer calls `set(_:)` itself: the change is then queued, and that delivery tells the observers
/// of it, in order, after the one under way.
///
/// ```swift
/// let network = FakeConnectivityMonitor(.disconnected)
/// let connect = Connect(transport: fake, middlewares: [ConnectivityMiddleware(monitor: network)])
/// let todo = connect.request(TodoConnector.get(id: 1))  // waits
/// network.goOnline()                                     // sent now
/// ```
public final class FakeConnectivityMonitor: ConnectivityMonitor {
    private let observers: ConnectivityObservers

    /// Creates a monitor in the given state.
    ///
    /// - Parameter initial: The state to start in; connected by default.
    public init(_ initial: Connectivity = .connected) {
        observers = ConnectivityObservers(initial: initial)
    }

    /// The state last set.
    public var current: Connectivity { observers.current }

    /// Registers an observer of the changes.
    public func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
        observers.add(handler)
    }

    /// Changes the state; observers are told before this returns (if it differs from the current state), unless a
    /// delivery is under way on another thread or in an observer, which then tells them after its own.
    ///
    /// - Parameter state: The new state.
    public func set(_ state: Connectivity) {
        observers.update(state)
    }

    /// Reports the network gone.
    public func goOffline() {
        set(.disconnected)
    }

    /// Reports the network back.
    ///
    /// - Parameter interfaces: The interfaces in use; `.wifi` by default.
    public func goOnline(over interfaces: Set<Connectivity.Interface> = [.wifi]) {
        set(Connectivity(isConnected: true, interfaces: interfaces))
    }
}

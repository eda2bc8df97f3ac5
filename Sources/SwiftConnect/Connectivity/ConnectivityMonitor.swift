import Foundation

/// Whether the device can reach a network beyond itself, and over what.
///
/// A machine with only its loopback interface up is offline: requests to `localhost` still work (and
/// SwiftConnect never holds them back), but nothing else can be reached.
public struct Connectivity: Sendable, Hashable, CustomStringConvertible {
    /// The kinds of network interface a path can use.
    public enum Interface: String, Sendable, Hashable, CaseIterable {
        /// Wi-Fi.
        case wifi
        /// A cellular (mobile) network.
        case cellular
        /// A wired Ethernet link (also a virtual Ethernet link, such as a container's `veth`).
        case wiredEthernet
        /// Any other interface: a VPN tunnel, a bridge, an interface whose kind is not known.
        case other
    }

    /// Whether a network beyond the loopback interface is usable. Setting it to `false` empties ``interfaces``.
    public var isConnected: Bool {
        didSet { if !isConnected { interfaces = [] } }
    }
    /// The interfaces in use, when the monitor knows them; empty when offline (interfaces set then are dropped) or
    /// unknown.
    public var interfaces: Set<Interface> {
        didSet { if !isConnected && !interfaces.isEmpty { interfaces = [] } }
    }

    /// Creates a connectivity state.
    ///
    /// - Parameters:
    ///   - isConnected: Whether a network beyond the loopback interface is usable.
    ///   - interfaces: The interfaces in use, if known.
    public init(isConnected: Bool, interfaces: Set<Interface> = []) {
        self.isConnected = isConnected
        self.interfaces = isConnected ? interfaces : []
    }

    /// Online, over interfaces not known.
    public static let connected = Connectivity(isConnected: true)
    /// Offline: no interface but loopback is usable.
    public static let disconnected = Connectivity(isConnected: false)

    /// `connected (wifi, wiredEthernet)` or `disconnected`.
    public var description: String {
        guard isConnected else { return "disconnected" }
        guard !interfaces.isEmpty else { return "connected" }
        return "connected (" + interfaces.map(\.rawValue).sorted().joined(separator: ", ") + ")"
    }
}

/// Reports whether the network is reachable, and every change of it.
///
/// SwiftConnect ships one for each platform (``SystemConnectivityMonitor``) and a fake for tests
/// (`FakeConnectivityMonitor` in SwiftConnectTesting); an app can supply its own, such as one that also
/// watches a VPN or a captive portal.
///
/// A monitor calls each observer on a thread of its own choosing, once per change of ``current``, in order;
/// an observer must not block.
public protocol ConnectivityMonitor: AnyObject, Sendable {
    /// The state now.
    var current: Connectivity { get }

    /// Calls `handler` with every later change of ``current``, until the returned observation is cancelled or
    /// released.
    ///
    /// - Parameter handler: Called with the new state after each change.
    /// - Returns: The observation; keep it for as long as the handler should be called.
    func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation
}

/// A registration of a connectivity observer: cancel it, or release it, to stop the calls.
public final class ConnectivityObservation: Sendable {
    private let onCancel: Protected<(@Sendable () -> Void)?>

    /// Creates an observation that runs `onCancel` once, when it is cancelled or released.
    ///
    /// - Parameter onCancel: Removes the observer from its monitor.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Protected(onCancel)
    }

    /// Stops the calls. Later calls do nothing.
    public func cancel() {
        let action = onCancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}

extension ConnectivityMonitor {
    /// The changes of ``current`` as an asynchronous sequence, starting with the state now. The sequence keeps the
    /// monitor until it ends: until its consumer stops iterating, or is released.
    ///
    /// ```swift
    /// for await state in monitor.changes {
    ///     print("network:", state)
    /// }
    /// ```
    public var changes: AsyncStream<Connectivity> {
        AsyncStream { continuation in
            // A change can land between registering and reading `current`, and be delivered before the state read
            // is yielded: the sequence would then end on the older state. Changes delivered before the first
            // element wait, and the latest of them is the first element; later ones go straight through.
            let gate = Protected<(isOpen: Bool, pending: Connectivity?)>((false, nil))
            let observation = observe { state in
                let goesThrough = gate.withLock { gate in
                    if !gate.isOpen { gate.pending = state }
                    return gate.isOpen
                }
                if goesThrough { continuation.yield(state) }
            }
            let now = current
            gate.withLock { gate in
                // Yielded under the lock, so that a change delivered next cannot overtake it.
                continuation.yield(gate.pending ?? now)
                gate.isOpen = true
            }
            // The monitor is kept until the sequence ends (its consumer stops or is released): the changes of a
            // monitor nobody else keeps (`try SystemConnectivityMonitor().changes`) still come.
            continuation.onTermination = { _ in
                observation.cancel()
                withExtendedLifetime(self) {}
            }
        }
    }
}

/// The observers of a monitor, for monitors to share: register, remove, and tell all of them about a change.
///
/// ```swift
/// final class MyMonitor: ConnectivityMonitor {
///     private let observers = ConnectivityObservers()
///     var current: Connectivity { observers.current }
///     func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
///         observers.add(handler)
///     }
///     func networkChanged(to state: Connectivity) { observers.update(state) }
/// }
/// ```
public final class ConnectivityObservers: Sendable {
    private struct State {
        var current: Connectivity
        var handlers: [UInt64: @Sendable (Connectivity) -> Void] = [:]
        var nextID: UInt64 = 0
        /// Changes not yet delivered, each with the ids of the handlers registered when it happened: each is looked
        /// up again just before it is called, so that one whose observation ended meanwhile is not.
        var undelivered: [(Connectivity, [UInt64])] = []
        /// Whether a thread is delivering changes: another change is queued for it, which keeps the order.
        var isDelivering = false
    }

    private let state: Protected<State>

    /// Creates an empty set of observers.
    ///
    /// - Parameter initial: The state before the first update.
    public init(initial: Connectivity = .connected) {
        state = Protected(State(current: initial))
    }

    /// The last state given to ``update(_:)``, or the initial one.
    public var current: Connectivity { state.withLock { $0.current } }

    /// Adds `handler`; it is called on each later change until the observation ends (a change being delivered when
    /// the observation ends does not reach it if it has not yet).
    ///
    /// - Parameter handler: Called with each new state.
    /// - Returns: The observation that removes it.
    public func add(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
        let id = state.withLock { state in
            state.nextID &+= 1
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        return ConnectivityObservation { [weak self] in
            _ = self?.state.withLock { $0.handlers.removeValue(forKey: id) }
        }
    }

    /// Records `new` and, if it differs from the current state, calls every handler with it before returning.
    ///
    /// Changes reach the handlers in the order of the updates, one at a time: an update made while another
    /// thread delivers (or by a handler) is delivered by that thread, after the change before it.
    ///
    /// - Parameter new: The state now.
    public func update(_ new: Connectivity) {
        let delivers = state.withLock { state -> Bool in
            guard state.current != new else { return false }
            state.current = new
            state.undelivered.append((new, state.handlers.keys.sorted()))
            guard !state.isDelivering else { return false }
            state.isDelivering = true
            return true
        }
        guard delivers else { return }
        while true {
            let next: (Connectivity, [UInt64])? = state.withLock { state in
                guard !state.undelivered.isEmpty else {
                    state.isDelivering = false
                    return nil
                }
                return state.undelivered.removeFirst()
            }
            guard let (change, ids) = next else { return }
            // A handler whose observation ended since the change (another handler cancelled it) is not called.
            for id in ids { state.withLock { $0.handlers[id] }?(change) }
        }
    }
}

#if canImport(Network)
    import Foundation
    import Network

    /// The system's connectivity on Apple platforms, from `NWPathMonitor`.
    ///
    /// Connected when the path is satisfied over an interface other than loopback, or requires a connection (VPN On
    /// Demand: a request brings it up); the interfaces it uses are reported (`wifi`, `cellular`, `wiredEthernet`,
    /// `other`). Until `NWPathMonitor` delivers its first path
    /// (within moments of creation), the monitor reports connected, so that requests made right at launch are
    /// not failed by a state nobody has measured yet.
    ///
    /// ```swift
    /// let monitor = try SystemConnectivityMonitor()  // this type on Apple platforms
    /// ```
    public final class PathConnectivityMonitor: ConnectivityMonitor {
        private let observers: ConnectivityObservers
        /// The system monitor, behind a lock because `NWPathMonitor` is not declared `Sendable`; only `init` and
        /// `deinit` touch it.
        private let pathMonitor: Protected<NWPathMonitor>

        /// Starts monitoring. Never throws; declared `throws` to match the Linux monitor, so that
        /// `try SystemConnectivityMonitor()` compiles on every platform.
        public init() throws {
            let observers = ConnectivityObservers(initial: .connected)
            let monitor = NWPathMonitor()
            monitor.pathUpdateHandler = { path in
                observers.update(PathConnectivityMonitor.connectivity(of: path))
            }
            monitor.start(queue: DispatchQueue(label: "SwiftConnect.PathConnectivityMonitor"))
            self.observers = observers
            pathMonitor = Protected(monitor)
        }

        deinit {
            pathMonitor.withLock { $0.cancel() }
        }

        /// The state of the last path the system reported.
        public var current: Connectivity { observers.current }

        /// Registers an observer of the changes; it is called on the monitor's own queue.
        public func observe(_ handler: @escaping @Sendable (Connectivity) -> Void) -> ConnectivityObservation {
            observers.add(handler)
        }

        /// The connectivity a path gives, by ``PathConnectivityRule`` (tested on every platform).
        static func connectivity(of path: NWPath) -> Connectivity {
            let status: PathConnectivityRule.Status =
                switch path.status {
                case .satisfied: .satisfied
                case .requiresConnection: .requiresConnection
                default: .unsatisfied
                }
            var interfaces: Set<Connectivity.Interface> = []
            if path.usesInterfaceType(.wifi) { interfaces.insert(.wifi) }
            if path.usesInterfaceType(.cellular) { interfaces.insert(.cellular) }
            if path.usesInterfaceType(.wiredEthernet) { interfaces.insert(.wiredEthernet) }
            if path.usesInterfaceType(.other) { interfaces.insert(.other) }
            return PathConnectivityRule.connectivity(
                status: status, interfaces: interfaces, usesLoopback: path.usesInterfaceType(.loopback))
        }
    }

    /// The connectivity monitor of the platform: ``PathConnectivityMonitor`` (`NWPathMonitor`) here.
    public typealias SystemConnectivityMonitor = PathConnectivityMonitor
#endif

/// The rule ``PathConnectivityMonitor`` reads an `NWPath` by, apart from the Network framework so that it is tested
/// on every platform.
enum PathConnectivityRule {
    /// An `NWPath`'s status.
    enum Status {
        case satisfied
        /// Not up, but a connection would bring it up (VPN On Demand, a cellular interface asleep): sending is what
        /// it waits for.
        case requiresConnection
        case unsatisfied
    }

    /// Connected for a satisfied path over anything but loopback, and for one that requires a connection (holding
    /// requests until the path is up would wait for ever: only a request brings it up); disconnected otherwise.
    static func connectivity(status: Status, interfaces: Set<Connectivity.Interface>, usesLoopback: Bool)
        -> Connectivity
    {
        switch status {
        case .unsatisfied: return .disconnected
        case .requiresConnection: return Connectivity(isConnected: true, interfaces: interfaces)
        case .satisfied:
            if interfaces.isEmpty && usesLoopback { return .disconnected }
            return Connectivity(isConnected: true, interfaces: interfaces)
        }
    }
}

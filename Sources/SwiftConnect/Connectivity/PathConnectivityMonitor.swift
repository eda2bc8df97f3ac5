#if canImport(Network)
    import Foundation
    import Network

    /// The system's connectivity on Apple platforms, from `NWPathMonitor`.
    ///
    /// Connected when the path is satisfied over an interface other than loopback; the interfaces it uses are
    /// reported (`wifi`, `cellular`, `wiredEthernet`, `other`). Until `NWPathMonitor` delivers its first path
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

        /// The connectivity a path gives: a satisfied path over anything but loopback is connected.
        static func connectivity(of path: NWPath) -> Connectivity {
            guard path.status == .satisfied else { return .disconnected }
            var interfaces: Set<Connectivity.Interface> = []
            if path.usesInterfaceType(.wifi) { interfaces.insert(.wifi) }
            if path.usesInterfaceType(.cellular) { interfaces.insert(.cellular) }
            if path.usesInterfaceType(.wiredEthernet) { interfaces.insert(.wiredEthernet) }
            if path.usesInterfaceType(.other) { interfaces.insert(.other) }
            if interfaces.isEmpty && path.usesInterfaceType(.loopback) { return .disconnected }
            return Connectivity(isConnected: true, interfaces: interfaces)
        }
    }

    /// The connectivity monitor of the platform: ``PathConnectivityMonitor`` (`NWPathMonitor`) here.
    public typealias SystemConnectivityMonitor = PathConnectivityMonitor
#endif

import Foundation

/// The engine of the whole process: the transport that ``Connect/default`` and every `Connect` made without one use.
///
/// Set it once, at start-up, before any client is made, as `LoggingSystem.bootstrap` is in swift-log. A Linux server
/// does this to run every client on AsyncHTTPClient, including those created by code it does not own:
///
/// ```swift
/// import SwiftConnectAsyncHTTPClient
///
/// @main struct Server {
///     static func main() async throws {
///         try ConnectSystem.bootstrap(transport: AsyncHTTPClientTransport())
///         // ... Connect.default and Connect() now send with AsyncHTTPClient
///     }
/// }
/// ```
///
/// The rules:
/// - **Without a bootstrap**, each `Connect` made without a transport gets a new ``URLSessionTransport`` of its own,
///   as before.
/// - **Once only.** A second call fails with ``BootstrapError/alreadyBootstrapped`` and changes nothing: a process
///   has one engine, and two parts of an app each setting theirs would otherwise leave it to whichever ran last.
/// - **Before first use.** Once a client has taken the default (``Connect/default`` touched, or a `Connect()` made),
///   a call fails with ``BootstrapError/defaultAlreadyUsed`` and changes nothing: clients made earlier would stay on
///   the old engine while later ones moved, and no one would see it.
/// - **Tests running in parallel** should not bootstrap: the setting is the process's, and stays for the rest of
///   the run. Give each client its transport, or, for code that makes its own `Connect()`, scope a transport to the
///   test with `withDefaultTransport(_:operation:)`, which other tests do not see.
///
/// The bootstrapped transport is shared by every client that uses it (one connection pool for the process) and is
/// never shut down by them: the app shuts it down, if it must, when it is done.
public enum ConnectSystem {
    /// Why ``bootstrap(transport:)`` refused to set the process's transport.
    public enum BootstrapError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The process's transport was set already; it is not replaced.
        case alreadyBootstrapped
        /// A client has already taken the default transport; setting one now would leave that client on another.
        case defaultAlreadyUsed

        /// What went wrong and what to do, in a sentence.
        public var description: String {
            switch self {
            case .alreadyBootstrapped:
                "ConnectSystem.bootstrap was called twice: the process's transport is set once, at start-up"
            case .defaultAlreadyUsed:
                "ConnectSystem.bootstrap was called after a client had taken the default transport (Connect.default "
                    + "or a Connect made without a transport): call it first thing at start-up"
            }
        }
    }

    /// What the process has decided so far, behind a lock: `bootstrap` and the first client may race.
    private struct State {
        /// The bootstrapped transport, if any.
        var transport: (any Transport)?
        /// Whether a client has taken the default (then no bootstrap is accepted).
        var used = false
    }

    private static let state = Protected(State())

    /// A transport scoped to the current task and its children (`withDefaultTransport(_:operation:)`).
    @TaskLocal private static var scoped: (any Transport)?

    /// Sets the transport that ``Connect/default`` and every `Connect` made without one use, for the rest of the
    /// process.
    ///
    /// ```swift
    /// try ConnectSystem.bootstrap(transport: AsyncHTTPClientTransport())
    /// ```
    ///
    /// - Parameter transport: The engine every such client shares.
    /// - Throws: ``BootstrapError/alreadyBootstrapped`` on a second call, ``BootstrapError/defaultAlreadyUsed`` once a
    ///   client has taken the default; nothing changes then.
    public static func bootstrap(transport: any Transport) throws(BootstrapError) {
        let refusal = state.withLock { state -> BootstrapError? in
            guard state.transport == nil else { return .alreadyBootstrapped }
            guard !state.used else { return .defaultAlreadyUsed }
            state.transport = transport
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The transport a `Connect` made without one gets: the one scoped to the current task, else the bootstrapped
    /// one, else a new ``URLSessionTransport``.
    ///
    /// Reading it outside a scope counts as taking the default: ``bootstrap(transport:)`` is refused from then on.
    public static var defaultTransport: any Transport {
        scoped ?? processTransport
    }

    /// The process's default, whatever the current task's scope: the bootstrapped transport, else a new
    /// ``URLSessionTransport``. ``Connect/default``, made once for the whole process, takes this one.
    static var processTransport: any Transport {
        let bootstrapped = state.withLock { state -> (any Transport)? in
            state.used = true
            return state.transport
        }
        return bootstrapped ?? URLSessionTransport()
    }

    /// Whether ``bootstrap(transport:)`` has set the process's transport.
    public static var isBootstrapped: Bool { state.withLock { $0.transport != nil } }

    /// Runs `operation` with `transport` as the default of every `Connect` made without one in it, on this task and
    /// its child tasks only: what a test uses to check code that makes its own clients, in parallel with others.
    ///
    /// ```swift
    /// let fake = FakeTransport()
    /// let client = ConnectSystem.withDefaultTransport(fake) { Connect() }  // sends through `fake`
    /// ```
    ///
    /// (``Connect/default``, made once for the process, is not made again: scope the clients you make.)
    ///
    /// - Parameters:
    ///   - transport: The transport for clients made in `operation`.
    ///   - operation: The code to run.
    /// - Returns: What `operation` returns.
    public static func withDefaultTransport<R>(_ transport: any Transport, operation: () throws -> R) rethrows -> R {
        try $scoped.withValue(transport, operation: operation)
    }

    /// Runs the asynchronous `operation` with `transport` as the default of every `Connect` made without one in it,
    /// on this task and its child tasks only (see `withDefaultTransport(_:operation:)`).
    ///
    /// - Parameters:
    ///   - transport: The transport for clients made in `operation`.
    ///   - operation: The code to run.
    /// - Returns: What `operation` returns.
    public static func withDefaultTransport<R: Sendable>(
        _ transport: any Transport, operation: () async throws -> R
    ) async rethrows -> R {
        try await $scoped.withValue(transport, operation: operation)
    }

    /// Forgets the bootstrap and the first use: for this module's own tests of the rules above, which run serially.
    static func resetForTesting() {
        state.withLock { $0 = State() }
    }
}

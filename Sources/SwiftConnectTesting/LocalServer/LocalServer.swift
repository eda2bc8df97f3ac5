import Dispatch
import Foundation
import SwiftConnect

/// A real HTTP/1.1 server on `127.0.0.1`, for tests, benchmarks and demos.
///
/// Register routes, start it, point a client at ``baseURL``, then assert on what it received and on its
/// statistics. Each connection is served by its own thread, with keep-alive, pipelining, chunked bodies and
/// `Expect: 100-continue`. Request head lines may end with CRLF or a bare LF (RFC 9112 §2.2 allows both). A request
/// with `Transfer-Encoding` and `Content-Length`, or with `Transfer-Encoding` in HTTP/1.0, is read by its transfer
/// coding, and its connection closed after the answer (RFC 9112 §6.1). A
/// ``Response`` can also misbehave on purpose (see ``Response/Fault``) to exercise a
/// client's error handling.
///
/// ```swift
/// let server = try LocalServer.started()
/// defer { server.stop() }
/// server.route("GET", "/users/:id") { request in
///     .json(["id": request.pathParameters["id"]!])
/// }
/// server.route("GET", "/flaky") { _ in .status(200).withFault(.closeBeforeHeaders) }
///
/// let url = server.baseURL.appendingPathComponent("users/42")
/// // … fetch `url` with the client under test …
/// XCTAssertEqual(server.requestCount(for: "GET", path: "/users/42"), 1)
/// ```
///
/// Bodies too large for memory stream both ways: a ``streamingRoute(_:_:handler:)`` reads the request body piece by
/// piece from a ``BodyReader``, and ``Response/stream(contentLength:contentType:status:producer:)`` (or
/// ``Response/generatedBytes(count:seed:contentType:status:)``) writes the response body as it is produced.
///
/// An unknown route answers 404 with `{"error":"no route for GET /x"}`. ``stop()`` closes every connection and
/// waits for the server's threads; it is also called when the server is deinitialised.
public final class LocalServer: Sendable {
    let core: Core

    /// Creates a stopped server with no routes.
    ///
    /// - Parameter recordsRequests: Whether ``requests`` keeps every request received (bodies included).
    ///   Turn it off for long benchmarks; the counters keep working.
    public init(recordsRequests: Bool = true) {
        core = Core(recordsRequests: recordsRequests)
    }

    deinit {
        core.stop()
    }

    /// Creates a server and starts it.
    ///
    /// - Returns: A running server.
    /// - Throws: ``SocketError`` if the listening socket cannot be set up.
    public static func started() throws -> LocalServer {
        let server = LocalServer()
        try server.start()
        return server
    }

    /// Starts listening on `127.0.0.1`, on a port chosen by the system. Does nothing if already running.
    ///
    /// A stopped server can be started again; it usually gets another port. Routes and statistics are kept.
    ///
    /// - Throws: ``SocketError`` if the listening socket cannot be set up.
    public func start() throws {
        try core.start()
    }

    /// Closes the listener and every open connection, then waits for the server's threads to finish.
    ///
    /// Requests being handled, delayed or hanging on a fault end at once; their clients see the connection
    /// close. A handler blocked in your own code cannot be interrupted: `stop()` waits for it 5 seconds at most,
    /// then returns and says so on standard error. Calling it again, or on a server never started, does nothing.
    /// Called from a route handler, it does not wait (the handler's own thread could never finish).
    public func stop() {
        core.stop()
    }

    /// The port the server listens on, or last listened on; 0 before the first ``start()``.
    public var port: Int {
        core.state.withLock { $0.port }
    }

    /// `http://127.0.0.1:PORT`, with no trailing slash.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)")!
    }

    /// Registers `handler` for requests whose method and path match.
    ///
    /// Routes can be added while the server runs. When several match, the one registered last wins.
    ///
    /// - Parameters:
    ///   - method: The method to match exactly (`"GET"`), or `"*"` for any method.
    ///   - path: The path to match. Each `/`-separated segment is compared with the request's percent-decoded
    ///     segment; a `:name` segment matches any one segment and captures it in ``Request/pathParameters``;
    ///     a trailing `*` matches any rest of the path (`/files/*`, `/api*`, or `*` for everything).
    ///   - handler: Builds the response. It runs on the connection's thread, may block, and must be thread-safe.
    public func route(
        _ method: String,
        _ path: String,
        handler: @escaping @Sendable (LocalServer.Request) -> LocalServer.Response
    ) {
        let route = Route(method: method, pattern: path, handler: .buffered(handler))
        core.state.withLock { $0.routes.append(route) }
    }

    /// Registers `handler` for requests whose method and path match, giving it the body to read as it arrives.
    ///
    /// Use it for bodies too large to hold in memory: the handler gets the request with an empty
    /// ``Request/body`` and a ``BodyReader`` that pulls the body from the connection piece by piece. Whatever the
    /// handler leaves unread is read and dropped before the connection serves its next request; if the client
    /// asked for `Expect: 100-continue` and the handler read nothing, the server answers without inviting the
    /// body, then closes the connection. An invalid chunked body is answered 400 instead of the handler's response.
    ///
    /// The request is counted and recorded (with an empty body) before the handler runs; its recorded
    /// ``Request/bodyLength`` is set once the body has been read.
    ///
    /// ```swift
    /// server.streamingRoute("POST", "/upload") { request, body in
    ///     var byteCount = 0
    ///     while let piece = body.read(maxBytes: 64 * 1024) { byteCount += piece.count }
    ///     return .text("\(byteCount)")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - method: The method to match exactly, or `"*"` for any method.
    ///   - path: The path pattern, as for ``route(_:_:handler:)``. Streaming and buffered routes share one list:
    ///     when several match, the one registered last wins.
    ///   - handler: Reads the body and builds the response. It runs on the connection's thread, may block, and
    ///     must be thread-safe; the reader must not be used after it returns.
    public func streamingRoute(
        _ method: String,
        _ path: String,
        handler: @escaping @Sendable (LocalServer.Request, LocalServer.BodyReader) -> LocalServer.Response
    ) {
        let route = Route(method: method, pattern: path, handler: .streaming(handler))
        core.state.withLock { $0.routes.append(route) }
    }

    /// Why the server could not start: the socket call that failed and its `errno`.
    public struct SocketError: Error, CustomStringConvertible {
        /// The failing call, for example `"bind"`.
        public let operation: String
        /// The `errno` it set.
        public let code: Int32

        /// A sentence naming the call and the system's message for the error.
        public var description: String {
            "LocalServer: \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

// MARK: - Core

extension LocalServer {
    /// Everything the server's threads share. The threads hold the core, never the `LocalServer`, so the server
    /// can be deinitialised (and stopped) while they run.
    final class Core: Sendable {
        struct State {
            var routes: [Route] = []
            var port = 0
            var run: Run?
            /// Whether the server took a recorded port in a replay (no listener, no ``run``): a second `start()`
            /// takes no other one.
            var isReplaying = false
            var nextConnectionID = 1
            var statistics = Statistics()
            /// Callers of ``LocalServer/waitUntilIdle(timeout:)``, signalled when no request is in flight. Kept
            /// apart from `statistics`, which ``LocalServer/resetStatistics()`` replaces while they may wait.
            var idleWaiters: [DispatchSemaphore] = []
            /// Signalled once no connection is open (``LocalServer/waitUntilNoConnection(timeout:)``).
            var connectionWaiters: [DispatchSemaphore] = []
        }

        let state = Protected(State())
        let recordsRequests: Bool

        init(recordsRequests: Bool) {
            self.recordsRequests = recordsRequests
        }

        func start() throws {
            try state.withLock { state in
                guard state.run == nil, !state.isReplaying else { return }
                if let port = LocalServer.portPlan.snapshot?.portToReserve() {
                    // A replay: the server's URLs name the recorded port, and nothing listens there.
                    state.port = port
                    state.isReplaying = true
                    return
                }
                let (listener, port) = try Self.listen()
                let wake: WakePipe
                do {
                    wake = try WakePipe()
                } catch {
                    listener.closeNow()
                    throw error
                }
                let run = Run(listener: listener, wake: wake)
                state.run = run
                state.port = port
                run.group.enter()
                Core.spawnThread(name: "LocalServer :\(port) accept") { [self] in
                    acceptLoop(run)
                }
            }
        }

        /// A listener on a port the system picks, kept by the active ``LocalServer/PortPlan`` if any.
        private static func listen() throws(LocalServer.SocketError) -> (socket: Socket, port: Int) {
            let listener = try Socket.listenOnLoopback()
            LocalServer.portPlan.snapshot?.started(on: listener.port)
            return listener
        }

        func stop() {
            guard
                let run = state.withLock({ state -> Run? in
                    // A replaying server started again takes the next recorded port, as a recording one listens anew.
                    state.isReplaying = false
                    defer { state.run = nil }
                    return state.run
                })
            else { return }
            run.beginStopping()
            guard !run.ownsCurrentThread, run.group.wait(timeout: .now() + Core.stopGracePeriod) == .timedOut else {
                return
            }
            // A handler blocked in the test's own code (on a semaphore never signalled, say) cannot be interrupted:
            // waiting for it hung `stop()`, and every `defer { server.stop() }`, for ever. Its connection is closed
            // already; its thread ends when the handler returns.
            let running = state.withLock { $0.statistics.requestsInFlight }
            let message =
                "LocalServer :\(state.withLock { $0.port }): stop() stopped waiting after \(Int(Core.stopGracePeriod)) s "
                + "for \(running) request handler(s) still running; is one blocked on something never signalled?\n"
            FileHandle.standardError.write(Data(message.utf8))
        }

        /// How long ``stop()`` waits for the server's threads, request handlers included.
        static let stopGracePeriod: TimeInterval = 5

        /// Accepts connections until the run stops, one thread per connection; then releases the listener.
        private func acceptLoop(_ run: Run) {
            run.markCurrentThread()
            defer {
                run.listener.closeNow()
                run.wake.closeBoth()
                run.group.leave()
            }
            while waitForConnection(on: run.listener, orWake: run.wake) {
                let (accepted, error) = run.listener.acceptingConnection()
                guard let socket = accepted else {
                    // Out of descriptors or memory (a test that opens many connections): the connection waits in the
                    // backlog and the listener stays readable, so retrying at once would spin a core until one frees.
                    // Back off, as nginx does, and stay quick to stop.
                    if Self.isResourceShortage(error), waitForWake(run.wake, milliseconds: 50) { return }
                    continue
                }
                let id = state.withLock { state in
                    defer { state.nextConnectionID += 1 }
                    return state.nextConnectionID
                }
                guard run.register(socket, id: id) else { return }  // Stopping: `register` closed it.
                state.withLock { state in
                    state.statistics.connectionCount += 1
                    state.statistics.openConnections += 1
                }
                run.group.enter()
                Core.spawnThread(name: "LocalServer connection \(id)") { [self] in
                    run.markCurrentThread()
                    defer {
                        run.unregisterAndClose(socket, id: id)
                        connectionClosed()
                        run.group.leave()
                    }
                    let connection = Connection(id: id, socket: socket, core: self, run: run)
                    connection.serve()
                }
            }
        }

        /// Whether `accept`'s `error` says the process or the system ran out of something that frees with time.
        static func isResourceShortage(_ error: Int32) -> Bool {
            error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM
        }

        /// Room for handlers that recurse or decode large JSON on the connection thread.
        private static let threadStackSize = 1 << 20

        private static func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) {
            let thread = Thread(block: body)
            thread.name = name
            thread.stackSize = threadStackSize
            thread.start()
        }
    }
}

// MARK: - Run

extension LocalServer {
    /// One listening period, from `start()` to `stop()`: the listener, the open connections and the threads.
    final class Run: Sendable {
        struct State {
            var isStopping = false
            var sockets: [Int: Socket] = [:]
            /// Connections hanging in a fault: `stop()` must let them end with a reset, not a clean close.
            var abortive: Set<Int> = []
        }

        let listener: Socket
        let wake: WakePipe
        /// Entered by every thread of the run, so `stop()` can wait for all of them.
        let group = DispatchGroup()
        private let state = Protected(State())

        init(listener: Socket, wake: WakePipe) {
            self.listener = listener
            self.wake = wake
        }

        var isStopping: Bool {
            state.withLock { $0.isStopping }
        }

        /// Records an accepted connection so `stop()` can shut it down.
        ///
        /// - Returns: `false`, after closing the socket, if the run is stopping.
        func register(_ socket: Socket, id: Int) -> Bool {
            state.withLock { state in
                guard !state.isStopping else {
                    socket.closeNow()
                    return false
                }
                state.sockets[id] = socket
                return true
            }
        }

        /// Closes a connection. Under the lock, so `stop()` never shuts down a descriptor number already reused.
        func unregisterAndClose(_ socket: Socket, id: Int) {
            state.withLock { state in
                state.sockets[id] = nil
                state.abortive.remove(id)
                socket.closeNow()
            }
        }

        /// Records that connection `id` is about to hang in a fault, to be ended by a reset.
        ///
        /// - Returns: `false` if the run is stopping: the connection must end now instead.
        func markAbortive(id: Int) -> Bool {
            state.withLock { state in
                guard !state.isStopping else { return false }
                state.abortive.insert(id)
                return true
            }
        }

        /// Wakes every connection thread and the accept loop.
        ///
        /// A normal connection is shut down both ways. One hanging in a fault is only shut down for reading:
        /// its thread wakes and resets it, because a clean close after a partial response head makes
        /// FoundationNetworking's `URLSession` (curl) report success without a response, and crash.
        func beginStopping() {
            state.withLock { state in
                state.isStopping = true
                for (id, socket) in state.sockets {
                    if state.abortive.contains(id) { socket.shutdownRead() } else { socket.shutdownBoth() }
                }
            }
            wake.signal()
        }

        private static let threadKey = "SwiftConnectTesting.LocalServer.Run"

        /// Tags the current thread as one of this run's, see ``ownsCurrentThread``.
        func markCurrentThread() {
            Thread.current.threadDictionary[Run.threadKey] = self
        }

        /// Whether the caller runs on one of this run's threads (in a handler): it must not wait for them.
        var ownsCurrentThread: Bool {
            (Thread.current.threadDictionary[Run.threadKey] as AnyObject?) === self
        }
    }
}

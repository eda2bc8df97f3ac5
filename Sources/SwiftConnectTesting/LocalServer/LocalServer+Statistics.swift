import Dispatch
import Foundation
import SwiftConnect

extension LocalServer {
    /// The counters behind the public statistics, kept in ``Core/State``.
    struct Statistics {
        var requestCount = 0
        var requests: [Request] = []
        var connectionCount = 0
        var openConnections = 0
        var requestsInFlight = 0
        var maxConcurrentRequests = 0
        /// Incremented by every ``LocalServer/resetStatistics()``, so a ``RecordTicket`` taken before a reset
        /// cannot update the wrong entry of ``requests`` after it.
        var generation = 0
    }

    /// Where a request was recorded in ``Statistics/requests``, to complete its entry later.
    struct RecordTicket {
        let generation: Int
        let index: Int
    }

    /// Waits until no request is in flight: every response written, or its connection gone.
    ///
    /// An event to wait on instead of polling ``requestsInFlight``, for example to check that a client let go
    /// of an exchange it abandoned.
    ///
    /// - Parameter timeout: The longest wait, in seconds (NaN does not wait).
    /// - Returns: Whether the server became idle within `timeout`.
    @discardableResult
    public func waitUntilIdle(timeout: TimeInterval) -> Bool {
        guard let waiter = idleWaiter() else { return true }
        // A NaN timeout is over at once: Dispatch reads `now() + .nan` as "never".
        return waiter.wait(timeout: timeout.isNaN ? .now() : .now() + timeout) == .success
    }

    /// Waits until no connection is open: every client has closed its connections (or the server closed them).
    ///
    /// An event to wait on instead of polling ``openConnections``, for example to know that a client has really
    /// stopped a transfer it gave up on, which ``waitUntilIdle(timeout:)`` cannot tell once the whole response was
    /// written.
    ///
    /// - Parameter timeout: The longest wait, in seconds (NaN does not wait).
    /// - Returns: Whether every connection closed within `timeout`.
    @discardableResult
    public func waitUntilNoConnection(timeout: TimeInterval) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let isOpen = core.state.withLock { state in
            guard state.statistics.openConnections > 0 else { return false }
            state.connectionWaiters.append(waiter)
            return true
        }
        guard isOpen else { return true }
        return waiter.wait(timeout: timeout.isNaN ? .now() : .now() + timeout) == .success
    }

    /// A semaphore signalled once no request is in flight, or `nil` when none is now.
    func idleWaiter() -> DispatchSemaphore? {
        let waiter = DispatchSemaphore(value: 0)
        return core.state.withLock { state in
            guard state.statistics.requestsInFlight > 0 else { return nil }
            state.idleWaiters.append(waiter)
            return waiter
        }
    }

    /// The number of requests received since the start or the last ``resetStatistics()``.
    ///
    /// A request is counted once its body has been read, before its handler runs: when a client has its response,
    /// the request is already counted. A request to a streaming route is counted before its handler runs, its
    /// body not read yet.
    public var requestCount: Int {
        core.state.withLock { $0.statistics.requestCount }
    }

    /// Every request received since the start or the last ``resetStatistics()``, in order of arrival.
    ///
    /// Empty if the server was created with `recordsRequests: false`. Requests to streaming routes are recorded
    /// with an empty ``Request/body``, and with their ``Request/bodyLength`` once their body has been read.
    public var requests: [Request] {
        core.state.withLock { $0.statistics.requests }
    }

    /// The number of recorded requests with the given method and raw path.
    ///
    /// - Parameters:
    ///   - method: The method, compared exactly; `"*"` for any.
    ///   - path: The raw path (``Request/path``: still percent-encoded, without the query), compared exactly.
    /// - Returns: The count, 0 if the server was created with `recordsRequests: false`.
    public func requestCount(for method: String, path: String) -> Int {
        requests.lazy.filter { (method == "*" || $0.method == method) && $0.path == path }.count
    }

    /// The number of connections accepted since the start or the last ``resetStatistics()``.
    public var connectionCount: Int {
        core.state.withLock { $0.statistics.connectionCount }
    }

    /// The number of connections open right now.
    public var openConnections: Int {
        core.state.withLock { $0.statistics.openConnections }
    }

    /// The number of requests being handled right now: from their headers parsed to their response written. The
    /// wait before a connection closes, while the server reads what the client still sends, is not counted.
    public var requestsInFlight: Int {
        core.state.withLock { $0.statistics.requestsInFlight }
    }

    /// The peak of ``requestsInFlight`` since the start or the last ``resetStatistics()``: use it to check a
    /// client's cap on concurrent requests.
    public var maxConcurrentRequests: Int {
        core.state.withLock { $0.statistics.maxConcurrentRequests }
    }

    /// Zeroes the counters and empties ``requests``.
    ///
    /// ``openConnections`` and ``requestsInFlight`` describe the present and are kept; ``maxConcurrentRequests``
    /// restarts from the requests in flight now.
    public func resetStatistics() {
        core.state.withLock { state in
            let open = state.statistics.openConnections
            let inFlight = state.statistics.requestsInFlight
            let generation = state.statistics.generation
            state.statistics = Statistics()
            state.statistics.generation = generation + 1
            state.statistics.openConnections = open
            state.statistics.requestsInFlight = inFlight
            state.statistics.maxConcurrentRequests = inFlight
        }
    }
}

extension LocalServer.Core {
    /// A request's headers were parsed: it is now in flight.
    func requestStarted() {
        state.withLock { state in
            state.statistics.requestsInFlight += 1
            state.statistics.maxConcurrentRequests = max(
                state.statistics.maxConcurrentRequests,
                state.statistics.requestsInFlight
            )
        }
    }

    /// A connection was closed.
    func connectionClosed() {
        let waiters: [DispatchSemaphore] = state.withLock { state in
            state.statistics.openConnections -= 1
            guard state.statistics.openConnections == 0 else { return [] }
            defer { state.connectionWaiters.removeAll() }
            return state.connectionWaiters
        }
        for waiter in waiters { waiter.signal() }
    }

    /// A request's response was written, or its connection failed.
    func requestFinished() {
        let waiters: [DispatchSemaphore] = state.withLock { state in
            state.statistics.requestsInFlight -= 1
            guard state.statistics.requestsInFlight == 0 else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.signal() }
    }

    /// Finds the route for `request`.
    ///
    /// - Returns: The request with its path parameters, and the matching route's handler or `nil` for a 404.
    func match(_ request: LocalServer.Request) -> (LocalServer.Request, Route.Handler?) {
        state.withLock { state in
            var request = request
            for route in state.routes.reversed() {
                if let parameters = route.match(method: request.method, path: request.decodedPathSegments) {
                    request.pathParameters = parameters
                    return (request, route.handler)
                }
            }
            return (request, nil)
        }
    }

    /// Counts `request` and, if requests are recorded, appends it to the log.
    ///
    /// - Returns: Where it was recorded, or `nil` if requests are not recorded.
    @discardableResult
    func record(_ request: LocalServer.Request) -> LocalServer.RecordTicket? {
        state.withLock { state in
            state.statistics.requestCount += 1
            guard recordsRequests else { return nil }
            state.statistics.requests.append(request)
            return LocalServer.RecordTicket(
                generation: state.statistics.generation,
                index: state.statistics.requests.count - 1
            )
        }
    }

    /// Sets the body length of a recorded request, unless the statistics were reset since it was recorded.
    func recordBodyLength(_ length: Int, for ticket: LocalServer.RecordTicket) {
        state.withLock { state in
            guard ticket.generation == state.statistics.generation,
                state.statistics.requests.indices.contains(ticket.index)
            else { return }
            state.statistics.requests[ticket.index].bodyLength = length
        }
    }
}

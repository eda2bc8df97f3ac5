import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// Caps how many requests of a client are in flight at once; the others wait their turn, first in, first out
/// (while a ``ConnectivityMiddleware`` holds it for the network, those that need none go first).
///
/// Give one to a client; every request of that client then passes through it, just before the plugins and
/// the transport (so a retried request queues again for each attempt, and a request answered by the cache
/// or shared by coalescing never takes a slot):
///
/// ```swift
/// let queue = RequestQueue(maxConcurrentRequests: 2)
/// let connect = Connect(requestQueue: queue)
///
/// for id in 1...10 {
///     connect.request(TodoConnector.get(id: id)).observe { print($0) }
/// }
/// print(queue.runningCount, queue.pendingCount)  // 2 8
///
/// queue.pause()          // going offline: nothing new starts, running requests finish
/// queue.resume()         // back online: waiting requests start in order, up to the cap
/// queue.cancelPending()  // or give up on the ones still waiting
/// ```
///
/// The client places the queue after its middlewares (the client's, the connector's and the call's): a request
/// holds a slot only while it is on its way to the transport. A request waiting inside a middleware (for a
/// credential refresh in an ``AuthenticationMiddleware``, say) holds none, so a refresh sent through a client that
/// shares the queue always gets a slot, however full the queue is.
///
/// A streamed response (``Connect/stream(_:options:streaming:)``, an ``EventSource``) frees its slot when its head
/// arrives, so that a stream that runs for hours does not hold a slot: its body does not count against the cap. An
/// error status is not a stream: its body is read for the error (up to ``StreamingOptions/errorBodyLimit``) and holds
/// the slot until it ends, as any request's body does. A server that sends an error head and then goes quiet holds it
/// until the stream's ``StreamingOptions/idleTimeout`` or the call's deadline: give a stream with no deadline an idle
/// timeout.
///
/// ## Cancellation
/// Cancelling the future of a waiting request removes it from the queue: it is never sent. Cancelling the
/// future of a running request cancels its transport call; its slot is freed and the next request starts. A paused
/// queue that its clients and the app let go of fails the requests still waiting in it, and a later attempt of their
/// calls (a retry), with ``ConnectError/Kind/cancelled``, unsent: nothing could resume it any more.
///
/// ## Sharing a queue between clients
/// Several clients may share one queue, to cap their requests together (say, every client talking to one
/// slow server). The cap, the order and ``pause()`` then apply to all of them. The queue knows which client
/// each waiting request came from, so a client's `Connect/cancelAllRequests()` cancels only that client's
/// requests: another client's waiting requests stay in line and take the slots it frees. ``cancelPending()``
/// is the queue's own and cancels every waiting request, whichever client it came from.
///
/// ## Threads
/// The queue never hops threads: a waiting request starts on the thread that freed its slot (the thread
/// that completed the previous request), or on the thread that submitted it or called ``resume()``. When a
/// running request completes, the next one starts before the completed request's future is completed, so
/// by the time you observe a result the next request is already on its way. Requests that complete at once
/// (a stub, a fake transport) are started in a loop, so thousands of them use constant stack; there a request's
/// future completes before the next one starts, which starts when its callbacks return: a callback must not block
/// waiting for another request of the same queue.
public final class RequestQueue: Sendable {
    /// A request waiting for a slot.
    private struct Waiting {
        let request: ConnectRequest
        let next: Middleware.Next
        let promise: Promise<ConnectResponse>
        /// The client that sent it (see ``Owner``).
        let owner: Owner
        /// The connector's type name, for ``RequestQueue/waitingRequests``.
        let connectorName: String
        /// When it joined the queue.
        let since: Date
        /// The connectivity policy its connector or call set (``RequestOptions/connectivity``), if any: under
        /// ``ConnectivityPolicy/ignore`` (or a holder's own `.ignore` where it sets none) it starts while the queue is
        /// held for the network only, as a request to this device does.
        var connectivity: ConnectivityPolicy?
        /// Whether it is a retry (an attempt after the first): it waits for the network under
        /// ``ConnectivityPolicy/failFast`` too, as the ``ConnectivityMiddleware`` has a retry wait, the call having
        /// started online.
        var isRetry = false
    }

    /// Names the client a request came from, so that ``Connect/cancelAllRequests()`` cancels only that
    /// client's waiting requests when clients share a queue. Unique for the life of the process.
    struct Owner: Hashable, Sendable {
        private let id: UInt64
        private static let lastID = Protected<UInt64>(0)

        /// A new owner, different from every other.
        init() {
            id = Owner.lastID.withLock { last in
                last &+= 1
                return last
            }
        }
    }

    /// Everything that changes, behind one lock.
    private struct MutableState {
        /// The most requests in flight at once (``RequestQueue/maxConcurrentRequests``), at least 1.
        var limit: Int
        /// Paused by ``pause()``.
        var isPaused = false
        /// The ``ConnectivityMiddleware``s holding the queue while the network is gone, by identity: requests that
        /// need no network (to this device, or whose options ignore connectivity) still start. Each holder is
        /// counted apart, so that one letting go (the network back as it sees it, or the middleware released) does
        /// not undo another's hold. A holder leaves the set before it is freed, so no identity in it is reused.
        /// Each holder's own policy, for a request whose options set none.
        var networkHolders: [ObjectIdentifier: ConnectivityPolicy] = [:]
        /// Whether a ``ConnectivityMiddleware`` holds the queue for the network.
        var isOffline: Bool { !networkHolders.isEmpty }

        /// Whether `waiting` may start while the queue is held for the network: it goes to this device, or every
        /// holder would let it through (``ConnectivityPolicy/ignore``, its own or the holder's).
        func needsNoNetwork(_ waiting: Waiting) -> Bool {
            LoopbackHost.contains(waiting.request.url)
                || networkHolders.values.allSatisfy { (waiting.connectivity ?? $0) == .ignore }
        }
        /// Whether `waiting` fails at once while held for the network by holders with `policies`: its options', or
        /// where they set none a holder's, say ``ConnectivityPolicy/failFast``, and it needs the network. A retry
        /// waits instead, as the ``ConnectivityMiddleware`` has it wait: the call started online.
        func failsFast(_ waiting: Waiting, under policies: [ConnectivityPolicy]) -> Bool {
            !waiting.isRetry && policies.contains { (waiting.connectivity ?? $0) == .failFast }
                && !LoopbackHost.contains(waiting.request.url)
        }
        var nextID: UInt64 = 0
        /// Waiting requests by id.
        var pending: [UInt64: Waiting] = [:]
        /// The order of arrival. May still list ids that left `pending` (cancelled, or started while the queue was
        /// held offline); they are skipped, and dropped once they are most of it (``dropStaleIDs()``).
        var order = FIFO<UInt64>()
        /// The requests holding a slot, with their transport future once `next` has returned it. Holding the
        /// future keeps it, and the callback that frees the slot, alive until it completes.
        var running: [UInt64: Future<ConnectResponse>?] = [:]
        /// The threads running `startWaitingRequests(force:)` for this queue: a slot freed on one
        /// of them is left to that loop instead of starting a new, nested one (the trampoline).
        var drainingThreads: [pthread_t] = []

        /// Drops the ids of `order` that left `pending` once they are most of it: a queue held offline for hours, or
        /// paused, while requests come and go (polling this device, screens that cancel) grew it for ever, and
        /// each start scanned it whole. Amortised constant time: the list is rebuilt once per as many removals as
        /// it keeps.
        mutating func dropStaleIDs() {
            let count = order.count
            guard count > 64, count > 2 * pending.count else { return }
            order.keep { pending[$0] != nil }
        }
    }

    /// The most requests in flight at once (at least 1). Settable while the queue runs, as JustAPIs' gateway's
    /// `maxActiveRequests` was: a higher cap starts waiting requests at once, on the calling thread; a lower one lets
    /// the requests already running finish, and starts no other until fewer than the new cap run. A value below 1 is
    /// taken as 1.
    ///
    /// ```swift
    /// queue.maxConcurrentRequests = onCellular ? 2 : 6
    /// ```
    public var maxConcurrentRequests: Int {
        get { state.withLock { $0.limit } }
        set {
            let raised = state.withLock { state -> Bool in
                defer { state.limit = max(1, newValue) }
                return max(1, newValue) > state.limit
            }
            if raised { startWaitingRequests(force: true) }
        }
    }
    private let state: Protected<MutableState>
    /// Set by `deinit` when the queue goes while paused, for the stages of its clients that outlive it (see
    /// `RequestQueueStage`): an attempt after that fails as the requests waiting in it did.
    let releasedWhilePaused = Protected(false)

    /// Creates a queue.
    ///
    /// ```swift
    /// let connect = Connect(requestQueue: RequestQueue(maxConcurrentRequests: 4))
    /// ```
    ///
    /// - Parameter maxConcurrentRequests: The most requests in flight at once. A value below 1 is treated
    ///   as 1: the queue always lets at least one request run.
    public init(maxConcurrentRequests: Int) {
        state = Protected(MutableState(limit: max(1, maxConcurrentRequests)))
    }

    /// Fails the requests still waiting (a paused queue that its clients and the app let go of): nothing can start
    /// them any more. Their futures are cancelled on another thread, as the last reference may go on one that holds a
    /// lock of the app's.
    deinit {
        let (isPaused, waiting) = state.withLock { state in
            (state.isPaused, state.order.elements.compactMap { state.pending[$0] })
        }
        releasedWhilePaused.withLock { $0 = isPaused }
        guard !waiting.isEmpty else { return }
        let promises = waiting.map(\.promise)
        DispatchQueue.global().async {
            for promise in promises { promise.future.cancel() }
        }
    }

    /// The number of requests waiting for a slot (not started yet).
    public var pendingCount: Int {
        state.withLock { $0.pending.count }
    }

    /// The number of requests started and not completed: the number of slots taken.
    public var runningCount: Int {
        state.withLock { $0.running.count }
    }

    /// Whether the queue is paused: by ``pause()``, or by a ``ConnectivityMiddleware`` while offline.
    ///
    /// A request made while the network is gone waits in that middleware, before it reaches the queue: it is not
    /// listed in ``waitingRequests`` nor counted in ``pendingCount``, and neither ``resume()`` nor
    /// ``cancelPending()`` reaches it. It goes when the middleware's monitor reports the network back, or fails at
    /// its deadline; its caller's `cancel()` and the client's ``Connect/cancelAllRequests()`` cancel it.
    public var isPaused: Bool {
        state.withLock { $0.isPaused || $0.isOffline }
    }

    /// Stops starting requests. Running requests finish normally; new and waiting requests wait until
    /// ``resume()``.
    ///
    /// Use it when the device goes offline, for example.
    public func pause() {
        state.withLock { $0.isPaused = true }
    }

    /// Starts requests again: the waiting ones start in the order they arrived, up to the cap.
    ///
    /// It also lets go of every hold for the network (a ``ConnectivityMiddleware`` made with `pausing:`), even while
    /// the network is still gone: the requests that waited for it in the queue go out then (not those made since
    /// the network went, which wait in the middleware: ``isPaused``). To keep them, resume only once the network is back, or leave the pausing to the
    /// middleware. Requests start on the calling thread, before this method returns.
    public func resume() {
        state.withLock { state in
            state.isPaused = false
            state.networkHolders.removeAll()
        }
        startWaitingRequests(force: true)
    }

    /// Holds the requests that need the network while it is gone (`true`), or lets them go again (`false`), for
    /// `holder`: what a ``ConnectivityMiddleware`` made with `pausing:` does, and what it undoes when it is released.
    /// A request to this device (`localhost`, `127.0.0.1`, `::1`), or under ``ConnectivityPolicy/ignore`` (its
    /// options', or where they set none `policy`, the holder's own), still starts, as the middleware itself lets it
    /// through. A waiting request under ``ConnectivityPolicy/failFast`` (its options', or where they set none the
    /// holder's) fails with ``ConnectError/Kind/notConnected`` when the hold begins, and so does one that arrives
    /// while it lasts, unless it is a retry: that one waits, as the middleware has a retry wait.
    ///
    /// The queue stays held while any holder holds it: two middlewares sharing it each let go of their own hold only.
    ///
    /// With `startingLater`, the requests it lets go start on another thread: for a holder that lets go as it is
    /// freed, on whatever thread (one holding a lock of the app's) drops the last reference to it. With `starting`
    /// `false` they start only at the caller's `startReleasedRequests()`, so that the holder can let requests
    /// through itself first.
    func holdForNetwork(
        _ isOffline: Bool, by holder: ObjectIdentifier, policy: ConnectivityPolicy = .waitForConnectivity,
        startingLater: Bool = false, starting: Bool = true
    ) {
        let (released, failed) = state.withLock { state -> (Bool, [Waiting]) in
            if isOffline {
                state.networkHolders[holder] = policy
                // A waiting request whose policy is to fail at once offline fails now, as it would have had the
                // network gone before it reached the queue; one to this device needs none.
                let failing = state.order.elements.filter { id in
                    guard let waiting = state.pending[id] else { return false }
                    return state.failsFast(waiting, under: [policy])
                }
                let failed = failing.compactMap { state.pending.removeValue(forKey: $0) }
                if !failed.isEmpty { state.dropStaleIDs() }
                return (false, failed)
            }
            return (state.networkHolders.removeValue(forKey: holder) != nil, [])
        }
        for waiting in failed {
            waiting.promise.complete(with: .failure(ConnectError.notConnected(request: waiting.request)))
        }
        guard released, starting else { return }
        if startingLater {
            DispatchQueue.global().async { self.startWaitingRequests(force: true) }
        } else {
            startWaitingRequests(force: true)
        }
    }

    /// Starts the waiting requests a hold let go of with `holdForNetwork(false, by:starting: false)`, on the calling
    /// thread, up to the cap.
    func startReleasedRequests() {
        startWaitingRequests(force: true)
    }

    /// Fails every waiting request with ``ConnectError/Kind/cancelled``; none of them reaches the transport.
    ///
    /// Running requests are not affected. The waiting requests' futures are cancelled (``Future/isCancelled``
    /// is `true`), so whatever was chained after them is cancelled too.
    ///
    /// This cancels the waiting requests of every client that shares the queue. To cancel one client's
    /// requests only, call that client's ``Connect/cancelAllRequests()``.
    public func cancelPending() {
        let cancelled: [Waiting] = state.withLock { state in
            let waiting = state.order.elements.compactMap { state.pending[$0] }
            state.pending.removeAll()
            state.order.removeAll()
            return waiting
        }
        for waiting in cancelled { waiting.promise.future.cancel() }
    }

    /// The length of the arrival order, stale ids included (tests check that it stays bounded).
    var arrivalOrderLength: Int { state.withLock { $0.order.count } }

    /// Fails the waiting requests that `owner` sent, as ``cancelPending()`` does; other waiting requests keep
    /// their place.
    func cancelPending(of owner: Owner) {
        let cancelled: [Waiting] = state.withLock { state in
            var cancelled: [Waiting] = []
            for id in state.order.elements {
                guard let waiting = state.pending[id], waiting.owner == owner else { continue }
                state.pending[id] = nil
                cancelled.append(waiting)
            }
            // The ids left in `order` are skipped when their turn comes.
            state.dropStaleIDs()
            return cancelled
        }
        for waiting in cancelled { waiting.promise.future.cancel() }
    }

    /// Queues a request, and starts waiting requests while slots are free.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - owner: The client that sent it.
    ///   - next: The rest of the pipeline; called when the request's turn comes, or never if its future is
    ///     cancelled while it waits.
    /// - Returns: A future of the response; it completes when the transport answers, or fails with
    ///   ``ConnectError/Kind/cancelled`` if cancelled (see ``cancelPending()``).
    func enqueue(
        _ request: consuming ConnectRequest, owner: Owner, connectorName: String = "",
        connectivity: ConnectivityPolicy? = nil, isRetry: Bool = false,
        next: @escaping Middleware.Next
    ) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        var waiting = Waiting(
            request: request, next: next, promise: promise, owner: owner, connectorName: connectorName, since: Date())
        waiting.connectivity = connectivity
        waiting.isRetry = isRetry
        let id: UInt64? = state.withLock { state in
            // Held for the network by a holder under whose policy it fails fast: it fails now, as it would have had
            // it been waiting here when the hold began.
            if state.failsFast(waiting, under: Array(state.networkHolders.values)) { return nil }
            state.nextID &+= 1
            state.pending[state.nextID] = waiting
            state.order.append(state.nextID)
            return state.nextID
        }
        guard let id else { return Future(error: ConnectError.notConnected(request: waiting.request)) }
        let future = promise.future
        promise.setCancelHandler { [weak self, weak future] in self?.withdraw(id, stopped: future) }
        // Forced: if this thread is already starting requests (a request submitted from the callback of one
        // that completed at once), a caller blocking on the new request would otherwise wait forever.
        startWaitingRequests(force: true)
        return promise.future
    }
}

// MARK: - Starting requests

extension RequestQueue {
    /// Starts waiting requests while slots are free, in a loop on the calling thread.
    ///
    /// - Parameters:
    ///   - force: Whether to loop even if this thread already runs the loop further up its stack.
    ///     `false` when a slot was freed: the loop further up starts the next request, which keeps the stack
    ///     flat when requests complete at once.
    private func startWaitingRequests(force: Bool) {
        let thread = pthread_self()
        let entered: Bool = state.withLock { state in
            if !force, state.drainingThreads.contains(where: { pthread_equal($0, thread) != 0 }) { return false }
            state.drainingThreads.append(thread)
            return true
        }
        guard entered else { return }
        while let start = state.withLock({ takeNextInsideLock(&$0, leaving: thread) }) {
            run(start.id, start.waiting)
        }
    }

    /// Moves the oldest waiting request into a free slot; with nothing to start, takes `thread` off the draining
    /// threads (in the same critical section, so no freed slot goes unnoticed).
    private func takeNextInsideLock(
        _ state: inout MutableState, leaving thread: pthread_t
    ) -> (id: UInt64, waiting: Waiting)? {
        if !state.isPaused, state.running.count < state.limit {
            if !state.isOffline {
                while let id = state.order.popFirst() {
                    guard let waiting = state.pending.removeValue(forKey: id) else { continue }
                    state.running[id] = .some(nil)
                    return (id, waiting)
                }
            } else if let id = state.order.first(where: { id in
                state.pending[id].map { state.needsNoNetwork($0) } ?? false
            }), let waiting = state.pending.removeValue(forKey: id) {
                // Offline: the oldest request that needs no network goes; its id left in `order` is skipped later.
                state.running[id] = .some(nil)
                state.dropStaleIDs()
                return (id, waiting)
            }
        }
        if let index = state.drainingThreads.lastIndex(where: { pthread_equal($0, thread) != 0 }) {
            state.drainingThreads.remove(at: index)
        }
        return nil
    }

    /// Sends a request that holds a slot, and frees the slot when its transport future completes.
    private func run(_ id: UInt64, _ waiting: Waiting) {
        let promise = waiting.promise
        // Cancelled between leaving `pending` and now: never send it.
        if promise.future.isCompleted {
            state.withLock { _ = $0.running.removeValue(forKey: id) }
            return
        }
        let sent = waiting.next(waiting.request)
        state.withLock { state in
            if let index = state.running.index(forKey: id) { state.running.values[index] = sent }
        }
        // `cancel(_:)` found no future to cancel if it ran before the line above; it set `isCancelled` first.
        if promise.future.isCancelled { sent.cancel(as: promise.future) }
        sent.whenComplete { result in
            self.finish(id, with: result, promise: promise)
        }
    }

    /// Frees the slot of a completed request, starts the next one, then completes the caller's future.
    private func finish(
        _ id: UInt64, with result: Result<ConnectResponse, any Error>, promise: Promise<ConnectResponse>
    ) {
        state.withLock { _ = $0.running.removeValue(forKey: id) }
        startWaitingRequests(force: false)
        promise.completeIfPending(with: result)
    }

    /// Runs when a caller cancels its future (`stopped`): a waiting request leaves the queue, a running one is
    /// cancelled as the caller's future was (its completion frees the slot).
    private func withdraw(_ id: UInt64, stopped: Future<ConnectResponse>?) {
        let running: Future<ConnectResponse>? = state.withLock { state in
            if state.pending.removeValue(forKey: id) != nil {
                state.dropStaleIDs()
                return nil
            }
            return state.running[id] ?? nil
        }
        running?.cancel(as: stopped)
    }
}

/// A client's stage for its ``RequestQueue``: queues each request as that client's, so that the client's
/// ``Connect/cancelAllRequests()`` cancels its own waiting requests and no other client's.
///
/// It holds the queue weakly: a waiting request holds the pipeline after the queue (its `next`), which holds this
/// stage, so that a strong hold made a queue with requests waiting keep itself for good. The client holds it strongly
/// (``Connect/requestQueue``), and a running request until it completes.
struct RequestQueueStage: Middleware {
    private(set) weak var queue: RequestQueue?
    let owner: RequestQueue.Owner
    /// The queue's `releasedWhilePaused`, which outlives it.
    private let releasedWhilePaused: Protected<Bool>

    init(queue: RequestQueue, owner: RequestQueue.Owner) {
        self.queue = queue
        self.owner = owner
        releasedWhilePaused = queue.releasedWhilePaused
    }

    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        // Gone: its clients are, and every request it held has ended (a running one keeps it). An attempt of a call
        // that outlives them (a retry) goes on as with a free slot, there being nobody left to share the cap with;
        // unless the queue went paused: nothing could have resumed it, so it fails as the requests waiting did.
        guard let queue else {
            if releasedWhilePaused.withLock({ $0 }) { return Future(error: ConnectError.cancelled(sent: request)) }
            return next(request)
        }
        // The policy the connector or call set; the queue's holders apply their own where it is `nil`.
        let connectivity = context.options.connectivity
        let isRetry = context.attempt > 1
        guard let observation = context.transfer.observation else {
            return queue.enqueue(
                request, owner: owner, connectorName: context.connectorName, connectivity: connectivity,
                isRetry: isRetry, next: next)
        }
        let enqueued = DispatchTime.now().uptimeNanoseconds
        return queue.enqueue(
            request, owner: owner, connectorName: context.connectorName, connectivity: connectivity, isRetry: isRetry
        ) { request in
            let waited = DispatchTime.now().uptimeNanoseconds - enqueued
            observation.record(.queueWaited(seconds: Double(waited) / 1e9))
            return next(request)
        }
    }
}

// MARK: - Introspection

extension RequestQueue {
    /// A request waiting for a slot, as ``RequestQueue/waitingRequests`` lists it: what it is, since when it waits,
    /// and the identity ``RequestQueue/cancel(_:)`` takes.
    ///
    /// Printing or dumping one shows its URL with secret query values hidden, and the secret values the request carries
    /// (its credentials) wherever else the URL shows them.
    public struct WaitingRequest: Sendable, Identifiable, CustomStringConvertible, CustomReflectable {
        /// The request's place in this queue, unique for the queue's life.
        public let id: UInt64
        /// The method.
        public let method: HTTPMethod
        /// The URL.
        public let url: URL
        /// The connector's type name (`"TodoConnector"`).
        public let connectorName: String
        /// When the request joined the queue.
        public let waitingSince: Date
        /// The request as the stages before the queue left it: method, URL, header fields (credentials included) and
        /// body. What JustAPIs' `pendingRequests` handed back: an app going offline for good can take the waiting
        /// requests, cancel them, keep what it needs of each (a one-shot stream body cannot be sent twice), and send
        /// them again later with ``Connect/response(for:name:options:)``. It carries none of its connector's or
        /// call's options: give them again as that call's `options:` (`requiresAuthentication: false` for a route
        /// that goes unsigned, its validators and processors). Printing one hides its secrets. The conditional fields
        /// a ``ResponseCache`` added to revalidate what it stores are not in it: sent again, it asks for the whole
        /// body, not for a `304`.
        ///
        /// An upload whose body goes from a file (``Connect/upload(files:to:debugResponse:)`` of a file on disk, or of
        /// a form over 8 MiB) waits with that file beside the request, not in it: its `request` has no body, and the
        /// file is deleted once its call ends. Sent again, such a request is refused (``ConnectError/Kind/invalidRequest``:
        /// its `Content-Length` names bytes it no longer has); upload the files again instead.
        public let request: ConnectRequest

        /// The URL as printed: ``ConnectRequest/redactedURL``.
        private var shownURL: String { request.redactedURL }

        /// `GET https://api.example.com/todos (TodoConnector)`, secret query values hidden.
        public var description: String {
            "\(method) \(shownURL)" + (connectorName.isEmpty ? "" : " (\(connectorName))")
        }

        /// The fields, with the URL as ``description`` shows it, so that `dump(queue.waitingRequests)` and a debugger
        /// show no secret of it either.
        public var customMirror: Mirror {
            Mirror(
                self,
                children: [
                    "id": id, "method": method.rawValue, "url": shownURL,
                    "connectorName": connectorName, "waitingSince": waitingSince,
                ],
                displayStyle: .struct)
        }
    }

    /// The requests waiting for a slot, in the order they will start: a snapshot, taken at once under the queue's
    /// lock (what JustAPIs' `pendingRequests` gave), which the queue does not change afterwards.
    ///
    /// ```swift
    /// for waiting in queue.waitingRequests where waiting.connectorName == "ThumbnailConnector" {
    ///     queue.cancel(waiting.id)  // the screen that asked for them is gone
    /// }
    /// ```
    public var waitingRequests: [WaitingRequest] {
        state.withLock { state in
            var ids = state.order.elements
            if state.isOffline {
                // While the network is gone, those that need none start first (in arrival order), then the others.
                let (local, others) = ids.reduce(into: ([UInt64](), [UInt64]())) { groups, id in
                    if state.pending[id].map({ state.needsNoNetwork($0) }) == true {
                        groups.0.append(id)
                    } else {
                        groups.1.append(id)
                    }
                }
                ids = local + others
            }
            return ids.compactMap { id in
                state.pending[id].map { waiting in
                    WaitingRequest(
                        id: id, method: waiting.request.method, url: waiting.request.url,
                        connectorName: waiting.connectorName, waitingSince: waiting.since,
                        request: waiting.request.withoutCacheConditionals)
                }
            }
        }
    }

    /// Cancels one waiting request: its future fails with ``ConnectError/Kind/cancelled`` and it is never sent;
    /// the others keep their place.
    ///
    /// Identical GETs shared by coalescing (`Connect.Settings(coalescesIdenticalRequests:)`) wait as one request,
    /// listed with the first caller's connector: cancelling it here fails every caller that shares it. To drop one
    /// caller's interest only, cancel that caller's own future; the shared request is cancelled when the last
    /// caller has.
    ///
    /// - Parameter id: The ``WaitingRequest/id`` of a request from ``waitingRequests``.
    /// - Returns: `true` when it was still waiting; `false` when it had started, ended or was never in this queue
    ///   (a started request is cancelled through its own future).
    @discardableResult
    public func cancel(_ id: WaitingRequest.ID) -> Bool {
        let waiting = state.withLock { state in
            defer { state.dropStaleIDs() }
            return state.pending.removeValue(forKey: id)
        }
        waiting?.promise.future.cancel()
        return waiting != nil
    }
}

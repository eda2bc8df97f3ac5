import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request does while a ``ConnectivityMonitor`` reports the network gone.
public enum ConnectivityPolicy: Sendable, Hashable {
    /// Send it anyway: the transport's own error says what happened (what a client without a monitor does).
    case ignore
    /// Fail at once with ``ConnectError/Kind/notConnected``; nothing is sent. For screens that show an offline
    /// banner instead of a spinner. A request already waiting in a queue the middleware holds (`pausing:`) fails
    /// when the network goes, too, and so does one that reaches the queue while it is held (a stage after the
    /// middleware held it meanwhile); a retry (an attempt after the first) waits for the network instead, there as
    /// in the middleware.
    case failFast
    /// Wait for the network, up to the call's deadline (its ``Connector/timeout``), then send; requests waiting
    /// together go in the order they came, and a request made while they are being sent goes after them, under this
    /// policy or ``failFast`` (one under ``ignore``, or to this device, is never held, and goes at once).
    case waitForConnectivity
}

/// Holds requests back while the network is gone, as a ``ConnectivityMonitor`` reports it.
///
/// ```swift
/// let monitor = try SystemConnectivityMonitor()
/// let connect = Connect(middlewares: [ConnectivityMiddleware(monitor: monitor, policy: .waitForConnectivity)])
/// ```
///
/// While the monitor says the device is offline:
/// - a new request follows the ``ConnectivityPolicy``: the client's (here), or the connector's or call's
///   ``RequestOptions/connectivity`` when set;
/// - a retry (any attempt after the first, sent by the client's ``RetryPolicy`` after the network dropped under a
///   request in flight) waits for the network under either policy that holds requests back (`.waitForConnectivity`
///   or `.failFast`), so retries do not spend attempts while offline; the call's deadline still bounds the wait.
///   Under `.ignore` nothing waits, retries included;
/// - requests to a loopback host (`localhost`, `127.0.0.0/8`, `::1`) are never held back: local servers work
///   with no network.
///
/// Requests in flight when the network drops are not touched: the transport reports what happens to them.
///
/// With `pausing:` the middleware also holds a ``RequestQueue`` while offline and lets it go when the network returns,
/// so requests already queued wait too; requests to a loopback host, and those whose options say
/// ``ConnectivityPolicy/ignore`` (this middleware's own `policy` where they set none), still start. It lets go too when
/// it is released (its last copy, with the client that held it), whatever the network: nothing would follow the network
/// for that queue any more. Requests of that client still waiting in the queue keep the middleware (their way to the
/// transport goes through it) and so the hold, until the network returns or their deadline passes: they are still the
/// client's calls. Middlewares sharing one queue hold it each for itself: it starts requests that need the network
/// again once none holds it. The queue's own ``RequestQueue/pause()`` is the app's: the network's return does not undo
/// it, and ``RequestQueue/resume()`` releases both.
///
/// Place it first among the middlewares, so a request waits before any middleware does work for it (a token
/// refresh, a cache lookup). A request that forbids the network (`Cache-Control: only-if-cached`, the cache policy
/// `.returnCacheDataDontLoad`) is never held nor failed: the client's ``ResponseCache`` answers it offline, or fails it
/// with nothing sent. Offline, neither is one the client's cache would answer as it is, without the network: a fresh
/// stored response, or a stale one the request accepts (`max-stale`, `.returnCacheDataElseLoad`), in memory or in the
/// cache's storage. The cache is asked about the request as it stands here, before the middlewares after this one:
/// a response stored for the credentials an ``AuthenticationMiddleware`` adds later (the cache keeps those apart), or
/// varying on a header a later middleware sets, is not found, and the request waits (or fails fast) as any other.
/// Streamed calls bypass the cache, and wait too.
public struct ConnectivityMiddleware: Middleware {
    /// The monitor it follows.
    var monitor: any ConnectivityMonitor { gate.monitor }
    /// The policy for requests whose connector and call set none.
    let policy: ConnectivityPolicy
    private let gate: ConnectivityGate

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - monitor: Reports the network's state and its changes.
    ///   - policy: What a new request does while offline, unless its connector or call says otherwise.
    ///     Defaults to ``ConnectivityPolicy/waitForConnectivity``.
    ///   - queue: A queue to hold while offline and let go when the network returns: the client's
    ///     (`Connect(requestQueue:)`), which the client keeps; the middleware holds it weakly.
    public init(
        monitor: any ConnectivityMonitor, policy: ConnectivityPolicy = .waitForConnectivity,
        pausing queue: RequestQueue? = nil
    ) {
        self.policy = policy
        gate = ConnectivityGate(monitor: monitor, queue: queue, policy: policy)
    }

    /// Sends the request, waits for the network, or fails at once, as described above.
    public func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        let policy = context.options.connectivity ?? policy
        // A request that forbids the network (`only-if-cached`, `.returnCacheDataDontLoad`) is the cache's to answer
        // offline, as the cache's documentation promises: held or failed here, it never reached the cache.
        guard policy != .ignore, !LoopbackHost.contains(request.url), !ResponseCache.forbidsTheNetwork(request) else {
            return next(request)
        }
        // Nor is one the client's cache would answer as it is, without the network: a fresh stored response, or a
        // stale one the request accepts (`max-stale`, `.returnCacheDataElseLoad`), as its documentation says.
        if !gate.isConnected, let cache = context.responseCache,
            cache.servesWithoutTheNetwork(request, context: context)
        {
            return next(request)
        }
        return gate.send(
            request, waiting: policy == .waitForConnectivity || context.attempt > 1, next: next,
            observation: context.transfer.observation)
    }
}

/// The requests a ``ConnectivityMiddleware`` holds back, and the state it last heard from its monitor.
final class ConnectivityGate: Sendable {
    /// A queue held weakly.
    private struct WeakQueue: Sendable {
        weak var queue: RequestQueue?
    }

    /// A request waiting for the network.
    private struct Waiting {
        let request: ConnectRequest
        let next: Middleware.Next
        let promise: Promise<ConnectResponse>
        /// Whether it waits for the network should the network go before its turn; one that does not (fail fast,
        /// which waits only behind a release under way) then fails with ``ConnectError/Kind/notConnected``.
        let waitsForTheNetwork: Bool
        /// The call's observers, told how long the request was held; and when it began to wait.
        let observation: CallObservation?
        let since: UInt64
    }

    private struct State {
        var isConnected: Bool
        var waiting: [UInt64: Waiting] = [:]
        /// The requests sent since the network came back, while they are on their way: what a cancellation stops.
        var sending: [UInt64: Future<ConnectResponse>] = [:]
        var nextID: UInt64 = 0
        /// Whether a thread is letting the waiting requests go (`sendWaitingRequests()`): a request that arrives
        /// meanwhile waits behind them, and that thread sends it in its turn, so that none overtakes an older one.
        var isReleasing = false
        /// Whether the monitor has delivered a change: the state read at start is then older than it.
        var heardFromMonitor = false
    }

    let monitor: any ConnectivityMonitor
    /// Held weakly, as the client's queue stage holds it (``RequestQueueStage``): a request waiting in a paused queue
    /// holds the pipeline, and so this gate, and a strong hold here kept the queue, and that request, for good after
    /// the app let go of them (the queue's `deinit` fails what waits in it). The clients that use it hold it.
    private let queueReference: WeakQueue
    private var queue: RequestQueue? { queueReference.queue }
    /// The queue, held strongly while this gate holds it for the network: the requests waiting in it are still the
    /// client's calls, and go when the network returns even if the app let go of the client and the queue meanwhile.
    private let heldQueue = Protected<RequestQueue?>(nil)
    /// The middleware's own policy: the queue lets through, while held, what it lets through.
    private let policy: ConnectivityPolicy
    private let state: Protected<State>
    /// Keeps the observer registered for as long as the gate lives.
    private let observation = Protected<ConnectivityObservation?>(nil)
    /// Makes applying a change and pausing or resuming the queue one step, so that two changes (the state read at
    /// start, and one the monitor delivers meanwhile) cannot leave the queue as the older one wants it. Recursive:
    /// resuming the queue starts requests, whose code may report a change on this thread.
    private let applying = NSRecursiveLock()

    init(monitor: any ConnectivityMonitor, queue: RequestQueue?, policy: ConnectivityPolicy = .waitForConnectivity) {
        self.monitor = monitor
        queueReference = WeakQueue(queue: queue)
        self.policy = policy
        state = Protected(State(isConnected: true))
        // Registered before the state is read, so that no change falls between the two; the state read is applied
        // only if no change was delivered meanwhile (it would be the older).
        let observation = monitor.observe { [weak self] connectivity in self?.changed(to: connectivity) }
        self.observation.withLock { $0 = observation }
        changed(to: monitor.current, isInitial: true)
    }

    /// Lets go of the queue's hold, if this gate has one: nobody follows the network for it any more, and a queue
    /// shared with other clients must not stay held for good. Another gate's hold on it stays.
    deinit {
        // The hold goes now (no later gate can reuse this identity while it stands); what it held starts elsewhere.
        queue?.holdForNetwork(false, by: ObjectIdentifier(self), startingLater: true)
    }

    /// Whether the monitor last said the network is there.
    var isConnected: Bool { state.withLock { $0.isConnected } }

    /// Sends `request` now if the network is up; otherwise waits for it (`waiting`) or fails at once.
    func send(
        _ request: consuming ConnectRequest, waiting: Bool, next: @escaping Middleware.Next,
        observation: CallObservation? = nil
    ) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        let request = copy request
        // Decided under one lock: read twice, a drop between the reads failed a request that was to wait.
        enum Decision {
            case send
            case fail
            case wait(UInt64)
        }
        let decision: Decision = state.withLock { state in
            // Online with nothing being let go: straight on. Online while held requests go: behind them.
            if state.isConnected && !state.isReleasing { return .send }
            guard waiting || state.isConnected else { return .fail }
            state.nextID &+= 1
            state.waiting[state.nextID] = Waiting(
                request: request, next: next, promise: promise, waitsForTheNetwork: waiting,
                observation: observation, since: observation == nil ? 0 : DispatchTime.now().uptimeNanoseconds)
            return .wait(state.nextID)
        }
        switch decision {
        case .send:
            return next(request)
        case .fail:
            return Future(error: ConnectError.notConnected(request: request))
        case .wait(let id):
            let future = promise.future
            promise.setCancelHandler { [weak self, weak future] in self?.cancel(id, stopped: future) }
            return promise.future
        }
    }

    /// Records the monitor's new state; when the network is back, resumes the queue and sends the waiting
    /// requests, oldest first.
    private func changed(to connectivity: Connectivity, isInitial: Bool = false) {
        applying.lock()
        // Changes are applied one at a time (`applying`): whether this one moves the queue is read first.
        let flips: Bool? = state.withLock { state in
            if isInitial {
                guard !state.heardFromMonitor else { return nil }
            } else {
                state.heardFromMonitor = true
            }
            // The queue is held or let go when the network goes or comes back (and at start when it is gone), not on
            // a change of interface.
            return isInitial ? !connectivity.isConnected : state.isConnected != connectivity.isConnected
        }
        guard let flips else { return applying.unlock() }
        // Back: the queue's hold goes before requests pass here again, and comes, when the network goes, after they
        // stop passing: no request this middleware lets through meets the queue held (under fail fast, it would fail).
        if flips, connectivity.isConnected {
            queue?.holdForNetwork(false, by: ObjectIdentifier(self), policy: policy, starting: false)
        }
        // Requests that would not wait for the network, queued behind a release the drop stops, fail as they would
        // have had they come now; when the network is back, the thread that finds no release under way starts one.
        let (releases, failing) = state.withLock { state -> (Bool, [Waiting]) in
            state.isConnected = connectivity.isConnected
            guard connectivity.isConnected else {
                let failing = state.waiting.filter { !$0.value.waitsForTheNetwork }
                for id in failing.keys { state.waiting.removeValue(forKey: id) }
                return (false, failing.sorted { $0.key < $1.key }.map(\.value))
            }
            guard !state.isReleasing, !state.waiting.isEmpty else { return (false, []) }
            state.isReleasing = true
            return (true, [])
        }
        if flips {
            if connectivity.isConnected {
                // The queue's waiting requests first, then those held here, as they came.
                queue?.startReleasedRequests()
            } else {
                heldQueue.withLock { $0 = queue }
                queue?.holdForNetwork(true, by: ObjectIdentifier(self), policy: policy)
            }
        }
        applying.unlock()
        // Let go of outside the locks: the queue's `deinit`, should this be the last hold, fails what waits in it.
        let released = flips && connectivity.isConnected ? heldQueue.replace(with: nil) : nil
        _ = released
        for waiting in failing {
            waiting.promise.completeIfPending(with: .failure(ConnectError.notConnected(request: waiting.request)))
        }
        if releases { sendWaitingRequests() }
    }

    /// Sends the waiting requests, oldest first, one at a time while the network stays up as the gate last heard: a
    /// drop the monitor delivers while they go (inside one of them, or on another thread) stops the rest, which keep
    /// waiting, in their place, for the network's next return. The caller set `isReleasing`; this clears it when it
    /// stops, in the same step as it finds nothing left to send or the network gone.
    ///
    /// A request that arrives while this runs (in one of the requests it sends, or on another thread) waits behind
    /// the others and is sent in its turn, here: requests go in the order they came. Nothing here waits for one of
    /// them; a middleware after this one that blocked a request's thread until a later request of the same client
    /// completed would wait for good, as it would in a ``RequestQueue`` of one.
    ///
    /// A monitor that queues a change reported during a delivery (``ConnectivityObservers`` does, to keep the order)
    /// delivers the drop only after this loop: `monitor.current` would tell it sooner, but reading it here, inside
    /// the monitor's call, would hang a monitor of the app's that calls its observers holding the lock `current`
    /// takes. The requests sent meanwhile fail as any request sent at a drop does (and a retry waits here).
    private func sendWaitingRequests() {
        while true {
            // Those waiting now, oldest first; one taken meanwhile (cancelled, or failed at a drop) is skipped. Those
            // that arrive meanwhile have later ids: the next round sends them.
            let ids: [UInt64] = state.withLock { state in
                guard state.isConnected, !state.waiting.isEmpty else {
                    state.isReleasing = false
                    return []
                }
                return state.waiting.keys.sorted()
            }
            if ids.isEmpty { return }
            for id in ids {
                let taken: Waiting?? = state.withLock { state in
                    guard state.isConnected else {
                        state.isReleasing = false
                        return nil
                    }
                    return .some(state.waiting.removeValue(forKey: id))
                }
                // The network went: this request and those after it keep waiting.
                guard let taken else { return }
                guard let waiting = taken else { continue }
                send(waiting, id: id)
            }
        }
    }

    /// Sends a request that waited, unless it was cancelled (or timed out) since it was taken out.
    private func send(_ waiting: Waiting, id: UInt64) {
        guard !waiting.promise.future.isCompleted else { return }
        if let observation = waiting.observation {
            let waited = DispatchTime.now().uptimeNanoseconds - waiting.since
            observation.record(.connectivityWaited(seconds: Double(waited) / 1e9))
        }
        let sent = waiting.next(waiting.request)
        // Recorded for the cancel handler `send` set (``cancel(_:)``); a cancellation that came before this found
        // nothing to stop, so the request is stopped here.
        let cancelledMeanwhile = state.withLock { state -> Bool in
            guard !waiting.promise.future.isCompleted else { return true }
            state.sending[id] = sent
            return false
        }
        if cancelledMeanwhile { sent.cancel(as: waiting.promise.future) }
        sent.whenComplete { [weak self] result in
            _ = self?.state.withLock { $0.sending.removeValue(forKey: id) }
            waiting.promise.completeIfPending(with: result)
        }
    }

    /// The caller's future for request `id` was cancelled (`stopped`): it leaves the waiting ones, or the request sent
    /// for it is cancelled as that future was (the call's deadline: the stages after this one, the plugins among them,
    /// hear that it timed out).
    private func cancel(_ id: UInt64, stopped: Future<ConnectResponse>?) {
        let sent = state.withLock { state -> Future<ConnectResponse>? in
            state.waiting.removeValue(forKey: id)
            return state.sending.removeValue(forKey: id)
        }
        sent?.cancel(as: stopped)
    }
}

/// Hosts on this machine, which need no network: never held back by connectivity. The host is read as the engine is
/// sent to it (`ComparableHost`): `localhost.`, `[0:0::1]`, `[::1%25lo]`, `127.1` and `[::ffff:127.0.0.1]` are
/// loopback too.
enum LoopbackHost {
    static func contains(_ url: URL?) -> Bool {
        guard let url, var host = ComparableHost.of(url, droppingTrailingDot: true) else { return false }
        // An IPv6 zone (`[::1%25lo]`) names the interface, not another host; a name has no `%` left.
        if let zone = host.firstIndex(of: "%") { host = String(host[..<zone]) }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        if host.hasPrefix("::ffff:") { host.removeFirst("::ffff:".count) }  // an IPv4 address mapped to IPv6
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

extension ConnectError {
    /// The failure of a request held back because the network is gone (``ConnectivityPolicy/failFast``).
    static func notConnected(request: ConnectRequest) -> ConnectError {
        ConnectError(
            .notConnected,
            message: "the network is offline (as the connectivity monitor reports): the request was not sent",
            request: .sent(request),
            underlyingError: URLError(.notConnectedToInternet)
        )
    }
}

/// The ``ConnectivityMiddleware``'s option: what a request does while the network is gone
/// (``RequestOptions/connectivity``).
enum ConnectivityPolicyOption: RequestOptionKey {
    typealias Value = ConnectivityPolicy
}

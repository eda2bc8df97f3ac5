import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Lets identical GET and HEAD requests in flight at the same time share one call down the pipeline.
///
/// Turned on with `Connect.Settings(coalescesIdenticalRequests: true)`; it sits after your middlewares and the response
/// cache, so it sees requests as they go on the wire, and before the queue, so a shared call takes one slot:
///
/// ```swift
/// let connect = Connect(settings: Connect.Settings(coalescesIdenticalRequests: true))
/// let a = connect.request(TodoConnector.get(id: 1))
/// let b = connect.request(TodoConnector.get(id: 1))  // no second network call: b shares a's
/// b.cancel()                                         // a still gets its result
/// ```
///
/// Requests are identical when their method, full URL, timeout, cache policy, every header field (name
/// case-insensitive, value exact), the settings of a `URLRequest` they were made from (cookies, cellular access),
/// their redirect limit (``RequestOptions/maxRedirects``) and their idle timeout (``RequestOptions/idleTimeout``)
/// match: requests signed for different users never share a response. A GET or HEAD with a body, and any other
/// method, passes straight through. Each attempt of a retried request is a call of its own: a retry never joins a
/// call already in flight (the one its earlier attempt gave up on may be it).
///
/// A request joins only a call that began within the last tenth of its timeout: the shared exchange's deadline runs
/// from when that call began, so a caller joining later would time out sooner than it asked (a caller joining 0.8 s
/// into a 1 s call timed out after 0.2 s). Such a request goes alone.
///
/// Each caller gets its own future with the shared result. Cancelling it only drops that caller's interest;
/// when every caller has cancelled, the shared call is cancelled. Once the shared call completes it is
/// forgotten: a later identical request makes a new call.
///
/// A caller's attempt is in flight, for its ``RetryPolicy/attemptTimeout``, from when the shared request reaches the
/// transport until the transport answers it: a caller that joins while it waits in the queue starts its clock with it,
/// not at once.
///
/// Each caller's observers (``ConnectObserver``) hear its attempt: the first caller's, the shared request at the
/// transport's door; a caller that joined, its own request told started when the shared one reaches that door (at once
/// if it is there already) and ended with the shared answer (the wire check's refusal of the shared request included,
/// as a call alone hears it), or, when it leaves first, with its own end (as cancelled, or timed out); in between, the
/// redirects the shared request follows. A caller that joined while the shared request waited in the ``RequestQueue``
/// waited too: before its attempt starts it hears that wait, counted from when it joined. A caller that leaves hears no
/// more of the shared request, the first one included. A middleware's second send of one attempt (a hedge) that joins
/// the call of its first is no send of its own: its call hears the one that went out. The client's plugins, after this
/// stage, hear the shared request once, with the first caller's context (``ConnectPlugin``).
final class RequestCoalescer: Middleware, ContextPassingMiddleware {
    /// What makes two requests identical.
    struct Key: Hashable {
        let method: String
        /// The URL without its fragment, which is never sent: requests that differ only there share a call.
        let url: String
        /// `length:name:value` per header field, names lowercased and preceded by their length in bytes, values
        /// without the blanks around them (as sent), sorted by name, fields of one name in their order. The length
        /// tells the name from the value: a field named `x-a:b` (no valid name, refused before the wire) whose value
        /// is `c` is not `x-a` with `b:c`.
        let headers: [String]
        /// The request's own timeout and cache policy: a caller must not wait longer, or time out sooner, than
        /// it asked, nor get an answer from a cache it asked to skip.
        let timeout: TimeInterval
        let cachePolicy: UInt
        /// What a `URLRequest` the request was made from says beyond the model (cookies, cellular access…): one
        /// caller's `httpShouldHandleCookies = false` must not get another's cookie-authenticated answer.
        let foundationExtras: ConnectRequest.FoundationExtras
        /// The call's own connectivity policy (``RequestOptions/connectivity``): a request that would go offline
        /// under its middleware's policy must not wait in a call that asked to wait for the network, nor one that
        /// asked to fail fast share a call that waits. Requests with none share their middleware's.
        let connectivity: ConnectivityPolicy?
        /// The request's redirect limit (``RequestOptions/maxRedirects``): a request that takes a redirect as its
        /// answer must not get the answer of a call that follows it, nor the other way round.
        let maxRedirects: Int?
        /// The call's idle timeout (``RequestOptions/idleTimeout``): a caller that asked to fail after 5 s of quiet
        /// must not wait in a call that waits a minute, nor one that asked for none be failed by another's.
        let idleTimeout: TimeInterval?
    }

    /// One shared call and the callers waiting for it.
    private struct Call {
        /// Tells this call from a later one with the same key.
        let id: UInt64
        /// When the call began, in `DispatchTime` nanoseconds: its exchange's deadline runs from about then.
        let began: UInt64
        /// The shared future, once `next` has returned it. Held so it stays alive until it completes.
        var shared: Future<ConnectResponse>?
        var callers: [UInt64: Promise<ConnectResponse>]
        /// The requests of the callers that joined with another fragment than the shared request's (not part of the
        /// key, never sent): each is answered with the shared response as the answer to its own request
        /// (``ConnectResponse/answering(_:)``), its URL naming its own fragment.
        var fragmentRequests: [UInt64: ConnectRequest] = [:]
        /// Whether the shared request has reached the transport: a caller that joins from then on is in flight at
        /// once.
        var reachedTransport = false
        /// Whether the shared request has reached the transport's door (where its wire check runs, before the
        /// transport): a caller that joins from then on has started its attempt, as its observers hear.
        var reachedDoor = false
        /// The callers whose retry loop listens (``RequestContext/sending``), told when the shared request reaches
        /// the transport and when the transport answers it: their attempt's own timeout
        /// (``RetryPolicy/attemptTimeout``) runs between the two, not while it waits in the queue.
        var sendings: [UInt64: AttemptSending] = [:]
        /// The callers that joined with observers (``RequestContext/transfer``'s observation): each is an attempt of
        /// its own call, told started when the shared request reaches the transport's door and ended when it is
        /// answered or the caller leaves. (The first caller's observers hear the shared request itself, at that door.)
        var observed: [UInt64: JoinedAttempt] = [:]
        /// The first caller's observers as the shared request carries them (closed when that caller leaves while
        /// others stay), and its attempt as its call has them (told then that it ended).
        var first: (shared: CallObservation, own: JoinedAttempt)?
        /// The fragment of the shared request's URL.
        var fragment: String?
        /// The redirects the shared request followed so far: a caller that joins later hears them too, as it would
        /// have alone (its answer comes from where they led). At most the request's redirect limit.
        var redirects: [ConnectEvent] = []

        /// Whether the call whose observers are `observation` is among this one's callers already.
        func hasObservers(of observation: CallObservation) -> Bool {
            first?.own.observation.isSameCall(as: observation) == true
                || observed.values.contains { $0.observation.isSameCall(as: observation) }
        }
    }

    /// A caller's attempt as its observers hear it: started, then ended, each at most once and never a start after
    /// the end, whichever thread tells them (the shared request may be answered while a caller joins).
    // @unchecked Sendable: `telling` protects `started` and `ended`; the other properties are immutable, or protect
    // themselves.
    private final class JoinedAttempt: @unchecked Sendable {
        let observation: CallObservation
        let attempt: Int
        /// The caller's request as it reached this stage: the shared one's twin.
        let request: ConnectRequest
        let transfer: TransferOptions
        /// When the caller reached this stage, in `DispatchTime` nanoseconds (the coalescer's clock): a wait the shared
        /// request makes in a later stage (the queue) counts for the caller from then.
        let arrived: UInt64
        /// Held while the observers are told, so that a start and an end told from two threads come in order; nothing
        /// else takes it. Recursive: an observer that ends the call as it hears of it (cancelling it) ends its attempt
        /// on the same thread, inside what it is told, instead of waiting for a lock its own thread holds.
        private let telling = NSRecursiveLock()
        /// Whether the attempt was told started, and ended (`telling` held).
        private var started = false
        private var ended = false
        /// Whether the shared request reached the transport's door while the caller shared it: its attempt started
        /// then, whoever tells it first (the door, the caller as it joins, a redirect, or the answer, when it comes
        /// first). Set under the coalescer's lock; its own is never held while anything else is taken or told.
        private let isDue = Protected(false)
        /// The redirects the shared request followed before this caller joined, told right after its start. Set under
        /// the coalescer's lock as the caller joins, before anything else can tell the attempt anything.
        private let missed = Protected<[ConnectEvent]>([])
        /// Whether the shared request went on the wire for this caller: the first caller had left (cancelled) before
        /// it reached the door, and this one had joined earliest of those left. Its start is then not marked as
        /// sharing another call's request, so that an observer counting the wire's requests counts it. Set under the
        /// coalescer's lock, before the start is told.
        private let sendsForItself = Protected(false)
        /// The shared request as it went on the wire for this caller (``sendsForItself``), its fields added: told as
        /// the attempt's request, as a call alone is told its own. Set before the start is told.
        private let sent = Protected<ConnectRequest?>(nil)

        init(
            observation: CallObservation, attempt: Int, request: ConnectRequest, transfer: TransferOptions,
            arrived: UInt64
        ) {
            self.observation = observation
            self.attempt = attempt
            self.request = request
            self.transfer = transfer
            self.arrived = arrived
        }

        /// Notes that the shared request reached the transport's door while this caller shared it (``start()`` tells
        /// it, unless ``end(with:)`` comes first and tells it).
        func markDue() {
            isDue.withLock { $0 = true }
        }

        /// Notes that the shared request goes on the wire for this caller (``sendsForItself``).
        func markSendingForItself() {
            sendsForItself.withLock { $0 = true }
        }

        /// Notes the shared request as it goes on the wire for this caller.
        func noteSent(_ request: ConnectRequest) {
            sent.withLock { $0 = request }
        }

        /// Notes the redirects the shared request followed before this caller joined.
        func noteMissed(_ redirects: [ConnectEvent]) {
            missed.withLock { $0 = redirects }
        }

        /// Runs `body` holding `telling`.
        private func whileTelling(_ body: () -> Void) {
            telling.lock()
            defer { telling.unlock() }
            body()
        }

        /// Tells the observers the attempt started, then the redirects it missed, unless an observer ends it meanwhile.
        /// `telling` held.
        private func tellStart() {
            started = true
            // Marked, unless the shared request went for this caller: the attempt sends nothing of its own, which an
            // observer counting the wire's requests skips.
            let sendsForItself = sendsForItself.withLock { $0 }
            var told = sendsForItself ? sent.withLock { $0 } ?? request : request
            told.sharesAnotherCallsRequest = !sendsForItself
            observation.recordStart(of: attempt, request: told)
            let redirects = missed.withLock { missed in
                defer { missed = [] }
                return missed
            }
            for event in redirects {
                guard !ended else { return }
                observation.record(event)
            }
        }

        /// Tells the observers the caller waited `seconds` in the queue for the shared request, before its attempt, as a
        /// call alone hears its own wait there; nothing once the attempt started or ended.
        func tellQueueWait(seconds: TimeInterval) {
            whileTelling {
                guard !started, !ended else { return }
                observation.record(.queueWaited(seconds: seconds))
            }
        }

        /// Tells the observers the attempt started, unless they were told already, or told it ended.
        func start() {
            whileTelling {
                guard !started, !ended else { return }
                tellStart()
            }
        }

        /// Tells the observers the attempt ended with `result`, if it started (told, or due: the answer came before the
        /// start was told, to a caller that joined as it came); no start is told after this.
        func end(with result: Result<ConnectResponse, any Error>) {
            whileTelling {
                guard !ended else { return }
                ended = true
                if !started, isDue.withLock({ $0 }) { tellStart() }
                guard started else { return }
                MiddlewareChain.recordEnd(
                    of: attempt, with: result, to: observation, request: request, transfer: transfer)
            }
        }

        /// Tells the observers `event`, within the attempt: once it started (told, or due), and not after it ended.
        func tell(_ event: ConnectEvent) {
            whileTelling {
                guard !ended else { return }
                if !started, isDue.withLock({ $0 }) { tellStart() }
                // Started, unless an observer ended the attempt as it heard the start.
                guard started, !ended else { return }
                observation.record(event)
            }
        }

        /// Tells the observers the attempt ended with `result` if the shared request carrying them told it started
        /// (the first caller's: the request's own observers heard its start at the transport's door).
        func endIfSent(with result: Result<ConnectResponse, any Error>) {
            guard observation.hasSendInFlight(of: attempt) else { return }
            whileTelling { started = true }
            end(with: result)
        }
    }

    /// Everything that changes, behind one lock.
    private struct MutableState {
        var calls: [Key: Call] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Protected(MutableState())
    /// The time, in `DispatchTime` nanoseconds: when a call began, and whether it is too late to join it.
    private let now: @Sendable () -> UInt64
    /// Run when a caller has joined a call whose shared request is at the transport's door already, before its
    /// observers are told its attempt started (a test's hook: the answer may come then).
    private let joinedAtDoor: @Sendable () -> Void
    /// Whether the client has observers (``Connect/Settings/observers``): then a shared request whose first caller has
    /// none of its own (its observers declined that call) still carries a relay for the callers that join it. A client
    /// without observers makes no event.
    private let clientObserves: Bool

    /// A coalescer timing its calls by `now` (a test's own clock; the system's uptime by default), for a client that
    /// has observers (`clientObserves`) or none.
    init(
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        joinedAtDoor: @escaping @Sendable () -> Void = {}, clientObserves: Bool = true
    ) {
        self.now = now
        self.joinedAtDoor = joinedAtDoor
        self.clientObserves = clientObserves
    }

    /// Whether a request with `timeout` may join a call that began at `began`: within the last tenth of the timeout.
    static func mayJoin(began: UInt64, timeout: TimeInterval, now: UInt64) -> Bool {
        let elapsed = Double(now &- began) / 1e9
        return elapsed <= timeout / 10
    }

    /// The key of a request that may share a call, or `nil` if it must go alone.
    func key(
        for request: ConnectRequest, connectivity: ConnectivityPolicy?, maxRedirects: Int? = nil,
        idleTimeout: TimeInterval? = nil
    ) -> Key? {
        let method = request.method.rawValue.uppercased()
        guard method == "GET" || method == "HEAD" else { return nil }
        guard case .none = request.body else { return nil }
        // A timeout a middleware set to NaN would make a key equal to none, not even itself: its call could never be
        // found again (taken for ended, never sent nor answered). Such a request goes as it would alone.
        guard !request.timeoutInterval.isNaN else { return nil }
        // As the wire has them: without the blanks around values, which the transport's door trims (two requests
        // sent alike share a call); fields of one name in their order, a list whose order is part of its value (RFC
        // 9110 §5.3: `X-Tag: 1` then `X-Tag: 2` is not the other way round), names in any order.
        var fields = request.headerFields
        fields.trimBlanks()
        let headers = fields.enumerated()
            .map { index, field in (name: field.name.canonicalName, index: index, value: field.value) }
            .sorted { $0.name != $1.name ? $0.name < $1.name : $0.index < $1.index }
            .map { "\($0.name.utf8.count):\($0.name):\($0.value)" }
        return Key(
            method: method, url: request.url.absoluteStringWithoutFragment, headers: headers,
            timeout: request.timeoutInterval,
            cachePolicy: request.cachePolicy.rawValue, foundationExtras: request.foundationExtras,
            connectivity: connectivity, maxRedirects: maxRedirects, idleTimeout: idleTimeout)
    }

    /// Joins the call in flight for an identical request, or starts one. Called by hand, not by the pipeline, it
    /// cannot hear the shared request reach the transport: a caller that joins is in flight at once.
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        coalesce(request, context: context, next: { request, _ in next(request) }, hearsTransport: false)
    }

    /// Joins the call in flight for an identical request, or starts one; a caller that joins is in flight from when
    /// the shared request reaches the transport (at once if it is there already).
    func intercept(
        _ request: consuming ConnectRequest, context: RequestContext, passing next: @escaping PassingNext
    ) -> Future<ConnectResponse> {
        coalesce(request, context: context, next: next, hearsTransport: true)
    }

    /// Joins or starts a call. With `hearsTransport`, the shared request tells this coalescer when it reaches the
    /// transport, through the context handed to `next`.
    private func coalesce(
        _ request: consuming ConnectRequest, context: RequestContext, next: @escaping PassingNext,
        hearsTransport: Bool
    ) -> Future<ConnectResponse> {
        // Per-call/connector plugins run after this stage, and transfer options apply to this call only: such a
        // request is not interchangeable with another one that has the same URL and headers. Nor are transfers
        // that read or write their own files, or stream a body only one reader can take, nor a request that must
        // go whatever the connectivity (a shared call may be waiting for the network).
        let options = context.options
        let transfer = context.transfer
        guard options.plugins.isEmpty, options.maxResponseBytes == nil, options.connectivity != .ignore,
            options.progress == nil, transfer.destination == nil, transfer.bodyFile == nil,
            transfer.progress == nil, transfer.streaming == nil,
            let key = key(
                for: request, connectivity: options.connectivity, maxRedirects: transfer.maxRedirects,
                idleTimeout: transfer.idleTimeout)
        else { return next(request, context) }
        let promise = Promise<ConnectResponse>()
        // The caller's attempt as its observers hear it, if it has any.
        var observed = context.transfer.observation.map { observation in
            JoinedAttempt(
                observation: observation, attempt: context.attempt, request: copy request, transfer: transfer,
                arrived: now())
        }
        let joined: (UInt64, UInt64, Bool, Bool, Bool, CallObservation?)? = state.withLock { state in
            state.nextID &+= 1
            let callerID = state.nextID
            if var existing = state.calls[key] {
                // A retry goes alone: the call in flight may be the one its earlier attempt was abandoned in. So does
                // a request that would have less than nine tenths of its timeout left in the shared exchange.
                guard context.attempt <= 1, Self.mayJoin(began: existing.began, timeout: key.timeout, now: now()) else {
                    return nil
                }
                existing.callers[callerID] = promise
                if request.url.fragment != existing.fragment { existing.fragmentRequests[callerID] = copy request }
                let isInFlight = existing.reachedTransport || !hearsTransport
                let isAtDoor = existing.reachedDoor || !hearsTransport
                if hearsTransport, let sending = context.sending { existing.sendings[callerID] = sending }
                // A call's second send of one attempt (a middleware's hedge) that joins its first is no send of its
                // own: its observers hear the one that goes.
                if let joining = observed {
                    if existing.hasObservers(of: joining.observation) {
                        observed = nil
                    } else {
                        existing.observed[callerID] = joining
                        joining.noteMissed(existing.redirects)
                        // Started from now: the answer tells the start before the end if it comes first.
                        if isAtDoor { joining.markDue() }
                    }
                }
                state.calls[key] = existing
                return (existing.id, callerID, false, isAtDoor, isInFlight, nil)
            }
            // The shared request tells the callers that join it what it meets on its way (a redirect), also when this
            // caller has no observers of its own (when the client has some), or has left.
            let relay: @Sendable (ConnectEvent) -> Void = { [weak self] event in
                self?.relay(event, of: key, callID: callerID)
            }
            // Once the first caller has left, the request goes for another, whose fields (a trace context) it carries.
            let fieldsInstead: @Sendable (inout ConnectRequest) -> Void = { [weak self] request in
                self?.addFieldsOfEarliest(to: &request, key: key, callID: callerID)
            }
            let sharedObservation =
                context.transfer.observation?.sharing(relayingTo: relay, fieldsInstead: fieldsInstead)
                ?? (clientObserves ? CallObservation.relaying(to: relay, fieldsInstead: fieldsInstead) : nil)
            var call = Call(
                id: callerID, began: now(), shared: nil, callers: [callerID: promise])
            call.fragment = request.url.fragment
            if hearsTransport, let sending = context.sending { call.sendings[callerID] = sending }
            if let sharedObservation, let observed { call.first = (sharedObservation, observed) }
            state.calls[key] = call
            return (callerID, callerID, true, false, false, sharedObservation)
        }
        guard let joined else { return next(request, context) }
        let (callID, callerID, isFirst, isAtDoor, isInFlight, sharedObservation) = joined
        let future = promise.future
        promise.setCancelHandler { [weak self, weak future] in
            self?.drop(callerID, from: key, callID: callID, stopped: future)
        }
        if isFirst {
            // The shared request tells the coalescer when it reaches the transport, and the coalescer tells every
            // caller's loop (the first's included); when it is answered, `start` tells them.
            var shared = context
            // The first caller's observers hear the shared request as their attempt, at the transport's door, until
            // that caller leaves while others still share it (`drop`).
            shared.transfer.observation = sharedObservation
            // The shared request is over when every caller has left (or it was answered), not when the first
            // caller's call is: one cancelled while the request waits in a later stage (the queue) leaves it to
            // the others.
            shared.callHasEnded = { [weak self] in
                self?.state.withLock { $0.calls[key]?.id != callID } ?? true
            }
            if hearsTransport {
                shared.sending = AttemptSending(
                    reached: { [weak self] in self?.reachedTransport(key, callID: callID) }, answered: {},
                    atDoor: { [weak self] _ in self?.reachedDoor(key, callID: callID) })
            }
            start(consume request, key: key, callID: callID) { [shared] request in next(request, shared) }
        } else {
            // Sharing a call already at the transport's door: its observers hear this attempt start, as the first
            // caller's did there (unless the answer came meanwhile and told the start with the end).
            if isAtDoor { context.sending?.atDoor?(false) }
            if isAtDoor, let observed {
                joinedAtDoor()
                observed.start()
            }
            // Sharing a call already at the transport: this attempt is in flight from now (its own timeout counts).
            if isInFlight { context.sending?.reached() }
        }
        return promise.future
    }
}

// MARK: - The shared call

extension RequestCoalescer {
    /// Sends the shared request and hands its result to every caller still interested.
    private func start(_ request: consuming ConnectRequest, key: Key, callID: UInt64, next: Next) {
        let shared = next(consume request)
        let abandoned: Bool = state.withLock { state in
            guard state.calls[key]?.id == callID else { return true }
            state.calls[key]?.shared = shared
            return false
        }
        // Every caller cancelled while `next` ran: nobody wants the result.
        if abandoned { shared.cancel() }
        shared.whenComplete { result in
            let (callers, sendings, observed) = self.state.withLock {
                state -> ([(Promise<ConnectResponse>, ConnectRequest?)], [AttemptSending], [JoinedAttempt]) in
                guard let call = state.calls[key], call.id == callID else { return ([], [], []) }
                state.calls[key] = nil
                // In order of arrival.
                return (
                    call.callers.sorted { $0.key < $1.key }.map { ($0.value, call.fragmentRequests[$0.key]) },
                    call.sendings.sorted { $0.key < $1.key }.map(\.value),
                    call.observed.sorted { $0.key < $1.key }.map(\.value)
                )
            }
            // Each caller's attempt is answered: its own timeout stops before a middleware of its own holds the
            // answer (a token refresh after a 401), and its observers hear it end before its call can.
            for sending in sendings { sending.answered() }
            for joined in observed { joined.end(with: result) }
            for (caller, request) in callers {
                guard let request else {
                    caller.completeIfPending(with: result)
                    continue
                }
                caller.completeIfPending(with: result.map { $0.answering(request) })
            }
        }
    }

    /// The shared request of call `callID` reached the transport's door, where the wire check runs: the attempt of
    /// each caller that joined starts from now, as the first caller's observers hear the shared one start there. A
    /// request the check refuses never reaches the transport, and its callers hear it end with that refusal.
    private func reachedDoor(_ key: Key, callID: UInt64) {
        let (observed, sendings) = state.withLock { state -> ([JoinedAttempt], [AttemptSending]) in
            guard var call = state.calls[key], call.id == callID else { return ([], []) }
            call.reachedDoor = true
            state.calls[key] = call
            // In order of arrival.
            let observed = call.observed.sorted { $0.key < $1.key }.map(\.value)
            for attempt in observed { attempt.markDue() }
            // The first caller left (cancelled) while the request waited (in the queue): it goes for the earliest of
            // those still sharing it, whose observers count it as sent.
            if call.first == nil, !call.callers.keys.contains(call.id) { observed.first?.markSendingForItself() }
            return (observed, call.sendings.sorted { $0.key < $1.key }.map(\.value))
        }
        // Each caller's retry loop counts its attempt as made, as its observers hear it start.
        // (A GET or HEAD: replay-safe by its method, whatever its fields.)
        for sending in sendings { sending.atDoor?(false) }
        for attempt in observed { attempt.start() }
    }

    /// The shared request of call `callID` is at the transport's door, and its first caller has left (cancelled) while
    /// it waited (in the queue): it goes for the earliest of the callers still sharing it that has observers
    /// (``reachedDoor(_:callID:)``), and carries that caller's fields (its trace context), as it would have alone. A
    /// first caller still there keeps the request its own, fields or none.
    private func addFieldsOfEarliest(to request: inout ConnectRequest, key: Key, callID: UInt64) {
        let earliest = state.withLock { state -> JoinedAttempt? in
            guard let call = state.calls[key], call.id == callID, !call.callers.keys.contains(call.id) else {
                return nil
            }
            return call.observed.min { $0.key < $1.key }?.value
        }
        guard let earliest else { return }
        earliest.markSendingForItself()
        earliest.observation.addingFields(to: &request, attempt: earliest.attempt)
        earliest.noteSent(request)
    }

    /// The shared request of call `callID` met `event` on its way: a redirect it followed is one each caller that
    /// joined it followed too, and a wait in the queue one each caller that had joined it by then made too, from when
    /// it joined, as its observers hear (the first caller's hear the shared request itself).
    private func relay(_ event: ConnectEvent, of key: Key, callID: UInt64) {
        switch event {
        case .redirected:
            let observed = state.withLock { state -> [JoinedAttempt] in
                guard var call = state.calls[key], call.id == callID else { return [] }
                call.redirects.append(event)
                state.calls[key] = call
                // In order of arrival.
                return call.observed.sorted { $0.key < $1.key }.map(\.value)
            }
            for attempt in observed { attempt.tell(event) }
        case .queueWaited(let seconds):
            let observed = state.withLock { state -> [JoinedAttempt] in
                guard let call = state.calls[key], call.id == callID else { return [] }
                // In order of arrival.
                return call.observed.sorted { $0.key < $1.key }.map(\.value)
            }
            let now = now()
            for attempt in observed {
                attempt.tellQueueWait(seconds: min(seconds, Double(now &- attempt.arrived) / 1e9))
            }
        default:
            return
        }
    }

    /// The shared request of call `callID` reached the transport: its callers are in flight from now.
    private func reachedTransport(_ key: Key, callID: UInt64) {
        let joined = state.withLock { state -> [AttemptSending] in
            guard var call = state.calls[key], call.id == callID else { return [] }
            call.reachedTransport = true
            state.calls[key] = call
            // In order of arrival.
            return call.sendings.sorted { $0.key < $1.key }.map(\.value)
        }
        for sending in joined { sending.reached() }
    }

    /// Forgets a caller that cancelled (`stopped`); cancels the shared call when it was the last one, as that caller's
    /// future was. A caller that joined is told its attempt ended as its future did (cancelled, or timed out).
    private func drop(_ callerID: UInt64, from key: Key, callID: UInt64, stopped: Future<ConnectResponse>?) {
        let (orphaned, joined, first) = state.withLock {
            state -> (Future<ConnectResponse>?, JoinedAttempt?, JoinedAttempt?) in
            guard var call = state.calls[key], call.id == callID else { return (nil, nil, nil) }
            call.callers[callerID] = nil
            call.fragmentRequests[callerID] = nil
            call.sendings[callerID] = nil
            let joined = call.observed.removeValue(forKey: callerID)
            guard call.callers.isEmpty else {
                var first: JoinedAttempt?
                if callerID == call.id, let shared = call.first {
                    // The first caller leaves a request the others still share: its observers hear no more of it
                    // (what comes later is the others' answer), and its attempt ends now if it was told started.
                    call.first = nil
                    shared.shared.stopListening()
                    first = shared.own
                }
                state.calls[key] = call
                return (nil, joined, first)
            }
            state.calls[key] = nil
            // The last caller leaves: the shared request is cancelled, and tells its own end to the observers it
            // carries.
            return (call.shared, joined, nil)
        }
        // Its attempt ends as its future did: cancelled, or timed out (the call's deadline, the attempt's own).
        if let left = joined ?? first {
            let outcome = stopped?.result ?? .failure(ConnectError.cancelled(sent: left.request))
            joined?.end(with: outcome)
            first?.endIfSent(with: outcome)
        }
        orphaned?.cancel(as: stopped)
    }
}

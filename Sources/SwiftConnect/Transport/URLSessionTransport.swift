import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The real transport: sends requests with `URLSession` (FoundationNetworking on Linux).
///
/// ```swift
/// let connect = Connect(transport: URLSessionTransport())  // what Connect() does
///
/// let configuration = URLSessionConfiguration.default
/// configuration.httpAdditionalHeaders = ["X-App": "demo"]
/// let custom = Connect(transport: URLSessionTransport(configuration: configuration))
/// ```
///
/// Each request's `timeoutInterval` (a connector's ``Connector/timeout``) bounds each exchange (one attempt, its
/// redirects included), from sending to the last byte of the response, on every platform: when it passes, the
/// task is cancelled and the future fails with ``ConnectError/Kind/timedOut``. So does the configuration's
/// `timeoutIntervalForResource` when it is shorter (FoundationNetworking ignores it: the transport enforces it).
///
/// It sends http and https URLs only: any other scheme (`file:`, `ftp:`, `data:`…) fails at once with
/// ``ConnectError/Kind/invalidRequest``, nothing sent, on every platform.
/// On Linux, a URL whose host is an IPv6 address literal (`http://[::1]:8080/`) fails the same way, nothing sent:
/// FoundationNetworking refuses it, and the error says so. Use a host name that resolves to the address.
///
/// A transport made from a configuration owns its session and is its delegate. A request with a body, or with transfer
/// options (a body from a file, a download, a size limit, progress, a stream), runs through the core's exchange, one
/// URLSession task per hop: the same rules as every `HTTPEngine`, written once (redirects, the deadline, limits,
/// downloads, progress, stream buffering). A plain request without a body, most GETs, takes URLSession's
/// completion-handler path, the fastest on every platform; a redirect it gets is handed to the core's exchange. The
/// session follows no redirect itself, so one rule applies to all: it keeps credentials home: `Authorization`,
/// `Proxy-Authorization`, `Cookie` and every other header named like a secret (`X-Api-Key`, `*-Token`…) are removed
/// when a redirect goes to another scheme, host or port; a redirect to anything but http or https, or to a URL with a
/// `user:password@` part of its own, is not followed (the 3xx response is the answer). The fields of the
/// configuration's `httpAdditionalHeaders` named like a secret (`Authorization`, `X-Api-Key`…) are added to each
/// request that lacks them rather than left to the session, so this rule removes them too (but `Proxy-Authorization`,
/// which the session keeps sending to its proxy), and errors and logs hide them as the request's own.
///
/// A redirect that keeps the method (307, 308, or 301/302 of a method other than POST) keeps the body too, on
/// every platform, within the same timeout and redirect limit (20, or ``RequestOptions/maxRedirects``). A body from an
/// `InputStream` cannot be read twice: there the 3xx response is the answer. The response names the URL that
/// answered; its ``ConnectResponse/request`` is the request sent first.
///
/// A session you pass in yourself keeps its own delegate and rules; transfers through it are done in memory
/// (see `Transport.send(_:transfer:)`).
public final class URLSessionTransport: Transport {
    /// The session that runs the requests.
    package var session: URLSession { reflectionHidden.value.session }
    /// The session's delegate, when this transport owns the session.
    private var delegate: SessionDelegate? { reflectionHidden.value.delegate }
    /// The session and its delegate, out of the transport's reflection: the session's configuration, cookie store and
    /// credential store (which the delegate holds too) show their secrets to `dump` and `Mirror`.
    private let reflectionHidden: Unreflected<(session: URLSession, delegate: SessionDelegate?)>
    /// Where requests started while a response is being delivered are handed to URLSession (see
    /// ``CompletionContext``), and on Linux where tasks are created and resumed while a streamed request body is in
    /// flight (``startOffTheCaller(_:)``).
    let submissionQueue = DispatchQueue(label: "SwiftConnect.URLSessionTransport.submission")
    /// Starts handed to ``submissionQueue`` that have not run yet: while there are any, a task started on Linux
    /// goes after them (``startsOffTheCaller``).
    let queuedStarts = Protected(0)
    /// Plain requests started and not yet answered: with none, URLSession's work queue is idle and a request
    /// started from a delivery goes straight to it.
    private let plainInFlight = Protected(0)
    /// The session configuration's `timeoutIntervalForResource`, read once; `.infinity` when it sets none.
    private let resourceTimeout: TimeInterval
    /// The certificate pins (see ``init(configuration:pins:)``); the delegate checks them.
    let pins: CertificatePins
    /// The fields of the configuration's `httpAdditionalHeaders` named like a secret (`Authorization`, `X-Api-Key`…),
    /// which this transport adds to each request that lacks them instead of leaving them to its session
    /// (``takingOverSecretHeaders(of:)``); for a session of the app's, as well as the session, so that errors and
    /// logs hide them.
    private let sessionSecretHeaders: HeaderFields
    /// Why the app's session (``init(session:)``) cannot send a request here, each request failing with it, nothing
    /// sent; `nil` for every other session (``unusableSessionTimeout(of:)``).
    private let sessionProblem: ConnectError?
    /// How many short-lived sessions of a transfer's hop this transport has made (Linux), for tests.
    let isolatedSessionsMade = Protected(0)
    /// How many times this transport has invalidated the short-lived session of a transfer (Linux), for tests:
    /// once per such session, whether it was stopped or ended (``IsolatedSessionInvalidation``).
    let isolatedSessionInvalidations = Protected(0)
    /// How many of those invalidations cancelled the session's task (a transfer stopped, not one that ended).
    let isolatedSessionCancellations = Protected(0)

    /// Creates a transport with its own session.
    ///
    /// - Parameter configuration: The session configuration. Defaults to ``defaultConfiguration``.
    public convenience init(configuration: URLSessionConfiguration = URLSessionTransport.defaultConfiguration) {
        self.init(configuration: configuration, pins: CertificatePins())
    }

    /// Creates a transport with its own session and certificate pins.
    ///
    /// On Apple platforms, pins are checked in the server-trust challenge, after the system has evaluated the
    /// chain: a chain without a pinned key fails with ``ConnectError/Kind/certificatePinning`` naming the host,
    /// before any byte of the request is sent. FoundationNetworking (Linux) has no server-trust challenge: there a
    /// request to a pinned host fails at once with that error, nothing sent, rather than going out unpinned (use
    /// `AsyncHTTPClientTransport` to pin on Linux). Over plain `http`, a pinned host is refused everywhere. Hosts
    /// without pins are sent as usual.
    ///
    /// - Parameters:
    ///   - configuration: The session configuration.
    ///   - pins: The certificate pins.
    public convenience init(configuration: URLSessionConfiguration, pins: CertificatePins) {
        // Read before the cookies are taken over: on Linux the session's own handling is turned off.
        let consent = RedirectCookieConsent(configuration)
        let (configuration, cookies) = SessionCookies.takingOver(configuration)
        let delegate = SessionDelegate(pins: pins, cookies: cookies, redirectCookies: consent)
        self.init(configuration: configuration, delegate: delegate, pins: pins)
    }

    /// Creates a transport with its own session and the given delegate (tests pass one with a hook).
    ///
    /// The session runs with `configuration` as it is: on Linux, give it one made by ``SessionCookies`` and the
    /// delegate the cookies to keep, as the public initializers do.
    init(configuration: URLSessionConfiguration, delegate: SessionDelegate, pins: CertificatePins = CertificatePins()) {
        self.pins = pins
        let (configuration, secretHeaders) = Self.takingOverSecretHeaders(of: Self.withUsableTimeouts(configuration))
        sessionSecretHeaders = secretHeaders
        sessionProblem = nil
        reflectionHidden = Unreflected(
            (URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil), delegate),
            summary: "URLSession (its configuration and stores not shown)")
        resourceTimeout = Self.resourceTimeout(of: configuration)
    }

    /// Creates a transport over an existing session, which the caller keeps ownership of.
    ///
    /// The session is used as it is. On Linux, one whose `timeoutIntervalForRequest` or `timeoutIntervalForResource`
    /// is more than FoundationNetworking can take (`.infinity`, more than a year, NaN), which stops the process at its
    /// first request, fails every request with ``ConnectError/Kind/transport``, nothing sent: give it a year at most,
    /// or use ``init(configuration:)``, which takes a year in its place. On Linux it also parses cookies with FoundationNetworking's parser, which
    /// stops the process on some `Set-Cookie` fields a hostile server can send (`😀=`); the transport's own sessions
    /// (``init(configuration:)``) do not. With a server you do not trust, prefer those, or give the session a
    /// configuration with `httpCookieAcceptPolicy = .never`.
    ///
    /// - Parameter session: The session, such as `URLSession.shared`.
    public init(session: URLSession) {
        pins = CertificatePins()
        reflectionHidden = Unreflected((session, nil), summary: "URLSession (its configuration and stores not shown)")
        // Copied into each request, not taken out: the session is the app's. It sends them all the same (a request's
        // own field wins over the session's, with the same value), and the request shows what was sent.
        sessionSecretHeaders = Self.takingOverSecretHeaders(of: session.configuration).1
        resourceTimeout = Self.resourceTimeout(of: session.configuration)
        sessionProblem = Self.unusableSessionTimeout(of: session.configuration)
    }

    /// The configuration a transport's own session runs with, and the fields of its `httpAdditionalHeaders` named
    /// like a secret (``HTTPHeader/isSensitive(name:)``), taken out of a copy of it: the transport adds them to each
    /// request that lacks them (a request's own field wins, as it does over the session's). Left to the session,
    /// they were in no request the library saw: an error whose server echoed one showed it, and a redirect to
    /// another origin kept it. In the request they are hidden and removed as the request's own credentials are.
    /// `Proxy-Authorization`, the proxy's, is copied rather than taken: the session sends it on every hop, as before.
    static func takingOverSecretHeaders(of configuration: URLSessionConfiguration) -> (
        URLSessionConfiguration, HeaderFields
    ) {
        guard let additional = configuration.httpAdditionalHeaders else { return (configuration, HeaderFields()) }
        var taken = HeaderFields()
        var kept: [AnyHashable: Any] = [:]
        for (key, value) in additional {
            if let name = key as? String, let value = value as? String, HTTPHeader.isSensitive(name: name) {
                taken.append(HeaderField(name: HeaderField.Name(name), value: value))
                // The proxy's credential is for the proxy, on every hop whatever its origin: the session keeps it.
                if HeaderField.Name(name) == "Proxy-Authorization" { kept[key] = value }
            } else {
                kept[key] = value
            }
        }
        guard !taken.isEmpty, let copy = configuration.copy() as? URLSessionConfiguration else {
            return (configuration, HeaderFields())
        }
        copy.httpAdditionalHeaders = kept.isEmpty ? nil : kept
        return (copy, taken)
    }

    /// `request` with each of ``sessionSecretHeaders`` it lacks.
    private func withSessionSecretHeaders(_ request: URLRequest) -> URLRequest {
        var request = request
        for field in sessionSecretHeaders where request.value(forHTTPHeaderField: field.name.rawName) == nil {
            request.setValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        return request
    }

    /// `request` with each of ``sessionSecretHeaders`` it lacks.
    private func withSessionSecretHeaders(_ request: ConnectRequest) -> ConnectRequest {
        var request = request
        for field in sessionSecretHeaders where !request.headerFields.contains(field.name) {
            request.headerFields.append(field)
        }
        return request
    }

    /// The longest a task may take by `configuration`, or `.infinity` when it sets no usable limit.
    private static func resourceTimeout(of configuration: URLSessionConfiguration) -> TimeInterval {
        let seconds = configuration.timeoutIntervalForResource
        return seconds > 0 && seconds.isFinite ? seconds : .infinity
    }

    /// The time one exchange may take: the request's timeout, or the session's resource timeout if shorter.
    private func timeout(of request: URLRequest) -> TimeInterval {
        min(request.timeoutInterval, resourceTimeout)
    }

    deinit {
        if delegate != nil { session.finishTasksAndInvalidate() }
    }

    /// The configuration of a transport's own session: `URLSessionConfiguration.default` without `URLCache`.
    ///
    /// An API client gets its caching from ``Connect``'s response cache (``RequestOptions/cache``), where
    /// the app decides what is kept and for how long. `URLCache` would store and look up every response on
    /// top of that, a noticeable share of each small request's CPU time on Linux (see BENCHMARKS.md). Pass
    /// `.default` to keep it.
    public static var defaultConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    /// Sends a request and collects its response in memory.
    public func send(_ request: URLRequest) -> Future<ConnectResponse> {
        send(request, transfer: TransferOptions())
    }

    /// Sends a request, streaming its body from a file and its response to a file as `transfer` asks.
    ///
    /// A plain request without a body takes URLSession's completion-handler path; every other one runs through the
    /// core's exchange, one URLSession task per hop (see the `ConnectRequest` variant of this method). On either
    /// path a request that cannot go on the wire as it is (a method or field name that is not a token, a control
    /// character or non-ASCII text in a value, a `Content-Length` that is not the body's…) fails with
    /// ``ConnectError/Kind/invalidRequest``, nothing sent, as a client's request does.
    public func send(_ unprepared: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        send(unprepared, transfer: transfer, checked: false)
    }

    /// The public `send(_:transfer:)` of a `URLRequest`, the request's wire check skipped on URLSession's
    /// completion-handler path when `checked` says the caller has run it (the `ConnectRequest` it was made from). Every
    /// other path runs through the core's exchange, which checks each hop itself.
    private func send(_ unprepared: URLRequest, transfer: TransferOptions, checked: Bool) -> Future<ConnectResponse> {
        if let sessionProblem { return Future(error: sessionProblem) }
        let unprepared = sessionSecretHeaders.isEmpty ? unprepared : withSessionSecretHeaders(unprepared)
        if let refusal = ServerTrustPinning.refusal(of: unprepared, pins: pins) { return Future(error: refusal) }
        let request: URLRequest
        switch Self.prepared(unprepared) {
        case .success(let prepared): request = prepared
        case .failure(let error): return Future(error: error)
        }
        // Over a session of the app's (no delegate of ours), a plain request with a body takes this path too: the
        // session sends it, and `sendInMemory` below comes back here for every transfer it cannot run.
        if transfer.isPlain, delegate == nil || (request.httpBody?.isEmpty ?? true && request.httpBodyStream == nil) {
            // The core's exchange checks each hop it sends; this path is URLSession's alone, so the request is held to
            // the same rules here, whoever made it (a client's chain has checked it already, a caller of the
            // transport has not): a CR LF in a value or the method would otherwise be written into the request.
            // `prepared` has refused a request without a URL, the one the conversion throws for; were that to
            // change, its error is the answer, not a request sent unchecked.
            if !checked {
                do {
                    if let problem = try ConnectRequest(request).wireProblem(bodyFile: nil) {
                        return Future(error: problem)
                    }
                } catch {
                    return Future(error: error)
                }
            }
            return sendWithCompletionHandler(request, observation: transfer.observation)
        }
        guard delegate != nil else { return sendInMemory(request, transfer: transfer, using: self) }
        do {
            return exchange(try ConnectRequest(request), transfer: transfer)
        } catch {
            return Future(error: error)
        }
    }

    /// Sends the client's request as `transfer` asks: what ``Connect`` calls.
    ///
    /// A plain request without a body (most GETs) takes URLSession's completion-handler path: it skips the per-event
    /// hops to the delegate queue (response, each piece of data, completion; BENCHMARKS.md has the cost); a
    /// redirect it gets is handed to the core's exchange. Every other request (a body, a download, a size limit,
    /// progress, a stream) runs through the core's exchange, one URLSession task per hop, under the same rules as
    /// every `HTTPEngine`, no `URLRequest` made here. A plain request sent from a callback of another request (the
    /// next step of a `flatMap` chain) is handed to URLSession from the transport's own queue when other requests
    /// are in flight: creating a task waits for
    /// URLSession's internal queue, and waiting on the delegate queue would hold up every other response. The core's
    /// exchange starts its hops from a task of its own, and needs no such queue. On Linux every task is created and
    /// resumed from one queue of the transport's, off the caller and off Swift's concurrency pool: there URLSession's
    /// internal queue can be held for as long as another request's streamed body waits for its next chunk.
    public func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        if let sessionProblem { return Future(error: sessionProblem) }
        let request = sessionSecretHeaders.isEmpty ? request : withSessionSecretHeaders(request)
        guard delegate != nil, !(transfer.isPlain && !request.body.isPresent) else {
            // Without the blanks around values (RFC 9110 §5.5), as the exchange sends them: libcurl would leave out
            // a field of blanks only. Done by the client's chain already; this is for a request handed over directly.
            var request = request
            request.headerFields.trimBlanks()
            request.headerFields.removeBlankContentTypes()
            // Checked here, on the core's model, rather than on the `URLRequest` made of it (FoundationNetworking's
            // drops a field whose value it refuses, silently).
            if let problem = request.wireProblem(bodyFile: transfer.bodyFile) { return Future(error: problem) }
            return declaringSecrets(of: request, on: send(request.urlRequest, transfer: transfer, checked: true))
        }
        // Pins are checked for every hop, the first included, by the hop engine.
        return exchange(request, transfer: transfer)
    }

    /// Runs `request` through the core's exchange over this transport's session.
    private func exchange(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        guard let delegate else {
            return declaringSecrets(
                of: request, on: sendInMemory(request.urlRequest, transfer: transfer, using: self))
        }
        var request = request
        // The session's resource timeout bounds the exchange too (FoundationNetworking ignores it).
        if resourceTimeout < request.timeoutInterval { request.timeoutInterval = resourceTimeout }
        var engine = URLSessionHopEngine(
            transport: self, delegate: delegate, isolated: Self.needsSessionOfItsOwn(transfer, body: request.body),
            bufferLimit: transfer.streaming?.bufferLimit ?? .max)
        engine.extras = request.foundationExtras
        engine.cachePolicy = request.cachePolicy
        return EngineExchange(
            engine: engine, request: request, transfer: transfer,
            redirectCookies: delegate.redirectCookies?.redirectCookies() ?? RedirectCookies()
        ).start()
    }

    /// `request` as URLSession can take it, or why it cannot be sent.
    ///
    /// Only http and https URLs go out, on every platform: FoundationNetworking waits for the whole timeout on an
    /// `ftp:` URL and answers `data:` without HTTP, and Apple's URLSession reads `file:` URLs from the disk. A
    /// scheme in capitals (`HTTP://`), the same scheme by RFC 3986, is written in lower case, which
    /// FoundationNetworking requires. A plain http or https request is handed on as it is, without a copy.
    private static func prepared(_ request: URLRequest) -> Result<URLRequest, ConnectError> {
        guard let scheme = request.url?.scheme, scheme == "https" || scheme == "http" else {
            return withLowercaseHTTPScheme(request).map(withUsableTimeout)
        }
        return .success(withUsableTimeout(request))
    }

    /// `request` with its http or https scheme in lower case, or an ``ConnectError/Kind/invalidRequest`` error
    /// for any other scheme, or no URL.
    private static func withLowercaseHTTPScheme(_ request: URLRequest) -> Result<URLRequest, ConnectError> {
        let text = request.url?.absoluteString ?? ""
        let scheme = request.url?.scheme ?? ""
        let lowercased = scheme.lowercased()
        guard lowercased == "http" || lowercased == "https", text.hasPrefix(scheme),
            let url = URL(string: lowercased + text.dropFirst(scheme.count))
        else {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(text)), request: request)
            error.message =
                request.url == nil
                ? "the request has no URL"
                : "'\(Redaction.urlText(text))' is not an http or https URL: URLSessionTransport sends HTTP only"
            return .failure(error)
        }
        var request = request
        request.url = url
        return .success(request)
    }

    /// A plain exchange, with URLSession's completion handler: started at once, or from ``submissionQueue``
    /// when the caller is delivering another response (``CompletionContext``) or, on Linux, while a streamed request
    /// body is in flight (``startOffTheCaller(_:)``).
    private func sendWithCompletionHandler(_ request: URLRequest, observation: CallObservation?) -> Future<
        ConnectResponse
    > {
        let promise = Promise<ConnectResponse>()
        // Armed now: the timeout counts from the caller's send, also while the task waits for its turn.
        let deadline = PlainExchangeDeadline(seconds: timeout(of: request), request: request, promise: promise)
        guard startsOffTheCaller || (CompletionContext.isDelivering && plainInFlight.snapshot > 0) else {
            startDataTask(request, promise: promise, observation: observation, deadline: deadline)
            return promise.future
        }
        startFromSubmissionQueue { [self] in
            // Cancelled or timed out while waiting: never started.
            guard !promise.future.isCompleted else { return }
            startDataTask(request, promise: promise, observation: observation, deadline: deadline)
        }
        return promise.future
    }

    /// Creates and starts the data task that completes `promise`: URLSession's completion handler hands its
    /// outcome, body included, to the task's ``TaskHandler``, which challenges and redirects have reached through
    /// the delegate. `armed` is the exchange's deadline, armed when the caller sent it; without one, it is armed now.
    func startDataTask(
        _ request: URLRequest, promise: Promise<ConnectResponse>, observation: CallObservation? = nil,
        deadline armed: PlainExchangeDeadline? = nil
    ) {
        let armed = armed ?? PlainExchangeDeadline(seconds: timeout(of: request), request: request, promise: promise)
        let deadline = armed.timer
        plainInFlight.withLock { $0 += 1 }
        let slot = Protected<(handler: TaskHandler, task: Int)?>(nil)
        // On Linux the transport sends the session's cookies itself (``SessionCookies``).
        let sent = delegate?.cookies?.adding(to: request) ?? request
        let task = session.dataTask(with: Self.forSession(sent)) {
            [plainInFlight, delegate] data, response, error in
            plainInFlight.withLock { $0 -= 1 }
            delegate?.cookies?.keep(from: response, of: request)
            // Taken out, so that nothing the task keeps holds the handler (and through it the transport) after this.
            guard
                let (handler, task) = slot.withLock({ slot in
                    defer { slot = nil }
                    return slot
                })
            else { return }
            delegate?.unregister(task)
            handler.didComplete(data: data, response: response, error: error)
        }
        let handler = TaskHandler(
            request: request, promise: promise, deadline: deadline, transport: self, observation: observation)
        // FoundationNetworking's `cancel()` waits for libcurl's busy queue: off the caller, as a hop's stop.
        let delegateQueue = session.delegateQueue
        let stop: @Sendable () -> Void = { [weak task, weak handler, delegate] in
            handler?.releaseTransport()
            guard let task else { return }
            Self.stopOffTheCaller(sparing: delegateQueue) { Self.cancel(task, through: delegate) }
        }
        slot.withLock { $0 = (handler, task.taskIdentifier) }
        delegate?.register(handler, for: task)
        // A call that ended while its task waited for its turn (timed out, cancelled) never sends it.
        guard armed.attach(stop) else { return stop() }
        task.resume()
    }

    /// Goes on with the plain exchange of `request`, whose task the redirect `response` answered: the core follows
    /// it by its rules (``RedirectRule``), over ``URLSessionHopEngine``, within what is left of `deadline`. Returns
    /// `false` when `response` is the answer (no usable `Location`, a redirect the rules refuse, no delegate).
    func follow(
        _ response: HTTPURLResponse, of request: URLRequest, body: Data, deadline: TransportDeadline?,
        promise: Promise<ConnectResponse>, observation: CallObservation? = nil
    ) -> Bool {
        guard let delegate, var original = try? ConnectRequest(request),
            RedirectRule.next(
                after: original, answeredBy: ConnectResponse(request: request, response: response, data: Data()))
                != nil
        else { return false }
        deadline?.cancel()
        guard !promise.future.isCompleted else { return true }  // cancelled or timed out meanwhile: no hop is sent
        if let deadline { original.timeoutInterval = deadline.time.secondsLeft }
        var engine = URLSessionHopEngine(transport: self, delegate: delegate, isolated: false, bufferLimit: .max)
        engine.extras = original.foundationExtras
        engine.cachePolicy = original.cachePolicy
        let first = EngineResponse(
            head: ResponseHead(response), body: URLSessionHopBody(stream: .finished(with: body)))
        var transfer = TransferOptions()
        transfer.observation = observation
        let followed = EngineExchange(
            engine: engine, request: original, transfer: transfer,
            redirectCookies: delegate.redirectCookies?.redirectCookies() ?? RedirectCookies()
        ).start(after: first)
        promise.setCancelHandler { followed.cancel() }
        followed.observe { promise.completeIfPending(with: $0) }
        return true
    }

    /// Cancels `task` through the transport's delegate, which keeps the cancellation apart from a redirect's
    /// answer (``SessionDelegate/cancel(_:)``); directly on a session the transport does not own.
    private static func cancel(_ task: URLSessionTask?, through delegate: SessionDelegate?) {
        guard let task else { return }
        if let delegate { delegate.cancel(task) } else { task.cancel() }
    }

    /// Completes `promise` with `result`, called on the session's delegate queue: in place (marked as a
    /// ``CompletionContext`` delivery), or for large bodies on a concurrent queue.
    static func complete(
        _ promise: Promise<ConnectResponse>, with result: Result<ConnectResponse, any Error>, bodySize: Int
    ) {
        guard bodySize >= concurrentCompletionThreshold else {
            CompletionContext.deliver { promise.completeIfPending(with: result) }
            return
        }
        DispatchQueue.global().async { promise.completeIfPending(with: result) }
    }

    /// Turns what `URLSession` reported for a plain exchange into a response or a ``ConnectError``: errors are
    /// classified by ``ConnectError/transportFailure(_:request:)``.
    static func result(
        for request: URLRequest,
        data: Data?,
        response: URLResponse?,
        error: (any Error)?
    ) -> Result<ConnectResponse, any Error> {
        if let error { return .failure(ConnectError.transportFailure(.reported(error), request: request)) }
        guard let response = response as? HTTPURLResponse else {
            return .failure(ConnectError.transportFailure(.notHTTP, request: request))
        }
        if let failure = framingError(of: response, request: request) { return .failure(failure) }
        return .success(ConnectResponse(request: request, response: response, data: data ?? Data()))
    }
}

/// The deadline of a plain exchange (URLSession's completion-handler path), armed when its caller sends it: the
/// request's timeout counts from there, also while its task waits for its turn on the transport's submission queue
/// (on Linux every task starts there, behind whatever holds FoundationNetworking's work queue:
/// ``URLSessionTransport/startOffTheCaller(_:)``). When it passes, the call fails with ``ConnectError/Kind/timedOut``
/// and the task, once there is one, is stopped; a task whose call ended before its turn is never resumed.
///
/// Tests: `SubmissionDeadlineTests`, `RequestsFromCallbacksTests`.
final class PlainExchangeDeadline: Sendable {
    /// The timer, `nil` without a usable timeout: the task's handler disarms it when the task ends.
    let timer: TransportDeadline?
    private let promise: Promise<ConnectResponse>
    /// What stops the task, once there is one.
    private let stop = Protected<(@Sendable () -> Void)?>(nil)

    /// Arms the deadline `seconds` from now, and points the caller's cancellation at it.
    init(seconds: TimeInterval, request: URLRequest, promise: Promise<ConnectResponse>) {
        let timer = TransportDeadline(seconds: seconds)
        self.timer = timer
        self.promise = promise
        let stop = stop
        timer?.start {
            let failure = ConnectError.transportFailure(.deadlinePassed(after: seconds), request: request)
            promise.completeIfPending(with: .failure(failure))
            stop.snapshot?()
        }
        promise.setCancelHandler {
            timer?.cancel()
            stop.snapshot?()
        }
    }

    /// Points the deadline and the caller's cancellation at `stop`, which stops the task. Returns whether the task
    /// may be resumed: `false` when the call ended (timed out, cancelled) first.
    func attach(_ stop: @escaping @Sendable () -> Void) -> Bool {
        self.stop.withLock { $0 = stop }
        // After `stop` is in place: a deadline or cancellation that comes after this check finds it.
        return !promise.future.isCompleted
    }
}

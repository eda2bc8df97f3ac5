import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A stage wrapped around the transport: it sees every request on its way out and every response on its
/// way back.
///
/// Middlewares form an onion. With `Connect(middlewares: [a, b])` a request passes `a`, then `b`, then the
/// transport; the response comes back through `b`, then `a`. A middleware can change the request, look at
/// or replace the response, call `next` again to retry, or answer without calling `next` at all.
///
/// ```swift
/// struct APIKeyMiddleware: Middleware {
///     let key: String
///     func intercept(
///         _ request: consuming ConnectRequest,
///         context: RequestContext,
///         next: @escaping Next
///     ) -> Future<ConnectResponse> {
///         request.setValue(key, forHTTPHeaderField: "X-API-Key")
///         return next(request)
///     }
/// }
/// ```
///
/// The request is a ``ConnectRequest``, the core's own model, handed over `consuming`: a middleware may change it
/// in place, as above. A plain `_ request: ConnectRequest` parameter conforms too. A middleware written for
/// `URLRequest` changes only that type: ``ConnectRequest`` has the members it used, under the same names.
///
/// A middleware may ask the client for another attempt with ``RequestContext/retryAdvice``; the client's
/// ``RetryPolicy`` loop is what sends it again, so `next` is best called once per `intercept`.
///
/// Headers a middleware leaves on the request are checked before the transport: a name that is not a token, or
/// a value with CR, LF or NUL, fails the call with ``ConnectError/InvalidRequestReason/invalidHeader(name:)``, on
/// every platform and engine.
///
/// Test one with a closure as `next`: no client or network needed.
public protocol Middleware: Sendable {
    /// The rest of the pipeline: the following middlewares and the transport.
    typealias Next = @Sendable (consuming ConnectRequest) -> Future<ConnectResponse>

    /// Handles one request.
    ///
    /// - Parameters:
    ///   - request: The request so far, owned by the middleware from here on.
    ///   - context: Facts about the call that are not in the request.
    ///   - next: Sends a request through the rest of the pipeline; may be called again to retry, or not at all.
    /// - Returns: A future of the response to hand back to the previous stage.
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    >
}

/// One of the client's own stages that hands the stages after it a context of its own making: the coalescer, whose
/// shared request tells every caller that joined it when it reaches the transport (``RequestContext/sending``). It
/// is the client's machinery, as the retry loop is, and no middleware's power: a middleware (a user's, and the
/// library's own, such as ``ConnectivityMiddleware``) passes the request only, and tells later stages what it
/// decided through what it was built with.
///
/// `MiddlewareChain` calls ``intercept(_:context:passing:)`` instead of ``Middleware/intercept(_:context:next:)``;
/// the latter, called by hand (a test, a wrapper), passes the context on unchanged.
protocol ContextPassingMiddleware: Middleware {
    /// The rest of the pipeline, with the context it is to see.
    typealias PassingNext = @Sendable (consuming ConnectRequest, RequestContext) -> Future<ConnectResponse>

    /// Handles one request, as ``Middleware/intercept(_:context:next:)`` does, handing `next` the context the stages
    /// after it see.
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, passing next: @escaping PassingNext)
        -> Future<ConnectResponse>
}

/// Tells the retry loop when an attempt's request reaches the transport and when the transport has answered it
/// (``RequestContext/sending``): the attempt's own timeout (``RetryPolicy/attemptTimeout``) runs between the two, not
/// while the request waits before the transport nor while a middleware holds the answer (a token refresh after a 401).
struct AttemptSending: Sendable {
    /// Called each time the request reaches the transport; the loop starts the attempt's timer if none runs.
    let reached: @Sendable () -> Void
    /// Called each time the transport has answered (a response or a failure); the loop stops the attempt's timer.
    let answered: @Sendable () -> Void
    /// Called each time the request reaches the transport's door, before the wire check, where its observers hear it
    /// start: a shared request's (coalescing) tells the callers that joined it then, so that they hear the attempt a
    /// call alone would hear, one the wire check refuses included; the retry loop's counts the attempt as made
    /// (``ConnectError/attempts``), and a shared request tells each of its callers' loops. Told whether the request,
    /// as every middleware left it, carries an `Idempotency-Key` (a middleware may add one): the retry loop may replay
    /// such an attempt's request.
    let atDoor: (@Sendable (_ carriesIdempotencyKey: Bool) -> Void)?
    /// Called instead of ``reached`` and ``answered`` when the chain itself hands the request to the transport: starts
    /// that send's own timeout, which stops that send alone with the error it is given (so that a middleware sending
    /// the attempt's request twice, a hedge, has each send timed on its own), and returns what to call when the
    /// transport answers it. `nil`: ``reached`` and ``answered`` are called.
    let sendReached: (@Sendable (_ stop: @escaping @Sendable (ConnectError) -> Void) -> @Sendable () -> Void)?

    init(
        reached: @escaping @Sendable () -> Void, answered: @escaping @Sendable () -> Void,
        atDoor: (@Sendable (_ carriesIdempotencyKey: Bool) -> Void)? = nil,
        sendReached: (@Sendable (_ stop: @escaping @Sendable (ConnectError) -> Void) -> @Sendable () -> Void)? = nil
    ) {
        self.reached = reached
        self.answered = answered
        self.atDoor = atDoor
        self.sendReached = sendReached
    }
}

/// What a middleware knows about a call beyond the ``ConnectRequest`` itself.
public struct RequestContext: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The connector's type name, for logs and metrics (`"TodoConnector"`).
    public var connectorName: String
    /// The connector's and the call's options, merged. Of the client's own options, the values under a
    /// ``RequestOptionKey`` are included (`isRetrySafe`, `cache`, `connectivity`, `requiresAuthentication`,
    /// `acceptsEveryStatus`, `maxRedirects` and your stages' own), where the connector and the call leave them unset.
    public var options: RequestOptions
    /// The call's logger: the one the client's logger gave for this call (``ConnectLogger/forCall()``), asked for once
    /// as the call started, on the caller's side.
    public var logger: any ConnectLogger
    /// Whether the request goes to the client's server: the scheme, host and port of its ``ServerConfiguration``,
    /// or any URL for a client that has none. Credentials that are the server's go only where this is `true`:
    /// the client's server default headers, and what ``AuthenticationMiddleware`` and ``BasicAuthentication`` sign
    /// (unless the request's options say it ``RequestOptions/requiresAuthentication``). A middleware of your own
    /// that adds a secret reads it too, so that a one-off call to another host (a pre-signed upload URL) gets none.
    ///
    /// It says where the request was built to go. A middleware before yours may send it elsewhere by changing its
    /// URL: the built-in signing stages then check the URL they are given again, and sign nothing for another origin.
    /// What was set before that middleware stays on the request as it left it, unlike on a redirect: the server's
    /// default headers, an ``AuthorizedConnector``'s `Authorization`, a field an earlier middleware set, and the
    /// server's default query items in a query it keeps. A middleware that moves requests to another origin removes
    /// what must not go there.
    public var isForServer = true
    /// The client's server URL when the request was built for it (``isForServer``); `nil` for a client without a
    /// ``ServerConfiguration``. The signing stages compare the request's URL with it as they see it. Kept redacted for
    /// reflection (a middleware's `print(context)`): a base URL may carry a key in its query.
    var serverURL: URL? {
        get { shownServerURL?.url }
        set { shownServerURL = newValue.map { ShownURL(url: $0) } }
    }
    private var shownServerURL: ShownURL?
    /// Told when this attempt's request reaches the transport and when the transport answers it, or, when it shares an
    /// identical one (coalescing), when that one does (at once if it is there already): the retry loop's attempt
    /// timeout (``RetryPolicy/attemptTimeout``) runs between the two. `nil` when nobody listens.
    var sending: AttemptSending?
    /// Whether the call this attempt belongs to has ended (its deadline passed, it was cancelled): a request a stage
    /// hands on after that is not sent, and observers hear of no send after the call's end. `nil` outside the client's
    /// retry loop.
    var callHasEnded: (@Sendable () -> Bool)?
    /// Whether a send of this attempt was stopped by the attempt's own timeout (``RetryPolicy/attemptTimeout``): the
    /// usage guide's retry hook (``ConnectMiddlewareProtocol/retry(_:dueTo:attempt:)``) is not asked about it, the
    /// policy decides whether it goes again. `nil` outside the client's retry loop.
    var attemptTimedOut: (@Sendable () -> Bool)?
    /// Whether ``options``' cache rule is the client's own (``Connect/Settings/options``, which every request of the
    /// client gets), the method's, the connector's and the call's options setting none: the ``ResponseCache`` then
    /// caches GET and HEAD only, as under its default rule, so that a rule naming a key does not make a DELETE or a
    /// POST a read of that key, never sent. `false` in a context made by hand.
    var cacheRuleIsClientWide = false
    /// The client's ``ResponseCache``, which runs after every middleware: a ``ConnectivityMiddleware`` asks it offline
    /// whether it would answer the request without the network. `nil` without one, or in a context made by hand.
    var responseCache: ResponseCache?
    /// Uploads from files, downloads to files, size limits and progress for this request.
    var transfer = TransferOptions()
    /// The number of this attempt at the call, 1 for the first; the client's retry loop counts them.
    public var attempt = 1
    /// The most attempts the client's retry loop makes at the call (its policy's ``RetryPolicy/maxAttempts``): a
    /// retry hook is not asked on the last one, when no retry can follow.
    var maxAttempts = Int.max
    /// The call's own body when it is a one-shot stream: the retry loop sends no attempt after one that sent it, so a
    /// stage that would wait to have the request replayed (a token refresh) does not. `nil` outside the loop.
    var callBodyStream: ConnectRequest.OneShotStream?
    /// Where a middleware asks the client to send the request again after this attempt (see ``RetryAdvice``).
    /// The client's retry loop gives each attempt its own; a context made by hand has advice nobody reads, so a
    /// middleware's request for another attempt is tested through a client (its transport a fake) rather than
    /// alone.
    public var retryAdvice = RetryAdvice(unread: ())

    /// Creates a context.
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - connectorName: The connector's name.
    ///   - options: The connector's and call's options.
    ///   - logger: Where to log.
    public init(
        method: HTTPMethod,
        connectorName: String,
        options: RequestOptions = RequestOptions(),
        logger: any ConnectLogger = ConnectLogging.logger
    ) {
        self.method = method
        self.connectorName = connectorName
        self.options = options
        self.logger = logger
    }

    /// Whether the request may be sent again after a failure, as far as its options and method tell: the
    /// ``RequestOptions/isRetrySafe`` of the call, the connector or the client, in that order, or else whether its
    /// method is idempotent. The client's retry loop also replays a request that carries an `Idempotency-Key`
    /// (see ``RetryPolicy``), which this does not look at.
    public var isRetrySafe: Bool { options.isRetrySafe ?? method.isIdempotent }
}

/// A middleware's request for another attempt, read by the client's retry loop when the attempt ends.
///
/// The loop is the only place that sends a request again: a middleware that wants a retry (after refreshing a
/// token, say) says so here before its future completes, and the loop sends the request through the whole
/// pipeline again, within the policy's ``RetryPolicy/maxAttempts`` and the call's deadline. Unlike the policy's
/// own rules, a requested retry does not check that the request is safe to replay: the middleware knows why it
/// asks.
///
/// ```swift
/// struct RetryOnceOn409: Middleware {
///     func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
///         -> Future<ConnectResponse>
///     {
///         next(request).map { response in
///             if response.statusCode == 409, context.attempt == 1 { context.retryAdvice.request(after: 0.2) }
///             return response
///         }
///     }
/// }
/// ```
public struct RetryAdvice: Sendable {
    /// What the loop reads of one attempt, behind a lock: middlewares may ask from any thread. `nil` for advice
    /// nobody reads.
    private let record: Protected<AttemptRecord>?

    /// What one attempt asked for and sent.
    private struct AttemptRecord {
        /// The delay a middleware asked for.
        var delay: TimeInterval?
        /// Every body stream the attempt's sends took so far (read now: the policy does not replay the attempt), one
        /// for each send with a stream: a second send of one (a hedge) would read it again.
        var sentThisAttempt: [ConnectRequest.OneShotStream] = []
        /// The body streams earlier attempts of the call sent: none may be sent again.
        var earlierStreams: [ConnectRequest.OneShotStream]
    }

    /// Creates empty advice (the client makes one for each attempt), knowing the body streams earlier attempts sent.
    init(earlierStreams: [ConnectRequest.OneShotStream] = []) {
        record = Protected(AttemptRecord(earlierStreams: earlierStreams))
    }

    /// Advice nobody reads: what a context starts with until the retry loop gives it its own.
    init(unread: Void) {
        record = nil
    }

    /// Asks for another attempt after `delay` seconds (0 for at once). A later request in the same attempt
    /// replaces an earlier one; a negative delay counts as 0, and one that is not a finite number (infinity, NaN)
    /// asks for no retry, as ``RetryDecision/retryAfter(_:)`` of one does: an overflowed backoff, or a server's
    /// `Retry-After: inf` read with `Double(_:)`, must not turn into an attempt at once.
    ///
    /// - Parameter delay: How long to wait before the next attempt, in seconds.
    public func request(after delay: TimeInterval = 0) {
        let delay = delay.isFinite ? max(0, delay) : nil
        record?.withLock { $0.delay = delay }
    }

    /// The delay a middleware asked for, or `nil` if none asked.
    var requestedDelay: TimeInterval? { record?.withLock { $0.delay } }

    /// Records that the attempt sends a body from `stream`; `false` when an earlier attempt of the call, or an earlier
    /// send of this attempt (a middleware that sends its request twice, a hedge), sent that same stream, which was read
    /// then and must not go out again.
    ///
    /// The retry loop runs outside the middlewares, so it cannot see a stream a middleware set: the chain records
    /// it here as it hands the request to the transport, and the loop reads it when the attempt ends.
    func recordSending(_ stream: ConnectRequest.OneShotStream) -> Bool {
        record?.withLock { record in
            guard !record.earlierStreams.contains(stream), !record.sentThisAttempt.contains(stream) else {
                return false
            }
            record.sentThisAttempt.append(stream)
            return true
        } ?? true
    }

    /// Every body stream the attempt's sends took (a middleware that sent its request again with another stream sent
    /// both): none may go out again.
    var sentStreams: [ConnectRequest.OneShotStream] { record?.withLock { $0.sentThisAttempt } ?? [] }

    /// The error of a send that would send a stream an earlier attempt, or an earlier send of its attempt, read.
    static func alreadySent(_ request: ConnectRequest) -> ConnectError {
        ConnectError(
            .invalidRequest,
            message: "the body is a one-shot stream (an InputStream or an async sequence) an earlier attempt or "
                + "send of this call sent, and it can be read once: set a new stream for each send, or send the body "
                + "from memory or a file",
            request: .sent(request))
    }
}

/// Runs a request through `middlewares` in order, then `transport`.
///
/// The middlewares are the client's array, folded around the transport: the chain does not know what any of
/// them is. Before the transport it checks the headers the middlewares left: a name that is not a token, or a
/// value with CR, LF or NUL, fails the call instead of reaching the wire.
struct MiddlewareChain: Sendable {
    let middlewares: [any Middleware]
    let transport: any Transport
    /// The stages that hand on a context of their own (the coalescer), by index: told apart once, not per request.
    private let passing: [(any ContextPassingMiddleware)?]

    init(middlewares: [any Middleware], transport: any Transport) {
        self.middlewares = middlewares
        self.transport = transport
        passing = middlewares.map { $0 as? any ContextPassingMiddleware }
    }

    func send(_ request: consuming ConnectRequest, context: RequestContext) -> Future<ConnectResponse> {
        send(consume request, context: context, from: 0)
    }

    private func send(_ request: consuming ConnectRequest, context: RequestContext, from index: Int) -> Future<
        ConnectResponse
    > {
        guard index < middlewares.count else {
            // The call ended while a stage held the request (its deadline passed during a slow stage): nothing goes.
            if context.callHasEnded?() == true { return Future(error: ConnectError.cancelled(sent: request)) }
            let observation = context.transfer.observation
            if let observation {
                observation.addingFields(to: &request, attempt: context.attempt)
                observation.recordStart(of: context.attempt, request: request)
            }
            context.sending?.atDoor?(RetryPolicy.hasIdempotencyKey(request))
            // The blanks around a value are not part of it (RFC 9110 §5.5): every transport gets the values without
            // them, whatever an engine would have done with them. A `Content-Type` left blank names none: left out.
            request.headerFields.trimBlanks()
            request.headerFields.removeBlankContentTypes()
            var sent: Future<ConnectResponse>
            if let problem = request.wireProblem(bodyFile: context.transfer.bodyFile) {
                // The request is kept as every stage left it: a method, a field or a length a stage got wrong is
                // refused here, on every platform and engine, as a connector's would have been when it was built.
                sent = Future(error: problem)
            } else if observation != nil, context.callHasEnded?() == true {
                // An observer told of the start cancelled the call: nothing goes to the transport, and the observers
                // hear of the attempt's end as of any other.
                sent = Future(error: ConnectError.cancelled(sent: request))
            } else if case .stream(let stream) = request.body, !context.retryAdvice.recordSending(stream) {
                sent = Future(error: RetryAdvice.alreadySent(request))
            } else {
                if let sendReached = context.sending?.sendReached {
                    let onWire = transport.send(request, transfer: context.transfer)
                    let answered = sendReached { error in onWire.cancel(failingWith: error) }
                    onWire.whenComplete { _ in answered() }
                    sent = onWire
                } else if let sending = context.sending {
                    sending.reached()
                    sent = transport.send(request, transfer: context.transfer)
                    sent.whenComplete { _ in sending.answered() }
                } else {
                    sent = transport.send(request, transfer: context.transfer)
                }
            }
            if let idle = context.transfer.streaming?.idleTimeout {
                Self.boundingHeadWait(of: sent, to: idle, request: request)
            }
            if let observation {
                sent = Self.reportingEnd(
                    of: sent, attempt: context.attempt, to: observation, request: request, transfer: context.transfer)
            }
            guard let streaming = context.transfer.streaming else { return sent }
            if let bodies = context.transfer.streamedBodies {
                // Noted whatever the stages above do with the answer: one the call's end finds nobody reading stops.
                sent.whenComplete { result in
                    if case .success(let response) = result, let body = response.bodyStream { bodies.add(body) }
                }
            }
            return sent.flatMap { response in
                if let idle = streaming.idleTimeout { response.bodyStream?.startIdleTimeout(idle) }
                let whole = context.options.acceptsEveryStatus == true
                return Self.readingErrorBody(
                    of: response, upTo: streaming.errorBodyLimit, whole: whole,
                    within: whole ? nil : streaming.errorExcerptTime)
            }
        }
        if let stage = passing[index] {
            let next: ContextPassingMiddleware.PassingNext = { request, context in
                self.send(consume request, context: context, from: index + 1)
            }
            return stage.intercept(consume request, context: context, passing: next)
        }
        let next: Middleware.Next = { request in self.send(consume request, context: context, from: index + 1) }
        return middlewares[index].intercept(consume request, context: context, next: next)
    }

    /// The longest an error body's excerpt is read on a streamed call (less with a shorter idle timeout).
    static let errorExcerptTime: TimeInterval = 10

    /// Holds the wait for a streamed response's head to the stream's idle timeout (``StreamingOptions/idleTimeout``),
    /// from now, as the transport gets `request`: when no head came within `seconds`, `sent` is cancelled, which stops
    /// the engine's exchange, and fails `.timedOut` with the head's own wording (no byte of the answer came, so a quiet
    /// body's would mislead). Here, once for every transport: an engine's own timers do not all cover the head
    /// (FoundationNetworking waits for ever on a server that accepts the connection and stays silent), and the body's
    /// clock starts only with the head.
    private static func boundingHeadWait(
        of sent: Future<ConnectResponse>, to seconds: TimeInterval, request: ConnectRequest
    ) {
        guard !sent.isCompleted, let deadline = TransportDeadline(seconds: seconds) else { return }
        var error = ResponseBodyStream.headTimeoutError(after: seconds)
        error.storedRequest = .sent(request)
        let timedOut = error
        // Held until the time passes or the head comes (the callback holds the deadline, which is then disarmed): a
        // send whose transport let go of it fails as timed out too, rather than leaving the call waiting.
        deadline.start { sent.cancel(failingWith: timedOut) }
        sent.whenComplete { _ in deadline.cancel() }
    }

    /// Tells `observation` how the attempt `sent` ended: with the response's head, or an error. Returns `sent`'s
    /// outcome once told: every stage above hears of the end after the observers, so that a call cannot end (and
    /// tell its end) before each of its sends has, even when a stage adds its callback on another thread while `sent`
    /// is running its own (a hedge waiting for a send that completed meanwhile).
    private static func reportingEnd(
        of sent: Future<ConnectResponse>, attempt: Int, to observation: CallObservation, request: ConnectRequest,
        transfer: TransferOptions
    ) -> Future<ConnectResponse> {
        let told = sent.passingThrough()
        sent.whenCompleteReturningWork { result in
            recordEnd(of: attempt, with: result, to: observation, request: request, transfer: transfer)
            return told.resolve(result)
        }.run()
        return told
    }

    /// Tells `observation` that a send of `attempt`, of `request` with `transfer`, ended with `result`: with the
    /// response's status and body sizes, or the error. Also told for a caller that shares an identical request
    /// (``RequestCoalescer``), when that one ends.
    static func recordEnd(
        of attempt: Int, with result: Result<ConnectResponse, any Error>, to observation: CallObservation,
        request: ConnectRequest, transfer: TransferOptions
    ) {
        let bytesSent: Int64?
        switch request.body {
        case .none: bytesSent = transfer.bodyFile == nil ? 0 : nil
        case .bytes(let data): bytesSent = Int64(data.count)
        // A stream of known length is held to it (a shorter or longer one fails the call); one of unknown length
        // is counted by the engine only.
        case .stream(let stream): bytesSent = stream.length
        }
        switch result {
        case .success(let response):
            // A body that came content-encoded (gzip) was decoded on its way: its size on the wire, which
            // OpenTelemetry's body-size metric counts, is not known here.
            let encoded = response.head.headerFields[HeaderField.Name("Content-Encoding")].map {
                $0.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
            }
            let received =
                response.bodyStream == nil && transfer.destination == nil && encoded != true
                ? Int64(response.data.count) : nil
            observation.recordEnd(
                of: attempt, status: response.statusCode, error: nil, bytesSent: bytesSent, bytesReceived: received)
        case .failure(let error):
            let failure = error as? ConnectError ?? ConnectError.transportFailure(.reported(error), sent: request)
            // No connection, no name, no TLS session, a request refused before the wire: no byte of the body went.
            let sent = failure.kind.isBeforeTheRequestWasSent ? nil : bytesSent
            observation.recordEnd(of: attempt, status: nil, error: failure, bytesSent: sent)
        }
    }

    /// A streamed response as every stage expects an error response: for a status outside 200..<300, the body
    /// read into ``ConnectResponse/data`` (up to `limit` bytes, for the error handler, a token refresh, the retry
    /// policy) and the stream closed. A success keeps its stream for the caller.
    ///
    /// With `whole` (the call accepts every status, ``RequestOptions/acceptsEveryStatus``), the body is the
    /// caller's answer, not an excerpt: one longer than `limit` fails with ``ConnectError/Kind/responseTooLarge``,
    /// and one that breaks fails with its error, instead of being cut short.
    ///
    /// An excerpt is read for `seconds` at most: a body that trickles under the limit (a proxy's `: ping` every few
    /// seconds) resets the idle timeout with each piece, and would hold the call for as long as it keeps coming. The
    /// excerpt is then what came.
    static func readingErrorBody(
        of response: ConnectResponse, upTo limit: Int, whole: Bool = false, within seconds: TimeInterval? = nil
    ) -> Future<ConnectResponse> {
        guard let stream = response.bodyStream else { return Future(value: response) }
        guard !response.isSuccess else { return Future(value: response) }
        let promise = Promise<ConnectResponse>()
        let timeUp = Protected(false)
        let excerptDeadline = seconds.flatMap { TransportDeadline(seconds: $0) }
        excerptDeadline?.start {
            timeUp.withLock { $0 = true }
            stream.cancel()
        }
        let reading = Task {
            defer { excerptDeadline?.cancel() }
            var body = Data()
            // Why the excerpt is not the whole body, for an error handler that accepts the status (``Exchange``).
            var cut: (any Error)?
            do {
                while let chunk = try await stream.next() {
                    if body.count + chunk.count > limit {
                        let tooLarge = ConnectError.responseTooLarge(limit: limit, answer: response)
                        if whole {
                            stream.cancel()
                            promise.completeIfPending(with: .failure(tooLarge))
                            return
                        }
                        body.append(chunk.prefix(limit - body.count))
                        cut = tooLarge
                        break
                    }
                    body.append(chunk)
                }
            } catch {
                // An excerpt for the error handler: what arrived before the failure will do. An answer will not.
                if whole {
                    promise.completeIfPending(with: .failure(error))
                    return
                }
                cut = error
            }
            stream.cancel()
            if let seconds, timeUp.withLock({ $0 }) {
                cut = ConnectError(
                    .timedOut,
                    message: "the \(response.statusCode) answer's body was still arriving after \(seconds) s, the "
                        + "longest its excerpt is read for the error handler: part of a body is no answer",
                    request: response.storedRequest, head: response.storedHead)
            }
            var answer = response
            answer.bodyStream = nil
            answer.bodyCut = cut
            answer.data = body
            promise.completeIfPending(with: .success(answer))
        }
        promise.setCancelHandler {
            reading.cancel()
            stream.cancel()
        }
        return promise.future
    }
}

extension Future where Value == ConnectResponse {
    /// Cancels this future as `stopped`, the future of a stage of its own (the queue's, the coalescer's), was: failing
    /// with the error `stopped` failed with when that is not a cancellation (the call's deadline, the attempt's own
    /// timeout: ``RetryingCall`` stops an attempt so), else as ``cancel()`` does. The stages after it, the plugins
    /// among them, hear that the attempt timed out, as they do without such a stage.
    func cancel(as stopped: Future<ConnectResponse>?) {
        guard case .failure(let error)? = stopped?.result, (error as? ConnectError)?.isCancelled != true,
            (error as? URLError)?.code != .cancelled, !(error is FutureError)
        else { return cancel() }
        cancel(failingWith: error)
    }
}

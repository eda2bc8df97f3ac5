import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When and how often a failed request is sent again.
///
/// `Connect()` applies ``default`` to every request; pass another policy, or `nil` (the same as ``none``; a bare
/// `.none` there is `Optional.none`, which the compiler warns about) for no retries of the policy's own:
///
/// ```swift
/// let connect = Connect(retryPolicy: RetryPolicy(maxAttempts: 4, baseDelay: 1))
/// let noRetries = Connect(retryPolicy: nil)  // as RetryPolicy.none: a token refresh may still replay a request
/// let once = Connect(retryPolicy: RetryPolicy(maxAttempts: 1))  // one attempt, whatever a middleware asks
/// ```
///
/// The policy is applied by the client's retry loop, the only place a request is sent again. That loop also
/// honours a middleware's request for another attempt (``RequestContext/retryAdvice``, which
/// ``ConnectMiddlewareProtocol/retry(_:dueTo:attempt:)`` and ``AuthenticationMiddleware`` use), within the same
/// ``maxAttempts``: no configuration sends a request more often than that.
///
/// ## Which requests are replayed
/// Only a request that is safe to send twice: its method is idempotent (`GET`, `HEAD`, `PUT`, `DELETE`,
/// `OPTIONS`, `TRACE`), the connector or call marked it `RequestOptions(isRetrySafe: true)`, or it carries an
/// `Idempotency-Key` header (one left empty or blank names no key, and counts as none), the call's own or one a
/// middleware gave the attempt's request on its way to the transport. With ``addsIdempotencyKey``
/// on (and more than one attempt allowed), every `POST` and `PATCH` without a key gets one (a UUID, the same on
/// every attempt), which makes it replayable. Any other `POST` is sent exactly once, even after a failure that
/// seems to say nothing was sent (a connection refused, a name that did not resolve): the hop that failed may be
/// one a redirect led to after the server had the request, or, through URLSession on Linux, a new connection
/// libcurl opened by itself to send the request again after the server read it on a kept-alive one and closed
/// that. An explicit `isRetrySafe` (of
/// the connector, the call or the client) always wins over the method and the header: `false` keeps even an
/// idempotent or keyed request from being retried by the policy. A middleware that asks for another attempt (a
/// token refresh) still gets it: it knows why it asks. The method that counts is the connector's: the loop runs
/// outside every middleware.
///
/// ## Which failures are retried
/// - A response whose status is in ``retryableStatusCodes`` (by default 408, 429, 500, 502, 503 and 504),
///   unless the client's ``ErrorHandling`` accepts it (returns `nil` for it): an accepted response is an
///   answer, and is not retried.
/// - A failure whose ``ConnectError/kind`` is in ``retryableFailures``: by default a timeout, a connection that
///   could not be opened or was lost, a name that did not resolve, a failed TLS handshake and a malformed answer,
///   on every engine alike (a `URLError` of a transport of yours is classified the same way).
/// - Never a cancellation: neither a ``ConnectError/Kind/cancelled`` failure nor a request whose future was
///   cancelled. Cancelling the future cancels the attempt in flight and any wait before the next one.
///
/// ## How long it waits
/// Before retry *n* (1 for the first retry) the policy waits `baseDelay × multiplier^(n−1)`, capped at
/// ``maxDelay``, with **equal jitter**: a random delay between half that value and that value, so clients
/// that failed together spread out while still backing off. When a retryable response carries `Retry-After`
/// (a number of seconds, or an HTTP-date in any of its three RFC 9110 forms) and ``honorsRetryAfter`` is on,
/// the policy waits that long instead, a date measured from the response's `Date` (the server's clock) when it has
/// one; a date in the past means no wait. A server that asks for a longer wait than
/// ``maxRetryAfter`` is not retried: the response stands at once (its `Retry-After` is in the error's headers), as
/// OkHttp does, since an early retry would only meet the same limit again. A value that is neither (a negative
/// number, garbage) is ignored: the backoff applies.
///
/// The call's deadline (the connector's `timeout`) bounds everything: a wait that would end after it is not
/// started, and the call ends with the last outcome.
///
/// ## When it gives up
/// After ``maxAttempts`` attempts in all (the first included), the last outcome stands: the last response, so
/// the error handler reports the server's real status and message, or the last transport error. A
/// ``ConnectError`` that a request retried ends with says how many attempts were made: ``ConnectError/attempts``,
/// and a description ending with "(after 3 attempts)".
///
/// ## Testing
/// Inject a ``RetryClock``: `SwiftConnectTesting`'s `ImmediateRetryClock` records every delay and runs the
/// next attempt at once, and a fixed ``jitter`` makes the delays exact:
///
/// ```swift
/// let clock = ImmediateRetryClock()
/// let connect = Connect(transport: fake, retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
/// // … send a request the fake answers with 503, 503, 200 …
/// XCTAssertEqual(clock.delays, [0.5, 1.0])
/// ```
public struct RetryPolicy: Sendable {
    /// How many times a request is sent at most, the first attempt included. Values below 1 count as 1.
    public var maxAttempts: Int
    /// The wait before the first retry, in seconds, before jitter. A value that is not a positive number (0, below 0,
    /// NaN) means no backoff wait; an infinite one waits ``maxDelay``.
    public var baseDelay: TimeInterval
    /// The factor the wait grows by after each retry. A value below 0 or not a number counts as 1: the same wait
    /// each time.
    public var multiplier: Double
    /// The longest wait between two attempts computed by backoff, in seconds (`Retry-After` has its own cap). A value
    /// below 0 counts as 0, and one that is not a number means no wait, as a ``baseDelay`` that is not a positive
    /// number does.
    public var maxDelay: TimeInterval
    /// Picks the actual delay within a range: given `(delay / 2)...delay`, returns a value in it.
    ///
    /// Defaults to ``randomJitter``; ``noJitter`` (or any fixed choice) makes delays predictable in tests.
    public var jitter: @Sendable (ClosedRange<Double>) -> Double
    /// The response statuses that are retried, unless the client's error handler accepts them. A 2xx is an answer
    /// and never retried, listed or not (poll a `202 Accepted` with a call of its own, or a middleware that asks for
    /// another attempt: ``RetryAdvice``).
    public var retryableStatusCodes: Set<Int>
    /// The kinds of failure that are retried (``defaultRetryableFailures`` by default). ``ConnectError/Kind/cancelled``
    /// is never retried, whatever this set holds, and neither is the ``ConnectError/Kind/timedOut`` of
    /// ``Future/timeout(after:on:)``, which says nothing about the network.
    ///
    /// ```swift
    /// var policy = RetryPolicy()
    /// policy.retryableFailures.remove(.nameResolution)  // a name that does not resolve fails at once
    /// ```
    public var retryableFailures: Set<ConnectError.Kind>
    /// Whether a `Retry-After` header on a retryable response replaces the backoff delay.
    public var honorsRetryAfter: Bool
    /// The longest `Retry-After` wait the policy accepts, in seconds: a response asking for longer is not retried,
    /// and the call ends with it at once. A value below 0 or not a number counts as 0: only a `Retry-After` of no
    /// wait (0, or a date already past) is retried.
    public var maxRetryAfter: TimeInterval
    /// Whether a `POST` or `PATCH` without an `Idempotency-Key` header (or with an empty or blank one) gets one (a
    /// UUID, the same on every attempt), making it safe to replay. Only when ``maxAttempts`` is above 1: a request
    /// sent once needs none. The server must support the header for this to mean anything.
    public var addsIdempotencyKey: Bool
    /// The longest one attempt may take, in seconds, before it is abandoned (its connection closed) and, when the
    /// request is safe to send again, sent again on a new connection; `nil` (the default) lets each attempt use what
    /// is left of the call's deadline. A value that is not a positive number means none too.
    ///
    /// A connection can die without a word: a NAT or a firewall on the way forgets it, the server's host goes away.
    /// A request sent on such a connection, which the client keeps open for the next request, waits for an answer
    /// that never comes, until the call's deadline (the connector's `timeout`) ends the call with
    /// ``ConnectError/Kind/timedOut``. With an attempt timeout, a `GET` sent on it is abandoned after
    /// `attemptTimeout` seconds and sent again on a new connection, within the same deadline, as Envoy's per-try
    /// timeout and gRPC's per-attempt timeout do:
    ///
    /// ```swift
    /// var policy = RetryPolicy()
    /// policy.attemptTimeout = 10  // a call of 60 s can make several attempts
    /// let connect = Connect(retryPolicy: policy)
    /// ```
    ///
    /// The time counts while the attempt's request is at the transport: from when it reaches it (or joins an
    /// identical request already there; an attempt that joins one still on its way counts from when that one reaches
    /// it) until the transport answers. A wait in the ``RequestQueue``, offline in a ``ConnectivityMiddleware``, or
    /// for a token refresh before the request goes or after its 401 does not count. It counts the whole exchange, its
    /// response body included (for ``Connect/stream(_:options:streaming:)``, until the response's head arrives): set
    /// it above the time your largest response takes to arrive. A retry never joins an identical request in flight:
    /// the one its attempt gave up on may be it. An abandoned
    /// attempt is a ``ConnectError/Kind/timedOut`` failure, retried like a timeout (when ``retryableFailures`` has
    /// it); for a request that is not safe to replay it ends the call. `NetworkFaultTests` shows it with a pooled
    /// connection whose packets the network drops.
    public var attemptTimeout: TimeInterval?
    /// What the policy waits with; ``DispatchRetryClock`` by default.
    public var clock: any RetryClock

    /// The default policy: 3 attempts, 0.5 s base delay doubling up to 30 s with equal jitter, the default
    /// statuses and failures, `Retry-After` honoured up to 60 s, no idempotency keys added.
    public static let `default` = RetryPolicy()

    /// A policy that retries nothing by itself (no status or transport error is retryable), what
    /// `Connect(retryPolicy: nil)` applies too; a middleware may still ask for another attempt (a token refresh
    /// does), up to three in all. For exactly one attempt whatever a middleware asks, use
    /// `RetryPolicy(maxAttempts: 1)`.
    public static let none = RetryPolicy(retryableStatusCodes: [], retryableFailures: [])

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maxAttempts: Attempts in all, the first included. Defaults to 3.
    ///   - baseDelay: The wait before the first retry, in seconds. Defaults to 0.5.
    ///   - multiplier: The factor the wait grows by after each retry. Defaults to 2.
    ///   - maxDelay: The cap on a backoff wait, in seconds. Defaults to 30.
    ///   - jitter: Picks the delay within `(delay / 2)...delay`. Defaults to ``randomJitter``.
    ///   - retryableStatusCodes: The statuses retried. Defaults to ``defaultRetryableStatusCodes``.
    ///   - retryableFailures: The kinds of failure retried. Defaults to ``defaultRetryableFailures``.
    ///   - honorsRetryAfter: Whether `Retry-After` replaces the backoff delay. Defaults to `true`.
    ///   - maxRetryAfter: The longest `Retry-After` wait accepted, in seconds; a response asking for longer is not
    ///     retried. Defaults to 60.
    ///   - addsIdempotencyKey: Whether `POST` and `PATCH` get an `Idempotency-Key`. Defaults to `false`.
    ///   - attemptTimeout: The longest one attempt may take, in seconds. Defaults to `nil`: none.
    ///   - clock: What the policy waits with. Defaults to a ``DispatchRetryClock``.
    public init(
        maxAttempts: Int = 3,
        baseDelay: TimeInterval = 0.5,
        multiplier: Double = 2,
        maxDelay: TimeInterval = 30,
        jitter: @escaping @Sendable (ClosedRange<Double>) -> Double = RetryPolicy.randomJitter,
        retryableStatusCodes: Set<Int> = RetryPolicy.defaultRetryableStatusCodes,
        retryableFailures: Set<ConnectError.Kind> = RetryPolicy.defaultRetryableFailures,
        honorsRetryAfter: Bool = true,
        maxRetryAfter: TimeInterval = 60,
        addsIdempotencyKey: Bool = false,
        attemptTimeout: TimeInterval? = nil,
        clock: any RetryClock = DispatchRetryClock()
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableFailures = retryableFailures
        self.honorsRetryAfter = honorsRetryAfter
        self.maxRetryAfter = maxRetryAfter
        self.addsIdempotencyKey = addsIdempotencyKey
        self.attemptTimeout = attemptTimeout
        self.clock = clock
    }

    /// ``attemptTimeout`` when it is a positive, finite number of seconds.
    var usableAttemptTimeout: TimeInterval? {
        guard let attemptTimeout, attemptTimeout > 0, attemptTimeout.isFinite else { return nil }
        return attemptTimeout
    }
}

// MARK: - Defaults

extension RetryPolicy {
    /// A random delay in the range: the default ``jitter``.
    public static let randomJitter: @Sendable (ClosedRange<Double>) -> Double = { range in
        Double.random(in: range)
    }

    /// Always the top of the range: plain exponential backoff, for predictable delays in tests.
    public static let noJitter: @Sendable (ClosedRange<Double>) -> Double = { range in
        range.upperBound
    }

    /// The statuses retried by default: the server says the failure is temporary.
    public static let defaultRetryableStatusCodes: Set<Int> = [
        408,  // Request Timeout: the server gave up waiting for the request; a new connection may do better.
        429,  // Too Many Requests: rate limited; waiting (usually as `Retry-After` says) lifts it.
        500,  // Internal Server Error: often a transient fault on one instance behind a load balancer.
        502,  // Bad Gateway: the upstream was restarting or unreachable from the proxy.
        503,  // Service Unavailable: overloaded or in maintenance, temporarily by definition.
        504,  // Gateway Timeout: the upstream was slow this time.
    ]

    /// The kinds of failure retried by default: conditions that commonly clear within seconds.
    public static let defaultRetryableFailures: Set<ConnectError.Kind> = [
        // No complete response within the timeout: congestion or a briefly overloaded server; the next attempt
        // often gets through, and the call's deadline (the connector's timeout) still bounds all attempts together.
        .timedOut,
        // The connection dropped mid-exchange, typically a kept-alive connection the server had already closed;
        // a fresh connection usually works at once.
        .connectionLost,
        // Nothing accepted the connection (a server restarting, a load balancer rotating instances), or the
        // device is offline right now: Wi-Fi and cellular hand-overs come back within seconds.
        .cannotConnect,
        // The resolver failed or the name did not resolve, often a hiccup during a network change (a real typo
        // just fails a bounded number of times, quickly).
        .nameResolution,
        // The TLS handshake failed without a reason about the certificate, usually a reset mid-handshake.
        .secureConnection,
        // The response was malformed or cut short, typically by a proxy or a connection reset; a new exchange
        // can succeed. (The request is replayed only if it is safe to replay.)
        .badResponse,
        // Not retried, among others: `.cancelled` (the caller's decision), `.untrustedCertificate` (retrying does
        // not make a certificate valid), `.transport` (a failure no finer kind names: a body that cannot be
        // decoded, a missing file), and every kind that is not about the network.
    ]

    /// The header that makes a non-idempotent request safe to replay.
    static let idempotencyKeyHeader = "Idempotency-Key"
}

// MARK: - Decisions

extension RetryPolicy {
    /// Whether `request` may be sent more than once by the policy's own rules.
    ///
    /// - Parameters:
    ///   - request: The request, with any idempotency key already added.
    ///   - context: The call's context, which knows the connector's method and the `isRetrySafe` option.
    /// - Returns: The call's explicit ``RequestOptions/isRetrySafe`` when it has one; otherwise `true` for
    ///   idempotent methods and requests with an `Idempotency-Key`.
    static func isReplayable(_ request: ConnectRequest, context: RequestContext) -> Bool {
        // An explicit choice of the connector, the call or the client wins, an `Idempotency-Key` included.
        if let isRetrySafe = context.options.isRetrySafe { return isRetrySafe }
        return context.method.isIdempotent || hasIdempotencyKey(request)
    }

    /// Whether `request` carries an `Idempotency-Key` that names a key. A field that is empty or blanks only names
    /// none (it goes on the wire empty): a server cannot tell two sends of the request apart by it, so it makes
    /// nothing safe to replay, and the policy's ``addsIdempotencyKey`` replaces it.
    static func hasIdempotencyKey(_ request: ConnectRequest) -> Bool {
        guard let value = request.value(forHTTPHeaderField: idempotencyKeyHeader) else { return false }
        return !value.utf8.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
    }

    /// Whether ``addingIdempotencyKeyIfNeeded(to:method:)`` adds a key to `request`.
    func needsIdempotencyKey(_ request: ConnectRequest, method: HTTPMethod) -> Bool {
        addsIdempotencyKey && (method == .post || method == .patch) && !RetryPolicy.hasIdempotencyKey(request)
    }

    /// `request` with an `Idempotency-Key` added if the policy asks for one and the request needs one.
    func addingIdempotencyKeyIfNeeded(to request: ConnectRequest, method: HTTPMethod) -> ConnectRequest {
        guard needsIdempotencyKey(request, method: method) else { return request }
        var request = request
        request.setValue(UUID().uuidString, forHTTPHeaderField: RetryPolicy.idempotencyKeyHeader)
        return request
    }

    /// How long to wait before the next attempt, or `nil` not to retry.
    ///
    /// - Parameters:
    ///   - result: The outcome of the attempt that just ended.
    ///   - attempt: That attempt's number, 1 for the first.
    /// - Returns: The delay in seconds, or `nil` when the outcome is not retryable. Attempt limits and
    ///   cancellation are the caller's business.
    func retryDelay(after result: Result<ConnectResponse, any Error>, attempt: Int) -> TimeInterval? {
        switch result {
        case .success(let response):
            guard retryableStatusCodes.contains(response.statusCode) else { return nil }
            if honorsRetryAfter, let value = response.header("Retry-After"),
                let wait = RetryAfter.longestDelay(from: value, now: clock.now, responseDate: response.header("Date"))
            {
                // Retrying sooner than the server asked only meets the same limit again: give the answer back now.
                return wait <= max(0, maxRetryAfter) ? wait : nil
            }
            return backoffDelay(afterAttempt: attempt)
        case .failure(let error):
            return isRetryable(error) ? backoffDelay(afterAttempt: attempt) : nil
        }
    }

    /// Whether a failure is worth another attempt: its kind is in ``retryableFailures``.
    func isRetryable(_ error: any Error) -> Bool {
        let kind: ConnectError.Kind
        if let error = error as? ConnectError {
            // The timeout of `Future.timeout(after:)`: nothing failed on the network. (A transport's own timeout, with
            // no engine error beneath it, is a timeout like any other.)
            if error.kind == .timedOut, error.isFutureTimeout { return false }
            // A transport of yours that reports `.transport` with a `URLError` is judged by the error's code.
            if error.kind == .transport, let urlError = error.urlError {
                kind = ConnectError.Kind(urlError.code)
            } else {
                kind = error.kind
            }
        } else if let error = error as? URLError {
            kind = ConnectError.Kind(error.code)
        } else {
            return false
        }
        return kind != .cancelled && retryableFailures.contains(kind)
    }

    /// The backoff wait after attempt number `attempt` failed: exponential, capped, with equal jitter.
    func backoffDelay(afterAttempt attempt: Int) -> TimeInterval {
        // No base delay is no delay, however many attempts (0 times an overflowed power would be NaN); no more is a
        // cap that is not a number.
        guard baseDelay > 0, !maxDelay.isNaN else { return 0 }
        // A factor below 0 would flip the wait's sign each retry (none, then a long one), and NaN would skip to the
        // cap: either counts as 1, the base delay each time.
        let factor = multiplier >= 0 ? multiplier : 1
        let growth = baseDelay * pow(factor, Double(max(0, attempt - 1)))
        let ceiling = max(0, growth.isFinite ? min(growth, maxDelay) : maxDelay)
        // An uncapped policy (`maxDelay: .infinity`) whose growth overflowed: no finite range to jitter over.
        guard ceiling.isFinite else { return .greatestFiniteMagnitude }
        let picked = jitter((ceiling / 2)...ceiling)
        // A jitter source that strays out of its range is brought back into it.
        return picked.isFinite ? min(max(picked, ceiling / 2), ceiling) : ceiling
    }
}

// MARK: - Before failure kinds

extension RetryPolicy {
    /// The `URLError` codes of the failures the policy retries: those whose kind is in ``retryableFailures``.
    /// Setting it sets ``retryableFailures`` to the kinds of the codes given.
    @available(*, deprecated, message: "Use retryableFailures: the same rule on every engine, by ConnectError.Kind")
    public var retryableURLErrorCodes: Set<URLError.Code> {
        get { Set(RetryPolicy.classifiedURLErrorCodes.filter { retryableFailures.contains(ConnectError.Kind($0)) }) }
        set { retryableFailures = Set(newValue.map(ConnectError.Kind.init)).subtracting([.cancelled]) }
    }

    /// The `URLError` codes of ``defaultRetryableFailures``.
    @available(*, deprecated, message: "Use defaultRetryableFailures")
    public static var defaultRetryableURLErrorCodes: Set<URLError.Code> {
        Set(classifiedURLErrorCodes.filter { defaultRetryableFailures.contains(ConnectError.Kind($0)) })
    }

    /// Creates a policy that retries the failures of the kinds `retryableURLErrorCodes` name.
    @available(*, deprecated, message: "Use init(retryableFailures:): failures are retried by ConnectError.Kind")
    public init(
        maxAttempts: Int = 3,
        baseDelay: TimeInterval = 0.5,
        multiplier: Double = 2,
        maxDelay: TimeInterval = 30,
        jitter: @escaping @Sendable (ClosedRange<Double>) -> Double = RetryPolicy.randomJitter,
        retryableStatusCodes: Set<Int> = RetryPolicy.defaultRetryableStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code>,
        honorsRetryAfter: Bool = true,
        maxRetryAfter: TimeInterval = 60,
        addsIdempotencyKey: Bool = false,
        attemptTimeout: TimeInterval? = nil,
        clock: any RetryClock = DispatchRetryClock()
    ) {
        self.init(
            maxAttempts: maxAttempts, baseDelay: baseDelay, multiplier: multiplier, maxDelay: maxDelay,
            jitter: jitter, retryableStatusCodes: retryableStatusCodes,
            retryableFailures: Set(retryableURLErrorCodes.map(ConnectError.Kind.init)).subtracting([.cancelled]),
            honorsRetryAfter: honorsRetryAfter, maxRetryAfter: maxRetryAfter, addsIdempotencyKey: addsIdempotencyKey,
            attemptTimeout: attemptTimeout, clock: clock)
    }

    /// The codes ``ConnectError/Kind/init(_:)`` classifies into a kind of their own.
    static let classifiedURLErrorCodes: [URLError.Code] = [
        .timedOut, .cannotConnectToHost, .notConnectedToInternet, .internationalRoamingOff, .callIsActive,
        .dataNotAllowed, .cannotFindHost, .dnsLookupFailed, .networkConnectionLost, .secureConnectionFailed,
        .clientCertificateRejected, .clientCertificateRequired, .serverCertificateUntrusted,
        .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
        .badServerResponse, .cannotParseResponse, .zeroByteResource,
    ]
}

/// The retry loop's option: whether the policy may replay a request (``RequestOptions/isRetrySafe``).
enum RetrySafety: RequestOptionKey {
    typealias Value = Bool
}

import Foundation

/// What can be added to requests at three levels: the client, a connector and a single call.
///
/// The levels combine in a fixed order, client first, then the client's options for the request's method
/// (``Connect/Settings/methodOptions``), then connector, then call:
/// - **middlewares**: client middlewares wrap the method's, which wrap connector middlewares, which wrap call
///   middlewares, which wrap the transport. A request passes them in that order; the response comes back in reverse.
/// - **plugins** are told about each attempt in that order.
/// - **validators** check a successful response in that order; the first that throws fails the request.
/// - **processors** transform the body in that order, each seeing the previous one's output, before decoding.
/// - **isRetrySafe**, **cache**, **timeout**, **idleTimeout**, **maxResponseBytes**, **maxRedirects**, **progress**
///   and **connectivity**: the most
///   specific level that sets them wins (call, then connector, then the client's defaults for the request's
///   method, ``Connect/Settings/methodOptions``, then client).
/// - **headers**: by name, the most specific level wins, in the same order; a connector's own ``Connector/headers``
///   rank with the connector's options.
/// - **values of your own stages**, under a ``RequestOptionKey``: the most specific level wins, unless the key
///   combines them (``RequestOptionKey/combine(_:_:)``). The built-in stages carry theirs the same way: `cache`,
///   `connectivity` and `isRetrySafe` are keys of the stages that read them.
///
/// ```swift
/// connect.request(
///     TodoConnector.get(id: 1),
///     options: RequestOptions(plugins: [activityIndicator], cache: CacheRule(timeToLive: 60))
/// )
/// ```
public struct RequestOptions: Sendable {
    /// Middlewares wrapped around the transport for these requests.
    public var middlewares: [any Middleware] {
        get { storage.values.middlewares }
        set { update { $0.middlewares = newValue } }
    }
    /// Observers told when a request is sent, answered or fails.
    public var plugins: [any ConnectPlugin] {
        get { storage.values.plugins }
        set { update { $0.plugins = newValue } }
    }
    /// Checks a successful response must pass.
    public var validators: [any ResponseValidator] {
        get { storage.values.validators }
        set { update { $0.validators = newValue } }
    }
    /// Transformations of the response before decoding.
    public var processors: [any ResponseProcessor] {
        get { storage.values.processors }
        set { update { $0.processors = newValue } }
    }
    /// Whether the retry policy may replay the request: `true` lets it replay a `POST` or `PATCH`, `false`
    /// stops it replaying any request, an idempotent or `Idempotency-Key`ed one included; `nil` leaves it
    /// to the method and the `Idempotency-Key` header. A middleware that asks for another attempt (a token
    /// refresh) still gets it.
    public var isRetrySafe: Bool? {
        get { self[RetrySafety.self] }
        set { self[RetrySafety.self] = newValue }
    }
    /// How a ``ResponseCache`` middleware treats the request; `nil` leaves it uncached. Set in a client's own options
    /// (``Connect/Settings/options``), it caches GET and HEAD requests only (see ``CacheRule``).
    public var cache: CacheRule? {
        get { self[CacheRuleOption.self] }
        set { self[CacheRuleOption.self] = newValue }
    }
    /// The most response-body bytes accepted; more fails with ``ConnectError/Kind/responseTooLarge``, and the rest
    /// of the body is not kept (on Linux it may still be read and dropped: ``TransferOptions/maxResponseBytes``).
    /// A resumed download (``Connect/download(_:to:resuming:debugResponse:options:)``) counts its part with the rest:
    /// the limit bounds the whole file, however many times it was resumed.
    /// Overrides the client's limit; `nil` keeps it. A negative limit fails the call with
    /// ``ConnectError/Kind/invalidRequest``, nothing sent.
    public var maxResponseBytes: Int? {
        get { storage.values.maxResponseBytes }
        set { update { $0.maxResponseBytes = newValue } }
    }
    /// The most redirects a request follows. `0` follows none: the redirect (a 301, 302, 303, 307 or 308) is the
    /// answer, which the error handler reports as any status outside 200..<300 (``acceptsEveryStatus`` hands it to
    /// you, its `Location` header included); one more redirect than the limit fails with
    /// ``ConnectError/Kind/transport``. `nil` leaves it to the level above, and at the top to SwiftConnect's 20. A
    /// negative value fails the call with ``ConnectError/Kind/invalidRequest``, nothing sent.
    ///
    /// What JustAPIs' `followRedirects = false`, Alamofire's `Redirector.doNotFollow` and AsyncHTTPClient's
    /// `redirectConfiguration: .disallow` are:
    ///
    /// ```swift
    /// var options = RequestOptions(acceptsEveryStatus: true)
    /// options.maxRedirects = 0
    /// let link = Route("/s/x7", baseURL: URL(string: "https://sho.rt")!)
    /// let response = try await connect.response(for: link, options: options).value
    /// let target = response.header("Location")
    /// ```
    ///
    /// Followed by the core's exchange, for ``URLSessionTransport`` over its own session and for every engine
    /// (`AsyncHTTPClientTransport`); a ``Transport`` of your own, or one over an app's `URLSession`, follows
    /// redirects its own way.
    public var maxRedirects: Int? {
        get { self[RedirectLimit.self] }
        set { self[RedirectLimit.self] = newValue }
    }
    /// What the request does while a ``ConnectivityMiddleware``'s monitor reports the network gone; `nil` leaves
    /// it to the level above (the connector's, then the client's settings), and at the top to the middleware's
    /// own policy.
    public var connectivity: ConnectivityPolicy? {
        get { self[ConnectivityPolicyOption.self] }
        set { self[ConnectivityPolicyOption.self] = newValue }
    }

    /// Whether the client's authentication stages (``AuthenticationMiddleware``, ``BasicAuthentication``) sign
    /// these requests: `false` sends them as they are, unsigned, and a 401 answer is not refreshed; `true` signs
    /// them; `nil` signs those that go to the client's server (``RequestContext/isForServer``), every request of a
    /// client without a ``ServerConfiguration``. What Remotli's `requiresAuth` was, per route:
    ///
    /// ```swift
    /// Route("/v1/tokens", method: .post, options: RequestOptions(requiresAuthentication: false))
    /// ```
    ///
    /// A connector's own ``AuthorizedConnector/authorizationToken`` is still sent: it is the connector's choice.
    public var requiresAuthentication: Bool? {
        get { self[AuthenticationRequirement.self] }
        set { self[AuthenticationRequirement.self] = newValue }
    }

    /// Whether a response of any status is the answer of these requests: `true` hands a status outside 200..<300
    /// to the caller as it came, its whole body read, instead of the error handler's error; validators and response
    /// processors then see only 2xx responses. `nil` or `false` leaves error statuses to the ``ErrorHandling`` handler.
    /// A status is three digits, 100 to 999 (600 to 999 included, as AsyncHTTPClient hands them over): a response with
    /// another (0 from a transport of your own) is no answer but ``ConnectError/Kind/badResponse``, either way.
    ///
    /// Retries, `Retry-After` and token refresh still run first, as they do for every call: a 503 the
    /// ``RetryPolicy`` retries, or a 401 an ``AuthenticationMiddleware`` refreshes, is sent again, and only the last
    /// attempt's response is the answer; a 401 the middleware cannot get past (its refresh failed, or the renewed
    /// credential was rejected too) is the answer as well, not its ``ConnectError/Kind/authenticationFailed``. What a client generated from an OpenAPI document wants (its code reads
    /// every documented status), and what `SwiftConnectOpenAPI`'s transport sets:
    ///
    /// ```swift
    /// let response = try await connect.response(
    ///     for: TodoConnector.get(id: 7), options: RequestOptions(acceptsEveryStatus: true)
    /// ).value
    /// if response.statusCode == 404 { showMissing() }
    /// ```
    ///
    /// A streamed response's error body is read into memory up to ``StreamingOptions/errorBodyLimit``: a longer one
    /// fails with ``ConnectError/Kind/responseTooLarge`` rather than being cut short.
    public var acceptsEveryStatus: Bool? {
        get { self[StatusAcceptance.self] }
        set { self[StatusAcceptance.self] = newValue }
    }

    /// The value set for `key` at this level (or, in a request's ``RequestContext/options``, at the most specific
    /// level that set one); `nil` when none is set. Setting `nil` removes it.
    ///
    /// ```swift
    /// enum Sampling: RequestOptionKey { typealias Value = Double }
    ///
    /// struct TracingMiddleware: Middleware {
    ///     func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
    ///         -> Future<ConnectResponse>
    ///     {
    ///         let rate = context.options[Sampling.self] ?? 1  // 0.1 for the calls that set it
    ///         return next(request)
    ///     }
    /// }
    ///
    /// var options = RequestOptions()
    /// options[Sampling.self] = 0.1
    /// ```
    public subscript<Key: RequestOptionKey>(key: Key.Type) -> Key.Value? {
        get { storage.values.keyed[ObjectIdentifier(key)]?.value as? Key.Value }
        set { update { $0.keyed[ObjectIdentifier(key)] = newValue.map { KeyedValue($0, key: key) } } }
    }
    /// Headers for these requests. A header of a more specific level replaces one of the same name (ignoring case)
    /// from a level above: the call's replace the connector's (its ``Connector/headers`` included), which replace the
    /// method's, which replace the client's (``Connect/Settings/defaultHeaders`` and the server's).
    ///
    /// ```swift
    /// connect.request(TodoConnector.list, options: RequestOptions(headers: [.acceptLanguage("fr")]))
    /// ```
    ///
    /// A value with CR, LF or NUL fails the call with ``ConnectError/Kind/invalidRequest``, nothing sent.
    public var headers: [HTTPHeader] {
        get { storage.values.headers }
        set { update { $0.headers = newValue } }
    }
    /// The call's deadline in seconds (see ``Connector/timeout``), attempts and waits included; `nil` leaves it to
    /// the level above.
    ///
    /// The call's and the connector's options win over the connector's own ``Connector/timeout``. A connector that
    /// keeps the default timeout (60 s) takes the deadline of its method's options and then the client's; one that
    /// returns any other value wins over them. Zero, a negative value or NaN fails the call with
    /// ``ConnectError/InvalidRequestReason/invalidTimeout(_:)``.
    public var timeout: TimeInterval? {
        get { storage.values.timeout }
        set { update { $0.timeout = newValue } }
    }
    /// The longest the network may stay quiet during an attempt, in seconds: while the request goes out and the
    /// response head is awaited, and between two pieces of the response body. Every piece that arrives starts the
    /// clock again, as URLSession's `timeoutIntervalForRequest` and AsyncHTTPClient's `readTimeout` do, so a large
    /// download over a slow network needs a long ``timeout`` (the whole call) but only a short idle timeout, which
    /// catches a connection that stalls long before that deadline. `nil` leaves it to the level above, and at the
    /// top to none.
    ///
    /// ```swift
    /// let options = RequestOptions(timeout: 3600, idleTimeout: 30)  // an hour in all, 30 s without a byte at most
    /// let file = try await connect.download(VideoConnector.movie(id: 7), to: destination, options: options).value
    /// ```
    ///
    /// When it passes, the attempt fails with ``ConnectError/Kind/timedOut``, its message naming `idleTimeout` and
    /// the seconds, and its transfer is stopped (the connection closed); a download keeps what arrived as
    /// ``ConnectError/partialDownload`` when its answer named a strong `ETag` or a strong `Last-Modified` (a retry
    /// resumes from it, ``PartialDownload``), and any other's partial file is removed. The ``RetryPolicy`` may send the
    /// request again as after any timeout, each attempt with its clock of its own.
    /// Sending the request counts as activity as far as the engine reports the bytes it hands to the connection
    /// (``URLSessionTransport`` and `AsyncHTTPClientTransport` report each piece); the clock starts when the request
    /// is handed to the engine, so an engine that reports nothing of its upload has a slow upload count as quiet.
    ///
    /// Applied by the core's exchange, the same on ``URLSessionTransport`` over its own session (a call with an idle
    /// timeout takes the exchange's path, not URLSession's completion handler), on `AsyncHTTPClientTransport` and on
    /// every engine; a ``Transport`` of your own, or one over an app's `URLSession`, applies none. A streamed call
    /// (``Connect/stream(_:options:streaming:)``) takes it as its ``StreamingOptions/idleTimeout`` when that is
    /// `nil`; when both are set, the stream's wins. Zero, a negative value or NaN fails the call with
    /// ``ConnectError/InvalidRequestReason/invalidTimeout(_:)``, nothing sent; `.infinity` sets none.
    public var idleTimeout: TimeInterval? {
        get { storage.values.idleTimeout }
        set { update { $0.idleTimeout = newValue } }
    }
    /// Receives upload and download progress, in order; the last report comes before the future completes (after a
    /// cancellation or the deadline no report starts, though one already running on another thread then may end after
    /// the caller hears of it). For a streamed call (``Connect/stream(_:options:streaming:)``, an event source), whose
    /// future completes with the head, the body's reports go on as it is read, after the head, to its end. No report repeats the one before it, and the response body's end
    /// (``TransferProgress/downloadFraction`` of 1) comes once, in the last report, when the whole body of the answer
    /// is there: for a download, once its file is in place. An attempt the retry loop sends again (after a 503, say)
    /// does not report the end of its own body. A retried request sends its body again, and so does a redirect
    /// that keeps it (307, 308): each attempt, and each such hop, reports from zero. A redirect that drops the body
    /// (302, 303 after a `POST`) keeps the upload's figures as the first hop left them. A response the
    /// ``ResponseCache`` serves without asking the server reports once: its whole body. The bytes sent are those the
    /// engine handed to the connection: an answer that comes before the whole body went (a 413 after the first bytes)
    /// leaves the upload short of its total.
    public var progress: (@Sendable (TransferProgress) -> Void)? {
        get { storage.values.progress }
        set { update { $0.progress = newValue } }
    }

    /// The options' values.
    private struct Values: Sendable {
        var middlewares: [any Middleware]
        var plugins: [any ConnectPlugin]
        var validators: [any ResponseValidator]
        var processors: [any ResponseProcessor]
        var maxResponseBytes: Int?
        var progress: (@Sendable (TransferProgress) -> Void)?
        var headers: [HTTPHeader] = []
        var timeout: TimeInterval?
        var idleTimeout: TimeInterval?
        /// The values of stages, built-in or a user's, by key.
        var keyed: [ObjectIdentifier: KeyedValue] = [:]

        var isEmpty: Bool {
            middlewares.isEmpty && plugins.isEmpty && validators.isEmpty && processors.isEmpty
                && maxResponseBytes == nil && progress == nil && headers.isEmpty && timeout == nil
                && idleTimeout == nil && keyed.isEmpty
        }
    }

    /// A value under a ``RequestOptionKey``, with its key's way of combining two levels' values.
    struct KeyedValue: Sendable {
        let value: any Sendable
        /// The key's ``RequestOptionKey/combine(_:_:)``, over this key's values.
        let combine: @Sendable (_ earlier: any Sendable, _ later: any Sendable) -> any Sendable

        init<Key: RequestOptionKey>(_ value: Key.Value, key: Key.Type) {
            self.value = value
            self.combine = { earlier, later in
                guard let earlier = earlier as? Key.Value, let later = later as? Key.Value else { return later }
                return Key.combine(earlier, later)
            }
        }

        /// `later` set over this (earlier) value.
        func followed(by later: KeyedValue) -> KeyedValue {
            KeyedValue(value: later.combine(value, later.value), combine: later.combine)
        }

        private init(value: any Sendable, combine: @escaping @Sendable (any Sendable, any Sendable) -> any Sendable) {
            self.value = value
            self.combine = combine
        }
    }

    /// The values behind one reference, never changed once made: every request carries its options through
    /// the pipeline, and a copy of them is then one retain instead of one per list, closure and string.
    private final class Storage: Sendable {
        let values: Values

        init(_ values: Values) {
            self.values = values
        }
    }

    /// The storage of every empty set of options (most calls'), so making one allocates nothing.
    private static let emptyStorage = Storage(
        Values(middlewares: [], plugins: [], validators: [], processors: []))

    private var storage: Storage

    /// Sets a value: new storage with the change, as the old one may be shared.
    private mutating func update(_ change: (inout Values) -> Void) {
        var values = storage.values
        change(&values)
        storage = values.isEmpty ? Self.emptyStorage : Storage(values)
    }

    /// Creates options.
    ///
    /// - Parameters:
    ///   - middlewares: Middlewares for these requests.
    ///   - plugins: Observers.
    ///   - validators: Checks on successful responses.
    ///   - processors: Body transformations before decoding.
    ///   - isRetrySafe: Whether a non-idempotent request may be replayed; `nil` leaves it to the method.
    ///   - cache: The cache rule; `nil` for none.
    ///   - maxResponseBytes: The response size limit; `nil` keeps the client's.
    ///   - progress: Progress reports.
    ///   - connectivity: What the request does while offline; `nil` leaves it to the level above, and at the top
    ///     to the ``ConnectivityMiddleware``'s own policy.
    ///   - requiresAuthentication: `false` to send the requests unsigned by the client's authentication stages
    ///     (see ``requiresAuthentication``); `nil` leaves it to the level above.
    ///   - acceptsEveryStatus: `true` to make a response of any status the answer, not the error handler's error
    ///     (see ``acceptsEveryStatus``); `nil` leaves it to the level above.
    ///   - headers: Headers, replacing those of the same name from the levels above.
    ///   - timeout: The call's deadline in seconds; `nil` leaves it to the level above (see ``timeout``).
    ///   - idleTimeout: The longest the network may stay quiet during an attempt, in seconds; `nil` leaves it to
    ///     the level above (see ``idleTimeout``). `RequestOptions(timeout: 3600, idleTimeout: 30)` gives a large
    ///     download an hour in all, but fails it after 30 s without a byte.
    public init(
        middlewares: [any Middleware] = [],
        plugins: [any ConnectPlugin] = [],
        validators: [any ResponseValidator] = [],
        processors: [any ResponseProcessor] = [],
        isRetrySafe: Bool? = nil,
        cache: CacheRule? = nil,
        maxResponseBytes: Int? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        connectivity: ConnectivityPolicy? = nil,
        requiresAuthentication: Bool? = nil,
        acceptsEveryStatus: Bool? = nil,
        headers: [HTTPHeader] = [],
        timeout: TimeInterval? = nil,
        idleTimeout: TimeInterval? = nil
    ) {
        var values = Values(
            middlewares: middlewares, plugins: plugins, validators: validators, processors: processors,
            maxResponseBytes: maxResponseBytes, progress: progress, headers: headers, timeout: timeout,
            idleTimeout: idleTimeout)
        Self.set(isRetrySafe, for: RetrySafety.self, in: &values)
        Self.set(cache, for: CacheRuleOption.self, in: &values)
        Self.set(connectivity, for: ConnectivityPolicyOption.self, in: &values)
        Self.set(requiresAuthentication, for: AuthenticationRequirement.self, in: &values)
        Self.set(acceptsEveryStatus, for: StatusAcceptance.self, in: &values)
        storage = values.isEmpty ? Self.emptyStorage : Storage(values)
    }

    private static func set<Key: RequestOptionKey>(_ value: Key.Value?, for key: Key.Type, in values: inout Values) {
        if let value { values.keyed[ObjectIdentifier(key)] = KeyedValue(value, key: key) }
    }

    /// Only the keyed values of these options (what the client's options give every request's context), without
    /// the stages and per-call values the client applies itself.
    var keyedValuesOnly: RequestOptions {
        var only = RequestOptions()
        only.update { $0.keyed = storage.values.keyed }
        return only
    }

    /// Whether no option is set (the fast path: nothing to merge).
    var isEmpty: Bool {
        storage === Self.emptyStorage
    }

    /// Whether the options add stages to the pipeline (middlewares or plugins), not only values.
    var addsStages: Bool {
        !storage.values.middlewares.isEmpty || !storage.values.plugins.isEmpty
    }

    /// These options followed by `more`: lists concatenated, single values taken from `more` when set, keyed
    /// values combined by their keys (by default `more`'s).
    func merged(with more: RequestOptions) -> RequestOptions {
        if more.isEmpty { return self }
        if isEmpty { return more }
        let (earlier, later) = (storage.values, more.storage.values)
        var keyed = earlier.keyed
        for (key, value) in later.keyed {
            keyed[key] = keyed[key].map { $0.followed(by: value) } ?? value
        }
        return RequestOptions(
            storage: Storage(
                Values(
                    middlewares: earlier.middlewares + later.middlewares,
                    plugins: earlier.plugins + later.plugins,
                    validators: earlier.validators + later.validators,
                    processors: earlier.processors + later.processors,
                    maxResponseBytes: later.maxResponseBytes ?? earlier.maxResponseBytes,
                    progress: later.progress ?? earlier.progress,
                    headers: earlier.headers + later.headers,
                    timeout: later.timeout ?? earlier.timeout,
                    idleTimeout: later.idleTimeout ?? earlier.idleTimeout,
                    keyed: keyed)))
    }

    private init(storage: Storage) {
        self.storage = storage
    }
}

/// The key of a value that a stage reads from ``RequestOptions``: how a middleware of yours carries its own
/// configuration at the client, connector and call levels, as the built-in stages carry theirs (the response
/// cache's ``CacheRule``, the ``ConnectivityPolicy``, replay safety).
///
/// ```swift
/// enum Sampling: RequestOptionKey { typealias Value = Double }
/// let options = { var options = RequestOptions(); options[Sampling.self] = 0.1; return options }()
/// ```
///
/// A middleware reads the value with `context.options[Sampling.self]`.
public protocol RequestOptionKey: Sendable {
    /// The type of the value.
    associatedtype Value: Sendable

    /// The value that counts where two levels set one: `earlier` is the client's (or the connector's), `later`
    /// the more specific level's. By default `later`.
    static func combine(_ earlier: Value, _ later: Value) -> Value
}

extension RequestOptionKey {
    /// The more specific level's value wins.
    public static func combine(_ earlier: Value, _ later: Value) -> Value { later }
}

/// How a ``ResponseCache`` stores and serves one request's response.
///
/// ```swift
/// RequestOptions(cache: CacheRule(timeToLive: 300))                      // serve from cache for 5 minutes
/// RequestOptions(cache: CacheRule(timeToLive: 300, bypassesCache: true)) // fetch fresh, then store
/// RequestOptions(cache: CacheRule(timeToLive: 60, key: "search:\(query)"))
/// RequestOptions(cache: CacheRule(timeToLive: 60, keyIncludesBody: true))  // a POST search, by its body
/// ```
///
/// GET and HEAD responses are cached under the method and URL. A request of any other method (a POST search, a GraphQL
/// query) is cached only when the rule names its key (a custom ``key``, or ``keyIncludesBody``) and is given for that
/// request: by its connector's ``Connector/options``, its call's options or the client's options for its method
/// (``Connect/Settings/methodOptions``). The rule makes it a read, so its answer removes nothing stored, where any other
/// successful PUT, PATCH, DELETE or POST removes the responses stored for its URL (see ``ResponseCache``). A rule of the
/// client's own options (``Connect/Settings/options``, which every request of the client gets) caches GET and HEAD
/// only, as a ``ResponseCache``'s default rule does: under it a DELETE, a PUT, a PATCH or a POST is sent, never served as
/// a read of the rule's key. The request's own `cachePolicy` (``Connector/cachePolicy``) is
/// honoured too: `.reloadIgnoringLocalCacheData` and `.reloadIgnoringLocalAndRemoteCacheData` fetch fresh and
/// store, as ``bypassesCache`` does; `.reloadRevalidatingCacheData` revalidates a stored response that has a
/// validator (`ETag`, `Last-Modified`), fresh or not, with a conditional request (a 304 serves it), and fetches
/// fresh when it has none; `.returnCacheDataElseLoad` serves a stored response even past its time to live, else
/// fetches; `.returnCacheDataDontLoad` serves a stored response or fails with ``ConnectError/Kind/transport``
/// (`URLError(.resourceUnavailable)` underneath), nothing sent. Its own `Cache-Control` header is honoured as well: a
/// request that says `no-store` is neither served nor stored, one that says `no-cache` or `max-age=0` (or, without
/// `Cache-Control`, `Pragma: no-cache`) revalidates as `.reloadRevalidatingCacheData` does, and `min-fresh`,
/// `max-stale` and `only-if-cached` are honoured as ``ResponseCache`` says.
public struct CacheRule: Sendable, Hashable {
    /// The longest a stored response is served, in seconds: the response's `Cache-Control: max-age` or `Expires`
    /// can shorten it, never lengthen it, and `no-store` keeps it out (`no-cache` too, unless it has an `ETag` or a
    /// `Last-Modified` to be revalidated with; see ``ResponseCache``). Once it has passed, a stored response with a
    /// validator is revalidated (a conditional request, whose 304 serves it for another time to live).
    ///
    /// It is the response's freshness lifetime, counted from when the origin server made it, as RFC 9111 counts a
    /// lifetime: the age the response already has when it comes (its `Age` header, the time it spent in a CDN or a
    /// proxy cache) counts against it. Under `CacheRule(timeToLive: 3600)`, a response that comes with `Age: 3000`
    /// is served from the cache for 600 seconds more, and one with `Age: 3600` or more is not stored (unless it has
    /// an `ETag` or a `Last-Modified`: then it is stored to be revalidated before it is used).
    ///
    /// It bounds what a request is served as well as what is stored: a call whose rule says 10 seconds is not served
    /// a response stored 100 seconds ago under a rule of 300 (it goes to the network, or revalidates), as a request's
    /// `Cache-Control: max-age=10` would not be.
    public var timeToLive: TimeInterval
    /// The cache key; `nil` uses the method and the full URL. A custom key names one response, so it is the key of
    /// a rule given for one endpoint (a connector's, a call's, the client's options for one method): a rule for every
    /// request (the client's own options, ``ResponseCache``'s `defaultRule`) stores each request under its method and
    /// URL whatever its key says, where one key would answer every GET with the first one's body.
    public var key: String?
    /// Whether to skip a stored response and fetch a fresh one (which is then stored).
    public var bypassesCache: Bool
    /// Whether the key also names the request's body (a SHA-256 digest of it), so that one endpoint asked with
    /// different bodies (a POST search) keeps one response per body. It lets methods other than GET and HEAD be
    /// cached. A body sent from a stream cannot be named: such a request is not cached.
    public var keyIncludesBody: Bool

    /// Creates a rule.
    ///
    /// - Parameters:
    ///   - timeToLive: The longest a stored response is served, in seconds, counted from when the server made it
    ///     (the `Age` it comes with counts); the response's headers may shorten it.
    ///   - key: A custom key; `nil` uses method and URL.
    ///   - bypassesCache: Whether to fetch fresh and store, ignoring what is stored.
    ///   - keyIncludesBody: Whether the key names the request's body, for methods such as POST.
    public init(
        timeToLive: TimeInterval, key: String? = nil, bypassesCache: Bool = false, keyIncludesBody: Bool = false
    ) {
        self.timeToLive = timeToLive
        self.key = key
        self.bypassesCache = bypassesCache
        self.keyIncludesBody = keyIncludesBody
    }
}

/// The client's option: whether every status is an answer (``RequestOptions/acceptsEveryStatus``).
enum StatusAcceptance: RequestOptionKey {
    typealias Value = Bool
}

/// The key of ``RequestOptions/maxRedirects``.
enum RedirectLimit: RequestOptionKey {
    typealias Value = Int
}

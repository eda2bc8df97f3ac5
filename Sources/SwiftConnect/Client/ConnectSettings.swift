import Foundation

extension Connect {
    /// The client's settings beyond its transport, middlewares, error handler, retry policy, queue, cache and
    /// server: what most clients leave at their defaults.
    ///
    /// ```swift
    /// let connect = Connect(
    ///     retryPolicy: RetryPolicy(maxAttempts: 4),
    ///     settings: Connect.Settings(decoders: decoders, maxResponseBytes: 5_000_000, logger: logger)
    /// )
    /// ```
    public struct Settings: Sendable {
        /// Whether identical GETs in flight at the same time share one network call. Defaults to `false`.
        ///
        /// A call that joins one already on its way shares that exchange, and its deadline: with `retryPolicy: nil`
        /// it may time out sooner than its own timeout, counted from when it was made, would have (the default
        /// retry policy sends a timed-out GET again). The client's plugins hear a shared request once (see
        /// ``ConnectPlugin``); each call's observers hear its own attempt.
        public var coalescesIdenticalRequests: Bool
        /// Client-level plugins, validators and processors (they run before the connector's and the call's), more
        /// middlewares (after the client's `middlewares`), and the `isRetrySafe`, cache rule, size limit,
        /// progress, connectivity policy, `requiresAuthentication`, `acceptsEveryStatus`, `maxRedirects` and values
        /// under your own ``RequestOptionKey``s of calls whose connector and call leave them unset (a connectivity
        /// policy set here wins over the ``ConnectivityMiddleware``'s own). A cache rule set here caches GET and HEAD
        /// requests only, each under its method and URL, even when it names a key or the body (see ``CacheRule``): a
        /// write under it is sent.
        public var options: RequestOptions
        /// The decoders `decoded(toType:)` chooses from by content type. Defaults to JSON.
        public var decoders: ResponseDecoders
        /// Headers added to every request that does not set them already. Defaults to
        /// `Accept: application/json`. A name given twice (ignoring case) is one field, with the later value.
        public var defaultHeaders: [HTTPHeader]
        /// The most response-body bytes accepted for any request (a request's own limit overrides it); `nil`
        /// (the default) for no limit.
        public var maxResponseBytes: Int?
        /// Where debug output goes; `nil` (the default) for ``ConnectLogging/logger`` (standard error).
        public var logger: (any ConnectLogger)?
        /// Whether debug output, cURL commands and the errors of this client's requests hide secrets. Defaults to
        /// `true`.
        ///
        /// Secrets are hidden by name (`Authorization`, cookies, password-like fields and query items) and by
        /// value: the secret values a request carried are hidden wherever they appear again in what the client
        /// logs or puts in an error, such as a response body or a server message that echoes the token. With
        /// `false`, debug output and the ``ConnectError/message`` and descriptions of errors from the client's
        /// requests show everything, for a debugging session; decoding errors made after the response keep
        /// hiding secrets. SECURITY.md lists what counts as a secret.
        public var redactsSecrets: Bool
        /// Defaults for the requests of one method: headers, deadline, cache rule and any other option, between
        /// the client's ``options`` and the connector's (see ``RequestOptions`` for the order), as JustAPIs'
        /// `DefaultRequestPropertySet` had them. Empty by default.
        ///
        /// ```swift
        /// let settings = Connect.Settings(methodOptions: [
        ///     .get: RequestOptions(cache: CacheRule(timeToLive: 60), timeout: 10),
        ///     .post: RequestOptions(headers: [HTTPHeader(name: "X-Write", value: "1")], timeout: 30),
        /// ])
        /// ```
        public var methodOptions: [HTTPMethod: RequestOptions]
        /// What watches every call of the client (``ConnectObserver``): tracing, metrics, logging. Empty by default,
        /// and then the client makes no event at all.
        public var observers: [any ConnectObserver]

        /// Creates settings; every parameter has the default its property describes.
        ///
        /// - Parameters:
        ///   - coalescesIdenticalRequests: Whether identical GETs in flight share one network call.
        ///   - options: Client-level options.
        ///   - decoders: The decoders by content type.
        ///   - defaultHeaders: Headers for every request that does not set them.
        ///   - maxResponseBytes: The response size limit for every request.
        ///   - logger: Where debug output goes.
        ///   - redactsSecrets: Whether debug output, cURL commands and errors hide secrets.
        ///   - methodOptions: Defaults for the requests of each method.
        ///   - observers: What watches every call.
        public init(
            coalescesIdenticalRequests: Bool = false,
            options: RequestOptions = RequestOptions(),
            decoders: ResponseDecoders = .default,
            defaultHeaders: [HTTPHeader] = [.accept("application/json")],
            maxResponseBytes: Int? = nil,
            logger: (any ConnectLogger)? = nil,
            redactsSecrets: Bool = true,
            methodOptions: [HTTPMethod: RequestOptions] = [:],
            observers: [any ConnectObserver] = []
        ) {
            self.coalescesIdenticalRequests = coalescesIdenticalRequests
            self.options = options
            self.decoders = decoders
            self.defaultHeaders = defaultHeaders
            self.maxResponseBytes = maxResponseBytes
            self.logger = logger
            self.redactsSecrets = redactsSecrets
            self.methodOptions = methodOptions
            self.observers = observers
        }
    }
}

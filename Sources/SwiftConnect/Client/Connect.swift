import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client: sends the requests that ``Connector``s describe and returns ``Future``s of their results.
///
/// ```swift
/// Connect.default.request(TodoConnector.get(id: 123))
///     .decoded(toType: Todo.self)
///     .observe { result in print(result) }
/// ```
///
/// ## The path of a request
/// 1. The connector is built into a ``ConnectRequest`` (no I/O; invalid input fails here with
///    ``ConnectError/Kind/invalidRequest``) and the client's default headers are added.
/// 2. The client's retry loop sends it, once or more (``RetryPolicy``), within the connector's `timeout`.
/// 3. Each attempt passes through the middlewares in order: the client's `middlewares`, those of the client's
///    options for the method (``Connect/Settings/methodOptions``), the connector's and the call's
///    ``RequestOptions/middlewares``, then the built-in stages the client was given (the
///    ``ResponseCache``, the coalescing of identical GETs, the ``RequestQueue``, the plugins), and finally the
///    ``Transport``. The response comes back through them in reverse.
/// 4. A status outside 200..<300 goes to the ``ErrorHandling`` error handler.
/// 5. Validators (client, connector, call) check the response, then processors transform it.
/// 6. ``Future/decoded(toType:decoder:)`` decodes the body with the decoder registered for its content type.
///
/// See ARCHITECTURE.md at the root of the repository for why the stages sit in that order.
///
/// `Connect` is thread-safe; share one per backend.
public final class Connect: Sendable {
    /// The shared client, with the process's transport (a ``URLSessionTransport`` unless
    /// ``ConnectSystem/bootstrap(transport:)`` set another), the default retry policy and the default ``ErrorHandler``.
    ///
    /// Made on first use, with the process's transport even inside `ConnectSystem.withDefaultTransport(_:operation:)`.
    public static let `default` = Connect(transport: ConnectSystem.processTransport)

    /// What sends requests.
    package let transport: any Transport
    /// The client's own middlewares, in order: the first sees each request first.
    package let middlewares: [any Middleware]
    /// What turns error responses into errors.
    package let errorHandler: any ErrorHandling
    /// The retry policy, or `nil` when the client retries nothing by itself (a middleware may still ask for
    /// another attempt, up to three in all; see ``RetryPolicy``).
    let retryPolicy: RetryPolicy?
    /// The queue capping requests in flight, if any.
    let requestQueue: RequestQueue?
    /// The response cache, if any.
    let responseCache: ResponseCache?
    /// The rest of the client's settings: options, decoders, default headers, size limit, logging.
    package let settings: Settings
    /// `settings.options`.
    var options: RequestOptions { settings.options }
    /// `settings.decoders`.
    @usableFromInline var decoders: ResponseDecoders { settings.decoders }
    /// The client's headers for every request: its options' (``Settings/options``), then
    /// ``Settings/defaultHeaders``; in each, a name given twice has its last value, as in a connector's headers.
    let defaultHeaders: [HTTPHeader]
    /// ``ServerConfiguration/defaultHeaders``, a name given twice with its last value.
    let serverDefaultHeaders: [HTTPHeader]
    /// The server this client talks to, for connectors and routes with a relative base URL, with default
    /// headers and query items for every request to it (not for an absolute connector naming another host).
    let configuration: ServerConfiguration?
    /// `settings.maxResponseBytes`.
    var maxResponseBytes: Int? { settings.maxResponseBytes }
    /// `settings.redactsSecrets`.
    var redactsSecrets: Bool { settings.redactsSecrets }
    /// The policy the retry loop applies: `retryPolicy`, or the one `nil` stands for.
    private let appliedRetryPolicy: RetryPolicy
    /// The stages after every middleware, in order: cache, coalescing, queue.
    private let builtInStages: [any Middleware]
    /// The pipeline for calls that add nothing of their own.
    private let chain: MiddlewareChain
    /// Where every client's plugins are told (``ConnectPlugin``): one serial queue for the process, so that a plugin
    /// that clients share (a client made with `adding(plugins:)` keeps its parent's) is never called concurrently.
    static let pluginQueue = DispatchQueue(label: "SwiftConnect.plugins")
    private let inFlight = InFlightCalls()
    /// Marks this client's requests in ``requestQueue``, which other clients may share.
    private let queueOwner = RequestQueue.Owner()
    /// `configuration`'s base URL, or why it has none: worked out once, not for every request.
    let serverBaseURL: Result<URL, any Error>?
    /// The client's keyed option values (its `isRetrySafe`, cache rule, connectivity policy and its stages' own
    /// values), which the options of a call's ``RequestContext`` fall back to (empty, and then free to merge, when
    /// the client sets none).
    let contextDefaults: RequestOptions

    /// Creates a client.
    ///
    /// ```swift
    /// let connect = Connect(
    ///     middlewares: [LocaleMiddleware()],
    ///     retryPolicy: RetryPolicy(maxAttempts: 4),
    ///     requestQueue: RequestQueue(maxConcurrentRequests: 4)
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - transport: What sends requests. Defaults to ``ConnectSystem/defaultTransport``: the process's transport
    ///     if ``ConnectSystem/bootstrap(transport:)`` set one, else a new ``URLSessionTransport``.
    ///   - middlewares: Stages every request passes through, in order.
    ///   - errorHandler: Turns error responses into errors. Defaults to ``ErrorHandler``. A status it accepts
    ///     (returns `nil` for) is an answer: the retry policy does not retry it.
    ///   - retryPolicy: When to retry failed requests. Defaults to ``RetryPolicy/default``: a conservative
    ///     policy for idempotent requests, which retries 408, 429, 500, 502, 503 and 504 (see
    ///     ``RetryPolicy/retryableStatusCodes``). `nil` (or ``RetryPolicy/none``) retries nothing by
    ///     itself but lets a middleware ask for another attempt, up to three in all; `RetryPolicy(maxAttempts: 1)`
    ///     sends every request once.
    ///   - requestQueue: Caps the requests in flight; `nil` (the default) sends everything at once. Clients
    ///     may share one queue; see ``RequestQueue``.
    ///   - responseCache: An in-memory cache for requests with a ``CacheRule``; `nil` (the default) for none.
    ///   - configuration: The server for relative connectors and ``Route``s, with default headers and query
    ///     items for every request to it.
    ///   - settings: Everything else, each with a good default: coalescing, client-level options, decoders,
    ///     default headers, size limit, logging (see ``Settings``).
    public init(
        transport: any Transport = ConnectSystem.defaultTransport,
        middlewares: [any Middleware] = [],
        errorHandler: any ErrorHandling = ErrorHandler(),
        retryPolicy: RetryPolicy? = .default,
        requestQueue: RequestQueue? = nil,
        responseCache: ResponseCache? = nil,
        configuration: ServerConfiguration? = nil,
        settings: Settings = Settings()
    ) {
        self.transport = transport
        self.middlewares = middlewares
        self.errorHandler = errorHandler
        self.retryPolicy = retryPolicy
        self.requestQueue = requestQueue
        self.responseCache = responseCache
        self.settings = settings
        self.configuration = configuration
        defaultHeaders =
            HTTPHeader.lastValuesWin(settings.options.headers) + HTTPHeader.lastValuesWin(settings.defaultHeaders)
        serverDefaultHeaders = HTTPHeader.lastValuesWin(configuration?.defaultHeaders ?? [])
        serverBaseURL = configuration.map { configuration in Result { try configuration.requireBaseURL() } }
        contextDefaults = settings.options.keyedValuesOnly
        appliedRetryPolicy = retryPolicy ?? .none
        // After every middleware, so that they see requests as they go on the wire (signed, adapted): the cache
        // and the coalescing key on the final headers, and a request holds a queue slot only while it is on its
        // way to the transport, never while a middleware makes it wait (for a token refresh, say).
        var stages: [any Middleware] = []
        if let responseCache { stages.append(ResponseCacheStage(cache: responseCache)) }
        if settings.coalescesIdenticalRequests {
            stages.append(RequestCoalescer(clientObserves: !settings.observers.isEmpty))
        }
        if let requestQueue { stages.append(RequestQueueStage(queue: requestQueue, owner: queueOwner)) }
        builtInStages = stages
        chain = Connect.pipeline(
            middlewares + settings.options.middlewares + stages, plugins: settings.options.plugins,
            pluginQueue: Connect.pluginQueue, transport: transport)
    }

    /// The usage guide's initializer: one middleware and an error handler.
    ///
    /// ```swift
    /// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
    /// let adapted = Connect(middleware: LocaleMiddleware())  // the default ErrorHandler
    /// ```
    ///
    /// (`Connect(errorHandler:)` alone keeps the default middlewares: none.)
    ///
    /// - Parameters:
    ///   - middleware: The middleware every request passes through.
    ///   - errorHandler: Turns error responses into errors. Defaults to ``ErrorHandler``.
    public convenience init(middleware: any Middleware, errorHandler: any ErrorHandling = ErrorHandler()) {
        self.init(middlewares: [middleware], errorHandler: errorHandler)
    }

    /// A client for one server, by host name, over https.
    ///
    /// ```swift
    /// let api = Connect(host: "api.example.com")
    /// api.request("/todos/1").decoded(toType: Todo.self)
    /// ```
    ///
    /// - Parameters:
    ///   - host: The host name, without scheme.
    ///   - transport: What sends requests.
    public convenience init(host: String, transport: any Transport = ConnectSystem.defaultTransport) {
        self.init(transport: transport, configuration: ServerConfiguration(host: host))
    }

    /// A client for the server at `baseURL`, whose path every endpoint goes under, as JustAPIs' gateways and
    /// Remotli's hosts were made.
    ///
    /// ```swift
    /// let gateway = Connect(baseURL: URL(string: "http://gateway.local:5000/v2")!)
    /// gateway.request("/todos").decoded(toType: [Todo].self)  // GET http://gateway.local:5000/v2/todos
    /// ```
    ///
    /// A URL that cannot name a server makes every request fail with ``ConnectError/Kind/invalidRequest`` saying
    /// why (see ``ServerConfiguration/init(baseURL:defaultHeaders:)``).
    ///
    /// - Parameters:
    ///   - baseURL: The server, with an optional path prefix.
    ///   - transport: What sends requests.
    public convenience init(baseURL: URL, transport: any Transport = ConnectSystem.defaultTransport) {
        self.init(transport: transport, configuration: ServerConfiguration(baseURL: baseURL))
    }

    /// Where this client logs.
    public var logger: any ConnectLogger { settings.logger ?? ConnectLogging.logger }

    /// The pipeline of a call: `stages` (the client's middlewares, the call's, the built-in stages), then the
    /// plugins' stage, innermost, when there are plugins, then the transport.
    private static func pipeline(
        _ stages: [any Middleware],
        plugins: [any ConnectPlugin],
        pluginQueue: DispatchQueue,
        transport: any Transport
    ) -> MiddlewareChain {
        let notifier: [any Middleware] = plugins.isEmpty ? [] : [PluginNotifier(plugins: plugins, queue: pluginQueue)]
        return MiddlewareChain(middlewares: stages + notifier, transport: transport)
    }
}

// MARK: - Sending requests

extension Connect {
    /// Sends the request a connector describes and returns a future of the response body.
    ///
    /// ```swift
    /// Connect.default.request(TodoConnector.get(id: 123), debugResponse: true)
    ///     .decoded(toType: Todo.self)
    ///     .observe { result in print(result) }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The connector describing the endpoint.
    ///   - debugResponse: Logs a runnable cURL command for the request, then the response, through
    ///     ``logger`` (secrets hidden unless ``Settings/redactsSecrets`` is `false`).
    /// - Returns: A future of the body of a 2xx response (or of a response the error handler accepted): a
    ///   `Future<Data>` that knows its response, so that ``Future/decoded(toType:decoder:)`` chooses the decoder
    ///   by content type. It fails with a ``ConnectError``, or with the error your ``ErrorHandling`` returned, or
    ///   one a middleware of yours failed the request with (an adapter that throws), as it is.
    public func request(_ request: any Connector, debugResponse: Bool = false) -> Future<Data> {
        body(of: response(for: request, debugResponse: debugResponse))
    }

    /// Sends the request a connector describes, with options for this call only, and returns a future of
    /// the response body.
    ///
    /// ```swift
    /// connect.request(TodoConnector.get(id: 1), options: RequestOptions(cache: CacheRule(timeToLive: 60)))
    /// ```
    ///
    /// - Parameters:
    ///   - request: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Middlewares, plugins, validators, processors and rules for this call, after the client's
    ///     and the connector's.
    /// - Returns: A future of the body, as for ``request(_:debugResponse:)``.
    public func request(
        _ request: any Connector,
        debugResponse: Bool = false,
        options: RequestOptions
    ) -> Future<Data> {
        body(of: response(for: request, debugResponse: debugResponse, options: options))
    }

    /// Sends the request a connector describes and returns a future of the whole response: status,
    /// headers and body.
    ///
    /// ```swift
    /// connect.response(for: TodoConnector.get(id: 1)).onSuccess { response in
    ///     print(response.statusCode, response.header("ETag") ?? "-")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response (see ``request(_:debugResponse:)``).
    ///   - callOptions: Options for this call only, after the client's and the connector's.
    /// - Returns: A future of the response; error statuses fail it as for ``request(_:debugResponse:)``.
    public func response(
        for connector: any Connector,
        debugResponse: Bool = false,
        options callOptions: RequestOptions = RequestOptions()
    ) -> Future<ConnectResponse> {
        exchange(connector, debugResponse: debugResponse, options: callOptions).checked()
    }

    /// Sends a connector that names its response type and returns a future of the decoded value.
    ///
    /// ```swift
    /// struct GetTodo: TypedConnector {
    ///     typealias Response = Todo
    ///     let id: Int
    ///     var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
    ///     var endpoint: String { "/todos/{id}" }
    ///     var method: HTTPMethod { .get }
    ///     var headers: [HTTPHeader] { [] }
    ///     var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
    /// }
    /// let todo: Future<Todo> = connect.send(GetTodo(id: 1))
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The connector.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the decoded response.
    @inlinable
    public func send<Endpoint: TypedConnector>(
        _ connector: Endpoint,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<Endpoint.Response> {
        // One stage from the response to the value: what `body(of:)` then `decoded(toType:decoder:)` do, without
        // the intermediate future of the body. Inlinable, so that the caller's module specialises it for the
        // response type.
        let decoders = self.decoders
        let decoder = connector.decoder
        let exchange = self.exchange(connector, debugResponse: debugResponse, options: options)
        // Checked and decoded in one stage; at once, compiled here, when the exchange has completed already.
        guard let outcome = exchange.completedOutcome else {
            return exchange.finish { response in
                try Connect.decode(
                    response, as: Endpoint.Response.self, with: decoder ?? decoders.decoder(for: response))
            }
        }
        return Future.resolved(outcome) { response in
            try Connect.decode(response, as: Endpoint.Response.self, with: decoder ?? decoders.decoder(for: response))
        }
    }

    /// Sends a connector that turns its response into its value itself, and returns a future of that value.
    ///
    /// ```swift
    /// let user: Future<User> = connect.send(LegacyUser())
    /// ```
    ///
    /// - Parameters:
    ///   - connector: The connector, with its decoding step.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the value; a step that throws fails it with ``ConnectError/Kind/decoding``.
    public func send<Endpoint: DecodingConnector>(
        _ connector: Endpoint,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<Endpoint.Response> {
        let decoders = self.decoders
        return exchange(connector, debugResponse: debugResponse, options: options).finish { response in
            try Connect.value(of: connector, from: response, decoders: decoders)
        }
    }

    /// The value a ``DecodingConnector``'s step makes of `response`: a failure is a ``ConnectError`` of kind
    /// `.decoding` that names the request and response (one the step throws is passed on with them).
    static func value<Endpoint: DecodingConnector>(
        of connector: Endpoint, from response: ConnectResponse, decoders: ResponseDecoders
    ) throws -> Endpoint.Response {
        do {
            return try connector.decode(response, using: decoders)
        } catch var error as ConnectError {
            if error.storedHead == nil { error = error.from(response) }
            throw error
        } catch let error as DecodingError {
            // A step that decodes (the usual case): the coding path and a readable message, as `decoded` gives.
            var failure = ConnectError.decoding(error, body: response.data, as: Endpoint.Response.self)
            if JSONNumberFit.isMisfitReport(error, decoding: response.data) {
                // JSONDecoder's "not valid JSON" of a body that is: a number that does not fit its type. The step
                // decoded a type of its own choosing from a part it chose, which the library cannot know: the
                // message explains without a path, rather than run a type's `init(from:)` again on a shape it
                // may not be written for (a step that reads through `JSONValue` gets the path from it).
                failure.explainNumberMisfit(nil, decoding: Endpoint.Response.self)
            } else if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                // The step found no value in the body: say that it has none, or, for a body that is not JSON,
                // the type the server declared (a sign-in page), as `decoded(toType:)` does.
                let contentType = response.header("Content-Type")
                if let message = ConnectError.noValueMessage(in: response.data, decoding: Endpoint.Response.self) {
                    failure.message = message
                } else if case let note = JSONSyntax.declaredTypeNote(response.mediaType), !note.isEmpty,
                    JSONSyntax.problem(in: BodyCharset.utf8(response.data, contentType: contentType)) != nil
                {
                    failure.message =
                        "could not decode \(Endpoint.Response.self) from the response body: invalid data: "
                        + context.debugDescription + note
                }
            }
            throw failure.from(response)
        } catch {
            let failure = ConnectError(
                .decoding, message: "\(type(of: connector)) could not make its value of the response: \(error)",
                request: response.storedRequest, head: response.storedHead, body: response.data,
                underlyingError: error)
            throw failure
        }
    }

    /// Decodes a response's body; a failure says which request and response it came from.
    @inlinable
    static func decode<Decoded: Decodable>(
        _ response: ConnectResponse,
        as type: Decoded.Type,
        with decoder: any ResponseBodyDecoder
    ) throws -> Decoded {
        do {
            return try decodeBody(response.data, as: type, with: decoder, response: response)
        } catch let error as ConnectError {
            throw error.from(response)
        }
    }

    /// Cancels every request of this client that has not completed; each fails with
    /// ``ConnectError/Kind/cancelled`` and its network task is cancelled. A stream (``stream(_:options:streaming:)``)
    /// counts until its body has ended: its transfer stops and its reader gets the cancellation. An event source
    /// (``eventSource(_:options:streaming:reconnection:)``) stops too, while it reads or waits to reconnect.
    ///
    /// Only this client's requests: with a ``RequestQueue`` shared with other clients, their waiting requests
    /// keep their place (and take the slots this client's cancelled requests free). A request that another thread
    /// is starting at the same time is cancelled too, as soon as the client has its future.
    public func cancelAllRequests() {
        // Waiting requests first: cancelling a running one frees a queue slot, which would start a waiting one.
        requestQueue?.cancelPending(of: queueOwner)
        let requests = inFlight.removeAll()
        for request in requests { request.cancel() }
    }

    /// How many requests of this client have started and not completed.
    public var requestsInFlight: Int {
        inFlight.count
    }
}

// MARK: - Pipeline

extension Connect {
    /// Builds the request's blueprint and adds the client's configuration: base URL for relative connectors,
    /// default query items and default headers. Pure: no I/O. `traits` are those of the connector's type.
    ///
    /// The server's own defaults (``ServerConfiguration/defaultHeaders`` and
    /// ``ServerConfiguration/defaultQueryItems``, often an API key) go only to requests for that server: a
    /// relative connector, or an absolute one naming the server's scheme, host and port. The client's
    /// ``Settings/defaultHeaders`` go to every request.
    ///
    /// - Parameter methodHeaders: The headers of the client's options for the connector's method, which rank
    ///   below the connector's and above the server's and the client's.
    /// - Parameter bodyIsReplaced: Whether the call replaces the connector's body (an upload), which the
    ///   connector's `Content-Length` is then not held to.
    /// - Returns: The blueprint, and whether it is for the client's server (``RequestContext/isForServer``).
    func blueprint(
        for connector: any Connector, traits: ConnectorTraits, methodHeaders: [HTTPHeader] = [],
        optionsContentType: String? = nil, bodyIsReplaced: Bool = false
    ) throws -> (blueprint: RequestBlueprint, isForServer: Bool, base: URL) {
        var blueprint: RequestBlueprint
        let base: URL
        var serverHeaders = serverDefaultHeaders
        var isForServer = true
        let port = connector.port
        if RelativeBase.isRelative(connector.baseURL) {
            guard let configuration else { throw RelativeBase.noServer(endpoint: connector.endpoint) }
            let serverURL = try serverBaseURL?.get() ?? configuration.requireBaseURL()
            var server =
                connector.baseURL == RelativeBase.url
                ? serverURL : try RelativeBase.resolving(connector.baseURL, against: serverURL)
            if let port {
                server = try Route.url(server, withPort: port)
                isForServer = server.hasSameOrigin(as: serverURL)
                if !isForServer { serverHeaders = [] }
            }
            base = server
            blueprint = try ResolvedConnector(wrapped: connector, baseURL: server)
                .makeBlueprint(
                    defaultHeaders: methodHeaders + serverHeaders, defaultHeaders, traits: traits,
                    optionsContentType: optionsContentType, bodyIsReplaced: bodyIsReplaced)
        } else {
            base = try port.map { try Route.url(connector.baseURL, withPort: $0) } ?? connector.baseURL
            if configuration != nil {
                // A configuration that cannot name a server fails every request, as documented: one with a full URL
                // to it would otherwise go without the server's defaults and its signing, and say nothing.
                let serverURL = try serverBaseURL?.get()
                isForServer = serverURL.map { base.hasSameOrigin(as: $0) } ?? false
                if !isForServer { serverHeaders = [] }
            }
            if port != nil {
                blueprint = try ResolvedConnector(wrapped: connector, baseURL: base)
                    .makeBlueprint(
                        defaultHeaders: methodHeaders + serverHeaders, defaultHeaders, traits: traits,
                        optionsContentType: optionsContentType, bodyIsReplaced: bodyIsReplaced)
            } else {
                blueprint = try connector.makeBlueprint(
                    defaultHeaders: methodHeaders + serverHeaders, defaultHeaders, traits: traits,
                    optionsContentType: optionsContentType, bodyIsReplaced: bodyIsReplaced)
            }
        }
        if isForServer, let configuration, !configuration.defaultQueryItems.isEmpty,
            let url = try configuration.appendingDefaultQueryItems(to: blueprint.url)
        {
            blueprint = blueprint.with(url: url)
        }
        return (blueprint, isForServer, base)
    }

    /// The call's ``ConnectCall/pathTemplate``: the path of `base` (the base URL the request was built on) and
    /// `endpoint`, joined as the URL's are, with one slash (`/v1/` and `/todos/{id}` make `/v1/todos/{id}`).
    /// Empty for an empty endpoint, whose base is the whole URL (a `Route(url:)`): its path may hold IDs, unfit
    /// for a label.
    static func pathTemplate(base: URL, endpoint: String) -> String {
        guard !endpoint.isEmpty else { return "" }
        let basePath = URLComponents(url: base, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
        return URLJoin.joined(base: basePath, endpoint: endpoint, keepsSchemeSlashes: false)
    }

    /// The call's deadline when options set one that wins over the connector's own ``Connector/timeout``: the
    /// call's or the connector's options; else, for a connector that keeps the default timeout, the method's
    /// options and then the client's. `nil` keeps the connector's.
    private func deadline(of connector: any Connector, leveled: RequestOptions, method: RequestOptions?)
        -> TimeInterval?
    {
        if let timeout = leveled.timeout { return timeout }
        guard let fallback = method?.timeout ?? options.timeout else { return nil }
        return connector.timeout == Self.defaultConnectorTimeout ? fallback : nil
    }

    /// ``Connector/timeout``'s default.
    static let defaultConnectorTimeout: TimeInterval = 60

    /// Builds, adapts and sends one call. `adjust`, if any, may change the request and its transfer options
    /// (uploads and downloads do) before it enters the pipeline; throwing from it fails the call. `bodyIsReplaced`
    /// says that `adjust` replaces the connector's body (an upload), which then checks any `Content-Length` itself.
    func start(
        _ connector: any Connector,
        debugResponse: Bool,
        options callOptions: RequestOptions,
        bodyIsReplaced: Bool = false,
        adjust: ((inout ConnectRequest, inout TransferOptions) throws -> Void)? = nil
    ) -> Future<ConnectResponse> {
        exchange(
            connector, debugResponse: debugResponse, options: callOptions, bodyIsReplaced: bodyIsReplaced,
            adjust: adjust
        ).checked()
    }

    /// Builds the connector's request, adjusted by `adjust` if given, and sends it through the middlewares and
    /// the transport; the outcome's check is left to the caller (``Exchange``).
    @usableFromInline
    func exchange(
        _ connector: any Connector,
        debugResponse: Bool,
        options callOptions: RequestOptions,
        bodyIsReplaced: Bool = false,
        startedAfter: UInt64? = nil,
        adjust: ((inout ConnectRequest, inout TransferOptions) throws -> Void)? = nil
    ) -> Exchange {
        // Asked here, on the caller's thread and task: some of the call's lines are written on the engine's threads.
        let logger = logger.forCall()
        // Read before anything of the call runs: a cancelAllRequests() from another thread while the request is
        // built, or while `adjust` writes an upload's body file, has to reach this call too (and, for a call that
        // goes on an earlier one, an event source's reconnection, one since that one began: `startedAfter`).
        let cancellationsBefore = startedAfter ?? inFlight.cancellations
        // The connector's and the call's options; then the client's for the method below them, if any.
        let leveled = connector.options.merged(with: callOptions)
        let methodOptions = settings.methodOptions.isEmpty ? nil : settings.methodOptions[connector.method]
        let requestOptions = methodOptions.map { $0.merged(with: leveled) } ?? leveled
        let all = options.merged(with: requestOptions)
        var request: ConnectRequest
        var transfer = TransferOptions(
            maxResponseBytes: all.maxResponseBytes ?? maxResponseBytes,
            progress: all.progress
        )
        transfer.maxRedirects = all.maxRedirects
        transfer.idleTimeout = TransferOptions.usableIdleTimeout(all.idleTimeout)
        let traits = ConnectorTraits.of(type(of: connector))
        let blueprint: RequestBlueprint
        let isForServer: Bool
        let base: URL
        do {
            (blueprint, isForServer, base) = try self.blueprint(
                for: connector, traits: traits, methodHeaders: HTTPHeader.lastValuesWin(methodOptions?.headers ?? []),
                optionsContentType: leveled.headers.last {
                    $0.name.caseInsensitiveCompare("Content-Type") == .orderedSame
                        && !type(of: connector).isBlankContentType($0)
                }?.value, bodyIsReplaced: bodyIsReplaced)
            request = blueprint.makeConnectRequest()
            // The connector's options and the call's replace headers of the same name, the connector's own too.
            // A blank `Content-Type` names none: passed over, as at every level.
            for header in leveled.headers where !type(of: connector).isBlankContentType(header) {
                request.setValue(header.value, forHTTPHeaderField: header.name)
            }
            // Checked now, as every other level's fields are: a stage that answers without the transport (the
            // cache) or holds the request (the queue) must not see a field the wire would refuse.
            if let invalid = leveled.headers.first(where: {
                !HTTPHeader.isValidName($0.name) || !HTTPHeader.isSendableValue($0.value)
            }) {
                var error = ConnectError.invalidRequest(
                    .invalidHeader(name: HTTPHeader.shownName(invalid.name)), sent: request)
                if HTTPHeader.isValidName(invalid.name),
                    let message = HTTPHeader.unsendableValueMessage(name: invalid.name, value: invalid.value)
                {
                    error.message = message
                }
                throw error
            }
            if let deadline = deadline(of: connector, leveled: leveled, method: methodOptions) {
                guard deadline > 0 else {
                    throw ConnectError.invalidRequest(.invalidTimeout(deadline), sent: request)
                }
                request.timeoutInterval = deadline
            }
            if let idle = all.idleTimeout, !(idle > 0) {
                throw ConnectError.invalidIdleTimeout(idle, sent: request)
            }
            try adjust?(&request, &transfer)
            if let error = transfer.negativeLimit(sent: request) { throw error }
        } catch {
            let error = redactsSecrets ? error : ConnectError.showingSecrets(error)
            if debugResponse { logger.log(.debug, DebugOutput.failure(error, for: nil, redacting: redactsSecrets)) }
            return Exchange(sent: Future(error: error), check: nil)
        }
        var context = RequestContext(
            method: HTTPMethod(rawValue: blueprint.method),
            connectorName: traits.name,
            options: contextDefaults.merged(with: requestOptions),
            logger: logger
        )
        context.transfer = transfer
        context.cacheRuleIsClientWide = isClientWideCacheRule(under: requestOptions)
        context.isForServer = isForServer
        if isForServer, configuration != nil { context.serverURL = try? serverBaseURL?.get() }
        return perform(
            request, context: context, all: all, debugResponse: debugResponse, startedAfter: cancellationsBefore,
            pathTemplate: Self.pathTemplate(base: base, endpoint: connector.endpoint))
    }

    /// Whether a request whose method's, connector's and call's options are `requestOptions` takes its cache rule from
    /// the client's own options (``RequestContext/cacheRuleIsClientWide``).
    func isClientWideCacheRule(under requestOptions: RequestOptions) -> Bool {
        !contextDefaults.isEmpty && contextDefaults.cache != nil && requestOptions.cache == nil
    }

    /// Whether `url` is on the client's server (its ``ServerConfiguration``'s scheme, host and port); `true` for a
    /// client without one (``RequestContext/isForServer``).
    func isForServer(_ url: URL) -> Bool {
        guard configuration != nil else { return true }
        return (try? serverBaseURL?.get()).map { url.hasSameOrigin(as: $0) } ?? false
    }

    /// Runs a built request through the retry loop, the middlewares and the transport, and says what its outcome
    /// goes through next: the error handler, the validators and the processors (``Exchange``).
    ///
    /// `all` is the client's options merged with the call's (`context.options`, the connector's and the call's).
    /// `cancellationsBefore` is ``inFlightCancellations`` as read when the call began, before its request was built.
    func perform(
        _ request: ConnectRequest,
        context: RequestContext,
        all: RequestOptions,
        debugResponse: Bool,
        startedAfter cancellationsBefore: UInt64,
        pathTemplate: @autoclosure () -> String? = nil
    ) -> Exchange {
        guard inFlight.cancellations == cancellationsBefore else {
            // A cancelAllRequests() ran while the request was built (an upload's body file written, say): the call
            // is cancelled and nothing goes out. One landing from here on is `track`'s to apply.
            let error = ConnectError.cancelled(sent: request)
            return Exchange(
                sent: Future(error: redactsSecrets ? error : ConnectError.showingSecrets(error)), check: nil)
        }
        var context = context
        context.responseCache = responseCache
        if !settings.observers.isEmpty {
            context.transfer.observation = CallObservation.start(
                ConnectCall(
                    method: context.method, name: context.connectorName,
                    pathTemplate: Redaction.urlText(pathTemplate() ?? ""), request: request),
                observers: settings.observers)
        }
        if debugResponse {
            context.logger.log(
                .debug,
                DebugOutput.request(request.urlRequest, redacting: redactsSecrets, declared: request.declaredSecrets))
        }
        let chain =
            context.options.isEmpty || !context.options.addsStages
            ? self.chain
            : Connect.pipeline(
                middlewares + all.middlewares + builtInStages, plugins: all.plugins, pluginQueue: Connect.pluginQueue,
                transport: transport)
        let sent = RetryingCall.start(
            request, context: context, policy: appliedRetryPolicy, errorHandler: errorHandler, send: chain.send)
        var check = ResponseCheck(
            request: request, errorHandler: errorHandler, validators: all.validators, processors: all.processors,
            debugLogger: debugResponse ? context.logger : nil, redactsSecrets: redactsSecrets)
        check.acceptsEveryStatus = context.options.acceptsEveryStatus == true
        if check.waits, let deadline = TransportDeadline(seconds: request.timeoutInterval) {
            (check.timeout, check.deadline) = (deadline.seconds, deadline.time)
        }
        var exchange = Exchange(sent: sent, check: check)
        if check.waits {
            // The call lasts until its processors are done: that future is the one to cancel and to count.
            exchange.trackProcessed = { [inFlight] in inFlight.track($0, startedAfter: cancellationsBefore) }
        } else {
            inFlight.track(sent, startedAfter: cancellationsBefore)
        }
        return exchange
    }

    /// The body of a response future, as a future that knows the response, for `decoded(toType:)` to choose a
    /// decoder by content type.
    func body(of response: Future<ConnectResponse>) -> Future<Data> {
        ResponseBodySource.body(of: response, decoders: decoders)
    }
}

extension Connect {
    /// How many times ``cancelAllRequests()`` has run: read before starting something to ``track(_:startedAfter:)``.
    var inFlightCancellations: UInt64 { inFlight.cancellations }

    /// Remembers a request until it completes, for ``cancelAllRequests()`` (see ``InFlightCalls``).
    func track<Value>(_ future: Future<Value>, startedAfter cancellations: UInt64) {
        inFlight.track(future, startedAfter: cancellations)
    }
}

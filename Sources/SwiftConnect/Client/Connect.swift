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
/// A request goes through a fixed pipeline: the connector is built into a `URLRequest` (no I/O; invalid
/// input fails here with ``ConnectError/Kind/invalidRequest``), the client's default headers are added, the
/// request passes through the ``Middleware``s in order to the ``Transport``, and the response comes back
/// through them in reverse. A status outside 200..<300 then goes to the ``ErrorHandling`` error handler.
///
/// `Connect` is thread-safe; share one per backend.
public final class Connect: Sendable {
    /// The shared client, with a ``URLSessionTransport``, no middleware and the default ``ErrorHandler``.
    public static let `default` = Connect()

    /// What sends requests.
    public let transport: any Transport
    /// The middlewares every request passes through, in order.
    public let middlewares: [any Middleware]
    /// What turns error responses into errors.
    public let errorHandler: any ErrorHandling
    /// Headers added to every request that does not set them already.
    public let defaultHeaders: [HTTPHeader]
    /// Whether debug output hides secrets (`Authorization`, cookies, password-like fields). Defaults to `true`.
    public let redactsSecrets: Bool
    private let customLogger: (any ConnectLogger)?
    private let chain: MiddlewareChain
    private let inFlight = Protected(InFlightRequests())

    /// Creates a client.
    ///
    /// ```swift
    /// let connect = Connect(
    ///     transport: URLSessionTransport(),
    ///     middlewares: [LocaleMiddleware()],
    ///     errorHandler: ErrorHandler()
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - transport: What sends requests. Defaults to a new ``URLSessionTransport``.
    ///   - middlewares: Stages every request passes through, in order.
    ///   - errorHandler: Turns error responses into errors. Defaults to ``ErrorHandler``.
    ///   - defaultHeaders: Headers for every request that does not set them. Defaults to
    ///     `Accept: application/json`.
    ///   - logger: Where debug output goes. Defaults to ``ConnectLogging/logger`` (standard error).
    ///   - redactsSecrets: Whether debug output hides secrets. Defaults to `true`.
    public init(
        transport: any Transport = URLSessionTransport(),
        middlewares: [any Middleware] = [],
        errorHandler: any ErrorHandling = ErrorHandler(),
        defaultHeaders: [HTTPHeader] = [.accept("application/json")],
        logger: (any ConnectLogger)? = nil,
        redactsSecrets: Bool = true
    ) {
        self.transport = transport
        self.middlewares = middlewares
        self.errorHandler = errorHandler
        self.defaultHeaders = defaultHeaders
        self.customLogger = logger
        self.redactsSecrets = redactsSecrets
        self.chain = MiddlewareChain(middlewares: middlewares, transport: transport)
    }

    /// The usage guide's initializer: one middleware and an error handler.
    ///
    /// ```swift
    /// let connect = Connect(middleware: ConnectMiddleware(), errorHandler: ErrorHandler())
    /// ```
    ///
    /// - Parameters:
    ///   - middleware: The middleware every request passes through.
    ///   - errorHandler: Turns error responses into errors.
    public convenience init(middleware: any Middleware, errorHandler: any ErrorHandling) {
        self.init(middlewares: [middleware], errorHandler: errorHandler)
    }

    /// Where this client logs.
    public var logger: any ConnectLogger { customLogger ?? ConnectLogging.logger }
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
    ///     ``logger`` (secrets hidden unless ``redactsSecrets`` is `false`).
    /// - Returns: A future of the body of a 2xx response (or of a response the error handler accepted).
    ///   It fails with a ``ConnectError``, or with the error your ``ErrorHandling`` returned.
    public func request(_ request: any Connector, debugResponse: Bool = false) -> Future<Data> {
        response(for: request, debugResponse: debugResponse).map { $0.data }
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
    /// - Returns: A future of the response; error statuses fail it as for ``request(_:debugResponse:)``.
    public func response(for connector: any Connector, debugResponse: Bool = false) -> Future<ConnectResponse> {
        let request: URLRequest
        do {
            request = try prepare(connector)
        } catch {
            if debugResponse { logger.log(.debug, DebugOutput.failure(error, for: nil, redacting: redactsSecrets)) }
            return Future(error: error)
        }
        let context = RequestContext(
            method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
            connectorName: String(describing: type(of: connector)),
            logger: logger
        )
        return perform(request, context: context, debugResponse: debugResponse)
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
    /// - Returns: A future of the decoded response.
    public func send<Endpoint: TypedConnector>(
        _ connector: Endpoint,
        debugResponse: Bool = false
    ) -> Future<Endpoint.Response> {
        request(connector, debugResponse: debugResponse)
            .decoded(toType: Endpoint.Response.self, decoder: connector.decoder)
    }

    /// Cancels every request of this client that has not completed; each fails with
    /// ``ConnectError/Kind/cancelled`` and its network task is cancelled.
    public func cancelAllRequests() {
        let requests = inFlight.withLock { $0.removeAll() }
        for request in requests { request.cancel() }
    }

    /// How many requests of this client have started and not completed.
    public var requestsInFlight: Int {
        inFlight.withLock { $0.count }
    }
}

// MARK: - Pipeline

extension Connect {
    /// Builds the request and adds the client's default headers. Pure: no I/O.
    func prepare(_ connector: any Connector) throws -> URLRequest {
        var request = try connector.asURLRequest()
        for header in defaultHeaders where request.value(forHTTPHeaderField: header.name) == nil {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        return request
    }

    /// Runs a built request through the middlewares, the transport and the error handler.
    func perform(_ request: URLRequest, context: RequestContext, debugResponse: Bool) -> Future<ConnectResponse> {
        if debugResponse { logger.log(.debug, DebugOutput.request(request, redacting: redactsSecrets)) }
        let sent = chain.send(request, context: context)
        let errorHandler = self.errorHandler
        let validated = sent.transformResult { result in
            Connect.validate(result, request: request, errorHandler: errorHandler)
        }
        if debugResponse {
            let logger = self.logger
            let redacting = redactsSecrets
            validated.whenComplete { result in
                logger.log(.debug, DebugOutput.outcome(result, of: request, redacting: redacting))
            }
        }
        track(validated)
        return validated
    }

    /// Applies the error handler to an error status; normalises transport errors to ``ConnectError``.
    static func validate(
        _ result: Result<ConnectResponse, any Error>,
        request: URLRequest,
        errorHandler: any ErrorHandling
    ) -> Result<ConnectResponse, any Error> {
        switch result {
        case .success(let response):
            if response.isSuccess { return result }
            if let error = errorHandler.handle(response) { return .failure(error) }
            return result
        case .failure(let error):
            if error is ConnectError { return result }
            if error is URLError { return .failure(ConnectError.transportFailure(error, request: request)) }
            return result
        }
    }

    /// Remembers a request until it completes, for ``cancelAllRequests()``.
    private func track(_ future: Future<ConnectResponse>) {
        guard !future.isCompleted else { return }
        let id = inFlight.withLock { $0.insert(future) }
        future.whenComplete { [inFlight] _ in
            inFlight.withLock { $0.remove(id) }
        }
    }
}

/// The requests of one client that have not completed.
struct InFlightRequests {
    private var requests: [UInt64: any CancellableFuture] = [:]
    private var nextID: UInt64 = 0

    var count: Int { requests.count }

    mutating func insert(_ future: any CancellableFuture) -> UInt64 {
        nextID &+= 1
        requests[nextID] = future
        return nextID
    }

    mutating func remove(_ id: UInt64) {
        requests[id] = nil
    }

    mutating func removeAll() -> [any CancellableFuture] {
        defer { requests.removeAll() }
        return Array(requests.values)
    }
}

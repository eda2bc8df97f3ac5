import Foundation

/// A ready-made connector for endpoints nobody wrote a type for.
///
/// Give it a full base URL, or leave the base out and send it with a client that has a
/// ``ServerConfiguration`` (such as `Connect(host:)`):
///
/// ```swift
/// let api = Connect(host: "api.example.com")
/// let route = Route("/users/{id}", method: .get, parameters: Parameter.path(key: "id", value: "42"))
/// api.request(route).decoded(toType: User.self)
///
/// let absolute = Route("/status", baseURL: URL(string: "https://status.example.com")!)
/// let metrics = Route("/metrics", port: 9090)  // the client's server, on port 9090
/// ```
public struct Route: Connector, AuthorizedConnector {
    /// The base URL; a relative one (the default) is replaced by the client's server.
    public var baseURL: URL
    /// The port to send to, replacing the port of the client's server (or of ``baseURL``); `nil` keeps it.
    ///
    /// Another port is another origin: the server's default headers and query items
    /// (``ServerConfiguration/defaultHeaders``) are not sent there. A port outside 1...65535 fails the request
    /// with ``ConnectError/Kind/invalidRequest``.
    public var port: Int?
    /// The endpoint, with `{placeholders}` for `.path` parameters.
    public var endpoint: String
    /// The method.
    public var method: HTTPMethod
    /// The headers.
    public var headers: [HTTPHeader]
    /// The parameters.
    public var parameters: (any ParametersRepresentable)?
    /// The credential to send, if any.
    public var authorizationToken: AuthorizationToken?
    /// The call's deadline, in seconds, to the last byte of the response: attempts, the waits between them and
    /// time in a ``RequestQueue`` included (see ``Connector/timeout``).
    public var timeout: TimeInterval
    /// Options for this route's requests.
    public var options: RequestOptions

    /// Creates a route.
    ///
    /// - Parameters:
    ///   - endpoint: The path, such as `/todos/{id}`.
    ///   - baseURL: The server; `nil` (the default) uses the sending client's ``ServerConfiguration``.
    ///   - port: The port, replacing the server's; `nil` (the default) keeps it.
    ///   - method: The method; GET by default.
    ///   - parameters: Path values, query items and body.
    ///   - headers: Headers.
    ///   - authorizationToken: A credential to send.
    ///   - timeout: The call's deadline in seconds, attempts and waits included (see ``Connector/timeout``); 60
    ///     by default.
    ///   - options: Options for these requests.
    public init(
        _ endpoint: String,
        baseURL: URL? = nil,
        port: Int? = nil,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil,
        headers: [HTTPHeader] = [],
        authorizationToken: AuthorizationToken? = nil,
        timeout: TimeInterval = 60,
        options: RequestOptions = RequestOptions()
    ) {
        self.endpoint = endpoint
        self.baseURL = baseURL ?? RelativeBase.url
        self.port = port
        self.method = method
        self.parameters = parameters
        self.headers = headers
        self.authorizationToken = authorizationToken
        self.timeout = timeout
        self.options = options
    }
}

extension Route {
    /// `url` with its port replaced by `port`; a URL without a host is returned as it is (joining it fails).
    ///
    /// - Throws: ``ConnectError/Kind/invalidRequest`` when `port` is outside 1...65535.
    static func url(_ url: URL, withPort port: Int) throws -> URL {
        guard (1...65_535).contains(port) else {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(url.absoluteString)))
            error.message = "the connector's port \(port) is not in 1...65535"
            throw error
        }
        guard url.host != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return url
        }
        components.port = port
        return components.url ?? url
    }
}

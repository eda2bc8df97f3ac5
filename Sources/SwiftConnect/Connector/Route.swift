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

// MARK: - A full URL

extension Route {
    /// A route to a full URL, for one-off calls outside the client's server (a link from a response, a
    /// pre-signed upload URL): its query is kept and `.query` parameters follow it.
    ///
    /// ```swift
    /// let next = Route(url: URL(string: "https://api.example.com/todos?page=2")!)
    /// connect.request(next).decoded(toType: [Todo].self)
    /// ```
    ///
    /// - Parameters:
    ///   - url: The URL, scheme and host included.
    ///   - method: The method; GET by default.
    ///   - parameters: Query items and body (the URL has no `{placeholders}` to fill).
    ///   - headers: Headers.
    ///   - authorizationToken: A credential to send.
    ///   - timeout: The call's deadline in seconds (see ``Connector/timeout``); 60 by default.
    ///   - options: Options for these requests.
    public init(
        url: URL,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil,
        headers: [HTTPHeader] = [],
        authorizationToken: AuthorizationToken? = nil,
        timeout: TimeInterval = 60,
        options: RequestOptions = RequestOptions()
    ) {
        self.init(
            "", baseURL: url, method: method, parameters: parameters, headers: headers,
            authorizationToken: authorizationToken, timeout: timeout, options: options)
    }
}

// MARK: - Dictionary parameters and headers

extension Route {
    /// Creates a route whose parameters are written by key, as `[String: Any]` was in Remotli, Konex and JustAPIs:
    /// query items for GET, HEAD and DELETE, the body otherwise (see ``JSONObject``).
    ///
    /// ```swift
    /// let login = Route("/login", method: .post, parameters: ["username": name, "password": password])
    /// let search = Route("/search", parameters: ["q": query, "page": 2], headers: ["Accept-Language": "fr"])
    /// ```
    ///
    /// - Parameters:
    ///   - endpoint: The path, such as `/todos/{id}`.
    ///   - baseURL: The server; `nil` (the default) uses the sending client's ``ServerConfiguration``.
    ///   - port: The port, replacing the server's; `nil` (the default) keeps it.
    ///   - method: The method; GET by default.
    ///   - parameters: The values by key.
    ///   - headers: Headers by name, sent in the order of their names.
    ///   - authorizationToken: A credential to send.
    ///   - timeout: The call's deadline in seconds (see ``Connector/timeout``); 60 by default.
    ///   - options: Options for these requests.
    public init(
        _ endpoint: String,
        baseURL: URL? = nil,
        port: Int? = nil,
        method: HTTPMethod = .get,
        parameters: JSONObject,
        headers: [String: String] = [:],
        authorizationToken: AuthorizationToken? = nil,
        timeout: TimeInterval = 60,
        options: RequestOptions = RequestOptions()
    ) {
        self.init(
            endpoint, baseURL: baseURL, port: port, method: method, parameters: parameters as JSONObject?,
            headers: HTTPHeader.list(headers), authorizationToken: authorizationToken, timeout: timeout,
            options: options)
    }

    /// Creates a route with headers by name, as the libraries that took `[String: String]` did.
    ///
    /// ```swift
    /// let me = Route("/me", headers: ["Accept": "application/json", "X-Client": "ios"])
    /// ```
    ///
    /// - Parameters:
    ///   - endpoint: The path, such as `/todos/{id}`.
    ///   - baseURL: The server; `nil` (the default) uses the sending client's ``ServerConfiguration``.
    ///   - port: The port, replacing the server's; `nil` (the default) keeps it.
    ///   - method: The method; GET by default.
    ///   - parameters: Path values, query items and body.
    ///   - headers: Headers by name, sent in the order of their names.
    ///   - authorizationToken: A credential to send.
    ///   - timeout: The call's deadline in seconds (see ``Connector/timeout``); 60 by default.
    ///   - options: Options for these requests.
    public init(
        _ endpoint: String,
        baseURL: URL? = nil,
        port: Int? = nil,
        method: HTTPMethod = .get,
        parameters: (any ParametersRepresentable)? = nil,
        headers: [String: String],
        authorizationToken: AuthorizationToken? = nil,
        timeout: TimeInterval = 60,
        options: RequestOptions = RequestOptions()
    ) {
        self.init(
            endpoint, baseURL: baseURL, port: port, method: method, parameters: parameters,
            headers: HTTPHeader.list(headers), authorizationToken: authorizationToken, timeout: timeout,
            options: options)
    }
}

extension Route: CustomReflectable {
    /// The route's properties as the default reflection shows them, but with secrets hidden as SwiftConnect's output
    /// hides them: the base URL and the endpoint without `user:password@` and with secret query values hidden, the
    /// headers and credential through their own redacted reflection, and the parameters as the list of ``Parameter``s
    /// they make (whose reflection hides secret values, whatever type of your own made them). What `print(route)` and
    /// `dump(route)` show.
    ///
    /// As in the description of the request the route makes, the secret values it carries (its credential, the values
    /// of its secret headers, query items and fields, a base URL's password) are also hidden wherever else they show:
    /// a custom header repeating the token, a parameter quoting it.
    public var customMirror: Mirror {
        let secrets = SecretValues(of: self)
        var shownOptions = options
        if !secrets.isEmpty && !options.headers.isEmpty {
            shownOptions.headers = options.headers.map { $0.hidingValue(secrets) }
        }
        return Mirror(
            self,
            children: [
                "baseURL": RedactedText(secrets.hiding(in: Redaction.url(baseURL, redacting: true))),
                "port": port as Any,
                "endpoint": secrets.hiding(in: Redaction.urlText(endpoint)), "method": method,
                "headers": headers.map { $0.hidingValue(secrets) },
                "parameters": parameters.map { $0.parameterList.map { $0.hidingValues(secrets) } } as Any,
                "authorizationToken": authorizationToken as Any, "timeout": timeout, "options": shownOptions,
            ],
            displayStyle: .struct)
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
        // Whole: a URL made `relativeTo:` a base would lose its base (scheme, host) in its parts.
        guard url.host != nil, var components = URLComponents(url: url.absoluteURL, resolvingAgainstBaseURL: false)
        else {
            return url
        }
        components.port = port
        return components.url ?? url
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A description of one HTTP request: where it goes, how, and with what.
///
/// A connector is usually an enum with one case per route of an API. It only describes the request;
/// ``asURLRequest()`` turns the description into a `URLRequest` (substituting path values, encoding the query
/// and the body, checking headers) and `Connect` sends it.
///
/// Implement ``baseURL`` and ``endpoint``; everything else has a default (GET, no headers, no parameters, 60 s). For
/// requests modelled as a class hierarchy, subclass ``BasicConnector``.
///
/// ```swift
/// enum TodoConnector: Connector {
///     case get(id: Int)
///
///     var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
///     var endpoint: String { "/todos/{id}" }
///     var method: HTTPMethod { .get }
///     var headers: [HTTPHeader] { [] }
///
///     var parameters: ParametersRepresentable? {
///         switch self {
///         case .get(let id): return Parameter.path(key: "id", value: "\(id)")
///         }
///     }
/// }
///
/// let request = try TodoConnector.get(id: 123).asURLRequest()
/// // GET https://jsonplaceholder.typicode.com/todos/123
/// ```
///
/// A connector need not be `Sendable`: it is turned into a `URLRequest` on the caller's thread, before
/// anything crosses a concurrency boundary. To send credentials, also conform to ``AuthorizedConnector``.
public protocol Connector {
    /// The server's base URL, such as `https://api.example.com/v1`. The ``endpoint`` is appended to it.
    ///
    /// A relative base URL, with no scheme and no host (such as `URL(string: "/v1")!`, or `/` for none), leaves the
    /// server to the client: ``Connect`` resolves it against its ``ServerConfiguration``, so the same connectors
    /// reach production, staging or a test server depending on the client that sends them. Such a connector
    /// sent by a client without a configuration, or built with ``asURLRequest()`` alone, fails with
    /// ``ConnectError/Kind/invalidRequest``.
    ///
    /// ```swift
    /// var baseURL: URL { URL(string: "/v1")! }
    /// let staging = Connect(configuration: ServerConfiguration(host: "staging.example.com"))
    /// // staging.request(NotesConnector.list) → GET https://staging.example.com/v1/notes
    /// ```
    var baseURL: URL { get }

    /// The path appended to ``baseURL``, such as `"/users/{userId}/todos"`.
    ///
    /// Each `{name}` placeholder is replaced by the value of the `.path(key: "name", …)` parameter, encoded as a
    /// single path segment. The endpoint may end with a literal query (`"/todos?sort=asc"`), which comes before
    /// the `.query` parameters. Non-ASCII text (`"/städte/{id}"`, `"/search?q=é"`) is sent percent-encoded as its
    /// UTF-8 bytes, as written (not Unicode-normalized): `/st%C3%A4dte/…`; `%XX` escapes already written are kept.
    /// Brackets, a query convention (`"/todos?filter[status]=open"`), are sent as `%5B` and `%5D`. Any other
    /// character must be one valid in a URL (use `%XX` escapes for others): a space, a `|` or a stray brace makes
    /// ``asURLRequest()`` throw.
    var endpoint: String { get }

    /// The request method, such as ``HTTPMethod/get``.
    var method: HTTPMethod { get }

    /// Headers to send, in order. A later header replaces an earlier one with the same name (ignoring case).
    var headers: [HTTPHeader] { get }

    /// The path values, query items and body of the request: a ``Parameter``, a ``CompositeParameters``,
    /// or `nil` for none.
    var parameters: (any ParametersRepresentable)? { get }

    /// How many seconds the whole call may take, from the moment it starts to the last byte of its response, before
    /// it fails with ``ConnectError/Kind/timedOut``. Defaults to 60.
    ///
    /// It is the caller's deadline, and everything the call does counts against it: every attempt (connecting,
    /// redirects and the upload included), the waits between attempts (backoff, or `Retry-After`), the time the
    /// request waits in a ``RequestQueue`` or for connectivity, and the time middleware takes, such as renewing a
    /// token. When it passes, the attempt in flight is cancelled and no other one is sent; a wait between attempts
    /// that would end after it is not started, and the call ends with the outcome it has. A call with the default
    /// retry policy therefore never takes much longer than this, however many attempts it makes.
    ///
    /// The value also becomes the request's `timeoutInterval`, which each transport enforces for the attempt it is
    /// given (a middleware may lower it for one attempt). It must be positive: zero, a negative
    /// value or NaN fails the call with ``ConnectError/InvalidRequestReason/invalidTimeout(_:)``; `.infinity`
    /// means no timeout.
    var timeout: TimeInterval { get }

    /// The cache policy of the request. Defaults to `.useProtocolCachePolicy`.
    ///
    /// A client's ``ResponseCache`` honours it for requests with a ``CacheRule``: the `reloadIgnoring…` policies
    /// fetch fresh (and store), `.reloadRevalidatingCacheData` revalidates a stored response that has an `ETag` or a
    /// `Last-Modified` (a conditional request, whose 304 serves it), `.returnCacheDataElseLoad` serves a stored
    /// response even past its time to live, and `.returnCacheDataDontLoad` serves one or fails, nothing sent (see
    /// ``CacheRule``). It also reaches
    /// `URLSession`'s own `URLCache`, which ``URLSessionTransport/defaultConfiguration`` leaves out.
    var cachePolicy: URLRequest.CachePolicy { get }

    /// The encoder for `.jsonObject` bodies. Defaults to a plain `JSONEncoder()`.
    ///
    /// Return your own to change key or date strategies:
    ///
    /// ```swift
    /// var jsonEncoder: JSONEncoder {
    ///     let encoder = JSONEncoder()
    ///     encoder.keyEncodingStrategy = .convertToSnakeCase
    ///     return encoder
    /// }
    /// ```
    var jsonEncoder: JSONEncoder { get }

    /// Middlewares, plugins, validators, processors, retry and cache rules for this connector's requests,
    /// added to the client's. Defaults to none.
    ///
    /// ```swift
    /// var options: RequestOptions {
    ///     let requireETag = AnyResponseValidator { response in
    ///         if response.header("ETag") == nil { throw URLError(.badServerResponse) }
    ///     }
    ///     return RequestOptions(validators: [requireETag], isRetrySafe: true)
    /// }
    /// ```
    var options: RequestOptions { get }

    /// The port to send to, replacing the port of ``baseURL`` (or of the client's server, for a relative connector);
    /// `nil`, the default, keeps it. Another port is another origin: the server's default headers and query items
    /// are not sent there, and a port outside 1...65535 fails the request with
    /// ``ConnectError/Kind/invalidRequest``.
    ///
    /// ```swift
    /// var port: Int? { 9090 }  // the same server's metrics endpoint
    /// ```
    var port: Int? { get }
}

// MARK: - Defaults

extension Connector {
    /// The default timeout: 60 seconds.
    public var timeout: TimeInterval { 60 }

    /// The default cache policy: `.useProtocolCachePolicy`.
    public var cachePolicy: URLRequest.CachePolicy { .useProtocolCachePolicy }

    /// The default JSON encoder: a new `JSONEncoder()` with default strategies.
    public var jsonEncoder: JSONEncoder { JSONEncoder() }

    /// No connector-level options.
    public var options: RequestOptions { RequestOptions() }

    /// The port of the base URL (or of the client's server): `nil`.
    public var port: Int? { nil }

    /// The default method: GET.
    ///
    /// A class that conforms to `Connector` and leaves this out gets GET for every subclass, whatever a subclass
    /// declares: Swift calls a protocol's default, not a subclass's property, unless the conforming class declares
    /// the property itself. Subclass ``BasicConnector``, which declares every requirement, rather than conforming
    /// a base class of your own.
    public var method: HTTPMethod { .get }

    /// The default headers: none.
    public var headers: [HTTPHeader] { [] }

    /// The default parameters: none.
    public var parameters: (any ParametersRepresentable)? { nil }
}

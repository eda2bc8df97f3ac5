import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A base class for requests modelled as a class hierarchy, as Konex's `KonexBasicRequest` and JustAPIs' request
/// classes were: every member of ``Connector`` and ``AuthorizedConnector`` is declared here and `open`, so a
/// subclass overrides any of them and the client sees the override.
///
/// ```swift
/// class APIRequest: BasicConnector {
///     override var baseURL: URL { URL(string: "https://api.example.com/v1")! }
///     override var headers: [HTTPHeader] { [.accept("application/json")] }
/// }
///
/// final class Login: APIRequest {
///     let username: String
///     let password: String
///     init(username: String, password: String) {
///         self.username = username
///         self.password = password
///     }
///     override var endpoint: String { "/login" }
///     override var method: HTTPMethod { .post }
///     override var parameters: (any ParametersRepresentable)? {
///         ["username": username, "password": password] as JSONObject
///     }
/// }
///
/// connect.request(Login(username: "ada", password: secret)).decoded(toType: Session.self)
/// ```
///
/// Why a class of the library's: a base class of your own that conforms to ``Connector`` without declaring, say,
/// `method` gets the protocol's default for every subclass, and a subclass's `method` is silently never called.
/// Here each member is declared once, so that trap cannot happen.
///
/// Its defaults are the protocol's: the client's server (a relative ``baseURL``), the endpoint `""`, GET, no headers,
/// no parameters, no credential, 60 seconds.
open class BasicConnector: Connector, AuthorizedConnector {
    /// Creates a request with every default.
    public init() {}

    /// The server: by default none of its own, so the sending client's ``ServerConfiguration`` is used.
    open var baseURL: URL { RelativeBase.url }
    /// The path after ``baseURL``: `""` by default.
    open var endpoint: String { "" }
    /// The method: GET by default.
    open var method: HTTPMethod { .get }
    /// The headers: none by default.
    open var headers: [HTTPHeader] { [] }
    /// The parameters: none by default.
    open var parameters: (any ParametersRepresentable)? { nil }
    /// The credential: none by default.
    open var authorizationToken: AuthorizationToken? { nil }
    /// The call's deadline in seconds: 60 by default (see ``Connector/timeout``).
    open var timeout: TimeInterval { 60 }
    /// The cache policy: `.useProtocolCachePolicy` by default.
    open var cachePolicy: URLRequest.CachePolicy { .useProtocolCachePolicy }
    /// The encoder of JSON bodies: a plain `JSONEncoder()` by default.
    open var jsonEncoder: JSONEncoder { JSONEncoder() }
    /// Options for these requests: none by default.
    open var options: RequestOptions { RequestOptions() }
    /// The port, replacing the server's: `nil` by default.
    open var port: Int? { nil }
}

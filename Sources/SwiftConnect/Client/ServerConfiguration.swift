import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a client's server lives, and what every request to it carries: for apps that talk to several
/// services, one value per service.
///
/// ```swift
/// enum Services {
///     static let api = ServerConfiguration(host: "api.example.com", defaultHeaders: [.userAgent("MyApp/1.0")])
///     static let images = ServerConfiguration(scheme: .http, host: "localhost", port: 8080)
/// }
/// let api = Connect(configuration: Services.api)
/// ```
public struct ServerConfiguration: Sendable, Equatable {
    /// The URL scheme.
    public enum Scheme: String, Sendable, Equatable {
        /// Plain HTTP.
        case http
        /// HTTP over TLS, the default.
        case https
    }

    /// The scheme; `https` by default.
    public var scheme: Scheme
    /// The host name, such as `api.example.com`.
    public var host: String
    /// The port; `nil` for the scheme's default.
    public var port: Int?
    /// A path prefix for every endpoint, such as `/v2`.
    public var basePath: String
    /// Headers added to every request that does not set them.
    public var defaultHeaders: [HTTPHeader]
    /// Query items appended to every request, after the connector's, in order.
    public var defaultQueryItems: [URLQueryItem]

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - scheme: The scheme; `https` by default.
    ///   - host: The host name, without scheme.
    ///   - port: The port; `nil` for the scheme's default.
    ///   - basePath: A path prefix for every endpoint.
    ///   - defaultHeaders: Headers for every request.
    ///   - defaultQueryItems: Query items for every request.
    public init(
        scheme: Scheme = .https,
        host: String,
        port: Int? = nil,
        basePath: String = "",
        defaultHeaders: [HTTPHeader] = [],
        defaultQueryItems: [URLQueryItem] = []
    ) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.basePath = basePath
        self.defaultHeaders = defaultHeaders
        self.defaultQueryItems = defaultQueryItems
    }

    /// The base URL, such as `https://api.example.com:8443/v2`, or `nil` when the parts do not make one.
    public var baseURL: URL? {
        var components = URLComponents()
        components.scheme = scheme.rawValue
        components.host = host
        components.port = port
        let path = basePath.hasPrefix("/") || basePath.isEmpty ? basePath : "/" + basePath
        components.percentEncodedPath = path
        guard !host.isEmpty, host.allSatisfy({ !$0.isWhitespace && $0 != "/" && $0 != "?" && $0 != "#" }) else {
            return nil
        }
        return components.url
    }

    func requireBaseURL() throws -> URL {
        guard let url = baseURL else {
            throw ConnectError.invalidRequest(
                .invalidURL("\(scheme.rawValue)://\(host)\(port.map { ":\($0)" } ?? "")\(basePath)"))
        }
        return url
    }

    /// `url` with the default query items appended, RFC 3986 encoded.
    func appendingDefaultQueryItems(to url: URL?) -> URL? {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        let added = defaultQueryItems.map { item in
            PercentEncoding.encoded(item.name) + "=" + PercentEncoding.encoded(item.value ?? "")
        }.joined(separator: "&")
        if let existing = components.percentEncodedQuery, !existing.isEmpty {
            components.percentEncodedQuery = existing + "&" + added
        } else {
            components.percentEncodedQuery = added
        }
        return components.url ?? url
    }
}

/// The base URL of a connector meant to be sent by a client with a ``ServerConfiguration``.
enum RelativeBase {
    /// `/`: a connector whose `baseURL` has no scheme and no host is resolved against the client's server.
    static let url = URL(fileURLWithPath: "/").standardized

    static func isRelative(_ url: URL) -> Bool {
        url.host == nil && (url.scheme == nil || url.isFileURL)
    }
}

/// A connector with its base URL replaced by the client's server, everything else forwarded.
struct ResolvedConnector: Connector, AuthorizedConnector {
    let wrapped: any Connector
    let baseURL: URL

    var endpoint: String { wrapped.endpoint }
    var method: HTTPMethod { wrapped.method }
    var headers: [HTTPHeader] { wrapped.headers }
    var parameters: (any ParametersRepresentable)? { wrapped.parameters }
    var timeout: TimeInterval { wrapped.timeout }
    var cachePolicy: URLRequest.CachePolicy { wrapped.cachePolicy }
    var jsonEncoder: JSONEncoder { wrapped.jsonEncoder }
    var options: RequestOptions { wrapped.options }
    var authorizationToken: AuthorizationToken? { (wrapped as? any AuthorizedConnector)?.authorizationToken }
}

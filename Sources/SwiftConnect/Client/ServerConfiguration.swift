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
    /// A path prefix for every endpoint, such as `/v2`: percent-encoded text, whose non-ASCII text is sent
    /// percent-encoded as its UTF-8 bytes, as an endpoint's is (`/städte` → `/st%C3%A4dte`).
    public var basePath: String
    /// Headers added to every request to this server that does not set them. A connector whose absolute base
    /// URL names another scheme, host or port does not get them. A name given twice (ignoring case) is one field,
    /// with the later value, as in a connector's ``Connector/headers``: write a list value as one (`"a, b"`).
    public var defaultHeaders: [HTTPHeader]
    /// Query items appended to every request to this server that does not have an item of the same name
    /// already, after the connector's, in order: the request's own value wins. A connector whose absolute base
    /// URL names another scheme, host or port does not get them. An item with an empty name fails each request to
    /// the server with ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``, as a `.query` item's does.
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

    /// Why the URL this configuration was made from cannot be a server's (``init(baseURL:defaultHeaders:)``).
    private var urlProblem: String?
    /// That URL, secrets hidden, shown in place of the parts read from it: they need not be what was meant, and
    /// may hold a secret no longer marked as one (the password of `amy:pw@host`, read as the path `pw@host`).
    private var shownURLWithProblem: String?
    /// The query items of the base URL this configuration was made from, as they were written there, beside
    /// ``defaultQueryItems`` as they were read from it: sent as written while those are unchanged (`+` stays `+`,
    /// a bare `debug` stays bare).
    private var writtenQuery: WrittenQuery?

    private struct WrittenQuery: Sendable, Equatable {
        let decoded: [URLQueryItem]
        let encoded: [URLQueryItem]
    }

    /// A configuration from a base URL, such as JustAPIs' and Remotli's clients took: its scheme, host, port and
    /// path (the base path), and its query items as ``defaultQueryItems``.
    ///
    /// ```swift
    /// let api = Connect(configuration: ServerConfiguration(baseURL: URL(string: "http://gateway.local:5000/v2")!))
    /// // api.request("/todos") → GET http://gateway.local:5000/v2/todos
    /// ```
    ///
    /// A URL that cannot name a server (a scheme other than http or https, no host, a `user:password@` part, a
    /// fragment) makes every request of a client with this configuration fail with
    /// ``ConnectError/Kind/invalidRequest`` saying why, nothing sent; ``baseURL`` is then `nil`.
    ///
    /// - Parameters:
    ///   - baseURL: The server's URL, with the path every endpoint goes under.
    ///   - defaultHeaders: Headers for every request.
    public init(baseURL: URL, defaultHeaders: [HTTPHeader] = []) {
        let components = URLComponents(url: baseURL, resolvingAgainstBaseURL: true)
        let scheme = components?.scheme?.lowercased()
        var host = components?.host ?? ""
        // An IPv6 address, written as a URL writes it (Foundation hands it over bracketed on Linux, bare on Apple).
        if host.contains(":"), !host.hasPrefix("[") { host = "[" + host + "]" }
        let queryItems = components?.queryItems ?? []
        self.init(
            scheme: scheme == "http" ? .http : .https, host: host, port: components?.port,
            basePath: components?.percentEncodedPath ?? "", defaultHeaders: defaultHeaders,
            defaultQueryItems: queryItems)
        if let encoded = components?.percentEncodedQueryItems, encoded.count == queryItems.count {
            writtenQuery = WrittenQuery(decoded: queryItems, encoded: encoded)
        }
        let shown = Redaction.urlText(baseURL.absoluteString)
        if scheme != "http" && scheme != "https" {
            urlProblem = "'\(shown)' is not an http or https URL"
        } else if components?.user != nil || components?.password != nil {
            urlProblem =
                "the base URL holds a user name or password: give credentials as an AuthorizationToken or through "
                + "an authentication middleware, not in a URL that every log would show"
        } else if components?.fragment != nil {
            urlProblem = "the base URL '\(shown)' has a fragment ('#…'), which no request sends"
        } else if host.isEmpty {
            urlProblem = "the base URL '\(shown)' has no host"
        }
        if urlProblem != nil { shownURLWithProblem = shown }
    }

    /// The base URL, such as `https://api.example.com:8443/v2`, or `nil` when the parts do not make one: an
    /// empty host or one with a scheme, port, path or spaces in it, a port outside 1...65535, or a base path with
    /// characters a URL path cannot hold (`basePath` is percent-encoded text: write a space as `%20`; non-ASCII text
    /// is percent-encoded as its UTF-8 bytes, as in an endpoint) or with a `.` or `..` segment (`/api/../v2`).
    public var baseURL: URL? {
        try? requireBaseURL()
    }

    /// ``baseURL``, or an ``ConnectError/Kind/invalidRequest`` error that says which part is wrong.
    func requireBaseURL() throws -> URL {
        if let problem = problem {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(attemptedURL)))
            error.message = "the ServerConfiguration does not make a base URL: \(problem)"
            throw error
        }
        var components = URLComponents()
        components.scheme = scheme.rawValue
        components.host = host
        components.port = port
        components.percentEncodedPath = normalizedBasePath
        guard let url = components.url else {
            throw ConnectError.invalidRequest(.invalidURL(Redaction.urlText(attemptedURL)))
        }
        return url
    }

    /// `basePath` with a leading `/`, its non-ASCII text percent-encoded as UTF-8 as an endpoint's is.
    private var normalizedBasePath: String {
        let path = PercentEncoding.escapingNonASCII(basePath)
        return path.hasPrefix("/") || path.isEmpty ? path : "/" + path
    }

    /// The URL the parts spell, for messages; the URL the configuration was made from if that cannot be a server's.
    private var attemptedURL: String {
        if let shownURLWithProblem { return shownURLWithProblem }
        // A host written with credentials (`amy:pa/ss@api.example.com`, refused) is shown from after its last `@`: a
        // `/`, `?` or `#` in the password would end the authority before it for the URL's redaction, which then finds
        // no credentials to hide.
        let shownHost = host.lastIndex(of: "@").map { String(host[host.index(after: $0)...]) } ?? host
        return "\(scheme.rawValue)://\(shownHost)\(port.map { ":\($0)" } ?? "")\(normalizedBasePath)"
    }

    /// What keeps the parts from making a URL, or `nil`. Checked before `URLComponents` sees them: it stops the
    /// process on a path with characters a URL cannot hold, or on a negative port.
    private var problem: String? {
        if let urlProblem { return urlProblem }
        if host.isEmpty { return "the host is empty" }
        if host.contains("://") {
            return "the host '\(Redaction.urlText(host))' is a URL: give the host alone, and the scheme as `scheme:`"
        }
        if let at = host.lastIndex(of: "@") {
            // Never quoted: what comes before the `@` may be a password.
            return "the host '…@\(Redaction.urlText(String(host[host.index(after: at)...])))' holds a user name or "
                + "password, which a host cannot: give credentials as an AuthorizationToken or through an "
                + "authentication middleware"
        }
        if host.contains(where: { $0.isWhitespace || "/?#\\".contains($0) }) {
            return
                "the host '\(Redaction.urlText(host))' holds characters a host cannot (a space, '/', '?' or '#')"
        }
        if host.hasPrefix("["), let close = host.lastIndex(of: "]"), host[host.index(after: close)...].hasPrefix(":") {
            return "the host '\(Redaction.urlText(host))' holds a port: give it as `port:`"
        }
        let isBracketedIPv6 = host.hasPrefix("[") && host.hasSuffix("]")
        if isBracketedIPv6, !Self.isIPv6Address(host.dropFirst().dropLast()) {
            // Foundation makes a URL of any text in brackets (`[zz]`), which then fails only when sent.
            return "the host '\(Redaction.urlText(host))' is not an IPv6 address"
        }
        if !isBracketedIPv6, host.contains(":") {
            return host.filter { $0 == ":" }.count > 1
                ? "an IPv6 address is written in brackets, such as '[::1]'"
                : "the host '\(Redaction.urlText(host))' holds a port: give it as `port:`"
        }
        if let port, !(1...65_535).contains(port) { return "the port \(port) is not in 1...65535" }
        if !Self.isPercentEncodedPath(normalizedBasePath) {
            return "the base path '\(Redaction.urlText(basePath))' is not a URL path: it may hold letters, digits, "
                + "-._~!$&'()*+,;=:@/, %XX escapes and non-ASCII text (no spaces, '?' or '#')"
        }
        // Joined as written, such a segment would be resolved by URLSession before sending and by the server after
        // other engines sent it: the path the server sees would depend on the engine.
        if PercentEncoding.hasDotSegment(inPath: normalizedBasePath) {
            return "the base path '\(Redaction.urlText(basePath))' has a '.' or '..' segment, which engines resolve "
                + "differently: write the path it stands for"
        }
        return nil
    }

    /// Whether `text` (what a URL holds between brackets) is an IPv6 address, with or without a zone (`%25eth0`).
    private static func isIPv6Address(_ text: Substring) -> Bool {
        let address = text.firstIndex(of: "%").map { text[..<$0] } ?? text
        var bytes = in6_addr()
        return !address.isEmpty && inet_pton(AF_INET6, String(address), &bytes) == 1
    }

    /// Whether `path` holds only RFC 3986 path characters and well-formed `%XX` escapes.
    private static func isPercentEncodedPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) else {
                    return false
                }
                index += 3
                continue
            }
            guard pathCharacters.contains(byte) else { return false }
            index += 1
        }
        return true
    }

    private static let pathCharacters = ASCIIByteSet(ASCIIByteSet.alphanumerics + "-._~!$&'()*+,;=:@/")

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    /// `url` with the default query items it has no item of the same name for appended: RFC 3986 encoded, or as the
    /// base URL wrote them when they came from one; an item without a value as its name alone.
    ///
    /// - Throws: ``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)`` for a default query item with an
    ///   empty name (`?=v`, or a bare `&`), as a connector's `.query` item with one is refused; a base URL's query is
    ///   sent as it was written.
    func appendingDefaultQueryItems(to url: URL?) throws -> URL? {
        let written = writtenQuery.flatMap { $0.decoded == defaultQueryItems ? $0.encoded : nil }
        if written == nil, defaultQueryItems.contains(where: { $0.name.isEmpty }) {
            throw ConnectError.invalidRequest(
                .invalidParameter(
                    key: "",
                    reason: "a default query item of the ServerConfiguration has an empty name (it would go out as "
                        + "?=value, or as a bare '&')"))
        }
        // Whole: a URL made `relativeTo:` a base would lose its base (scheme, host, the base's path) in its parts.
        guard let url, var components = URLComponents(url: url.absoluteURL, resolvingAgainstBaseURL: false) else {
            return url
        }
        let present = Set((components.queryItems ?? []).map(\.name))
        let added = defaultQueryItems.indices.compactMap { index -> String? in
            let item = defaultQueryItems[index]
            guard !present.contains(item.name) else { return nil }
            if let written {
                return written[index].name + (written[index].value.map { "=" + $0 } ?? "")
            }
            return PercentEncoding.encoded(item.name) + (item.value.map { "=" + PercentEncoding.encoded($0) } ?? "")
        }.joined(separator: "&")
        guard !added.isEmpty else { return url }
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
        // The scheme first: for the usual `https://host` base it settles the question without `host`, which
        // percent-decodes the host on every request (about 30 instruction-cache misses once the caches are cold).
        if url.scheme != nil && !url.isFileURL { return false }
        return url.host == nil
    }

    /// The error for a connector with a relative base URL built without a server to resolve it against.
    static func noServer(endpoint: String) -> ConnectError {
        // The endpoint as text, with secrets in its query hidden, as every invalid-URL error shows it.
        let endpoint = Redaction.urlText(endpoint)
        var error = ConnectError.invalidRequest(.invalidURL(endpoint))
        error.message =
            "'\(endpoint)' has no server: give the client a ServerConfiguration or the connector a base URL"
        return error
    }

    /// The server's base URL followed by the path (and query) of a relative base URL such as `/api/v1`: a
    /// relative base is resolved against the server, not replaced by it. One whose path has a `.` or `..` segment is
    /// an invalid URL, as an endpoint with one is.
    static func resolving(_ relative: URL, against server: URL) throws -> URL {
        guard let components = URLComponents(url: relative, resolvingAgainstBaseURL: false) else { return server }
        let path = components.percentEncodedPath
        let query = components.percentEncodedQuery
        guard path.contains(where: { $0 != "/" }) || query != nil else { return server }
        // Under the server's base path, as an endpoint goes, with an endpoint's rule: URLSession would resolve such a
        // segment before sending (out of the base path) and other engines send it as written.
        if PercentEncoding.hasDotSegment(inPath: path) {
            var error = ConnectError.invalidRequest(.invalidURL(Redaction.urlText(relative.relativeString)))
            error.message +=
                ": the connector's relative base URL has a '.' or '..' segment, which engines resolve differently, "
                + "out of the server's base path: write the path it stands for"
            throw error
        }
        var text = server.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += "/" + path.drop { $0 == "/" }
        if let query { text += "?" + query }
        guard let url = URL(string: text) else {
            throw ConnectError.invalidRequest(.invalidURL(Redaction.urlText(text)))
        }
        return url
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
    /// The port is already in `baseURL`.
    var port: Int? { nil }
    var authorizationToken: AuthorizationToken? { (wrapped as? any AuthorizedConnector)?.authorizationToken }
}

extension ServerConfiguration: CustomStringConvertible, CustomReflectable {
    /// The server's URL with its default query items, and its default headers, secret values hidden
    /// (`api_key=<redacted>`, `Authorization: <redacted>`), also where another item or header repeats one: what
    /// `print(configuration)` shows, so that the API key these often carry reaches no log.
    public var description: String {
        let query = defaultQueryItems.map { item in
            PercentEncoding.encoded(item.name) + (item.value.map { "=" + PercentEncoding.encoded($0) } ?? "")
        }.joined(separator: "&")
        // The URL with a problem shows its own query (secrets hidden), from which the default query items came.
        var text =
            shownURLWithProblem ?? Redaction.urlText(attemptedURL + (query.isEmpty ? "" : "?" + query))
        if !defaultHeaders.isEmpty { text += ", " + defaultHeaders.map(\.description).joined(separator: ", ") }
        // The secret values of the default headers and query items, wherever else they show (a default query item
        // repeating the token), as a request's description hides them.
        let secrets = SecretValues(
            fields: defaultHeaders.map { (name: $0.name, value: $0.value) }, url: nil, body: nil, contentType: nil
        ).union(SecretValues(values: SecretValues.formSecrets(query)))
        return "ServerConfiguration(\(secrets.hiding(in: text)))"
    }

    /// The configuration as ``description`` shows it, so that `dump(configuration)` and a debugger show no secret
    /// either.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a request says before its body: method, target and header fields, in the core's own HTTP model, as an
/// engine sends it (``EngineRequest/head``). Part of the engine seam: `@_spi(Engine) import SwiftConnect`.
///
/// The shape is swift-http-types' `HTTPRequest` (method, scheme, authority, path with its query, fields), so an engine
/// copies one into the other field by field, without parsing a URL again:
///
/// ```swift
/// let head = RequestHead(method: .get, scheme: "https", authority: "api.example.com", path: "/todos/1?full=1",
///                            headerFields: [.accept: "application/json"])
/// head.url  // https://api.example.com/todos/1?full=1
/// ```
@_spi(Engine)
public struct RequestHead: Sendable, Hashable {
    /// The method.
    public var method: HTTPMethod
    /// `http` or `https`.
    public var scheme: String
    /// The host, with `:port` when the URL names one (`https://h:443/` keeps `h:443`), and user info never.
    public var authority: String
    /// The path and query, percent-encoded as they go on the wire: `/todos/1?full=1`.
    public var path: String
    /// The header fields, in order.
    public var headerFields: HeaderFields

    /// A head with each part given.
    public init(method: HTTPMethod, scheme: String, authority: String, path: String, headerFields: HeaderFields = [:]) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.headerFields = headerFields
    }

    /// The head of a request to `url`; `nil` when the URL has no scheme or host. User info in the URL is not part of
    /// the head (credentials travel in `Authorization`), nor is its fragment.
    ///
    /// The parts are read from the URL's text as it goes on the wire, percent-encoding kept: one scan, no
    /// `URLComponents` (this runs for every hop an engine sends).
    public init?(method: HTTPMethod, url: URL, headerFields: HeaderFields = [:]) {
        guard let (scheme, authority, path) = Self.split(url.absoluteString) else { return nil }
        self.init(method: method, scheme: scheme, authority: authority, path: path, headerFields: headerFields)
    }

    /// `text` (an absolute URL) as scheme (lower case), authority without user info, and path with query (`/` when
    /// empty), the fragment left out; `nil` without a scheme or a host.
    static func split(_ text: String) -> (scheme: String, authority: String, path: String)? {
        let bytes = text.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let afterColon = bytes.index(after: colon)
        guard bytes[afterColon...].starts(with: "//".utf8) else { return nil }
        let authorityStart = bytes.index(afterColon, offsetBy: 2)
        let rest = bytes[authorityStart...]
        let authorityEnd =
            rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        var hostStart = authorityStart
        if let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            hostStart = bytes.index(after: at)
        }
        guard hostStart < authorityEnd, bytes[hostStart] != UInt8(ascii: ":") else { return nil }
        let targetEnd = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        var path = String(text[authorityEnd..<targetEnd])
        if !path.hasPrefix("/") { path = "/" + path }
        return (String(text[..<colon]).lowercased(), String(text[hostStart..<authorityEnd]), path)
    }

    /// The URL the head names: `scheme://authority/path?query`.
    public var url: URL? { URL(string: "\(scheme)://\(authority)\(path)") }
}

extension RequestHead: CustomStringConvertible, CustomReflectable {
    /// The method and the URL, with the values of secret query items hidden, then the fields one a line with secret
    /// values hidden (``HeaderFields/description``). As in cURL output, a value that repeats a secret the head carries
    /// (a custom field quoting the `Authorization` token) is hidden too, wherever it shows.
    public var description: String {
        let secrets = SecretValues(of: self)
        let line = secrets.hiding(in: "\(method.rawValue) \(scheme)://\(authority)\(Redaction.urlText(path))")
        return headerFields.isEmpty ? line : line + "\n" + headerFields.hidingValues(secrets).description
    }

    /// The parts as ``description`` shows them, so that `dump(head)` and a debugger show no secret either.
    public var customMirror: Mirror {
        let secrets = SecretValues(of: self)
        return Mirror(
            self,
            children: [
                "method": method.rawValue, "scheme": scheme, "authority": secrets.hiding(in: authority),
                "path": secrets.hiding(in: Redaction.urlText(path)), "headerFields": headerFields.hidingValues(secrets),
            ],
            displayStyle: .struct)
    }
}

/// What a response says before its body: status and header fields, in the core's own HTTP model.
///
/// The shape is swift-http-types' `HTTPResponse` (status code and fields): an engine copies its own head into one
/// field by field, and Foundation's `HTTPURLResponse` is made from it only where a caller asks for one.
public struct ResponseHead: Sendable, Hashable {
    /// The status code, 100 to 999.
    public var status: Int
    /// The status codes a response may have: three digits, as AsyncHTTPClient and URLSession read them (RFC 9110 §15
    /// defines 100 to 599; a code above is the server's, and an error status). A transport's answer with another is
    /// malformed (``ConnectError/Kind/badResponse``).
    static let statusCodes = 100...999
    /// The header fields, in order, repeated names kept.
    public var headerFields: HeaderFields

    /// A head with `status` and `headerFields`.
    public init(status: Int, headerFields: HeaderFields = [:]) {
        self.status = status
        self.headerFields = headerFields
    }
}

// MARK: - Foundation, at the edge

@_spi(Engine)
extension RequestHead {
    /// The head of `request`: its method (GET when it has none), URL and header fields; `nil` when its URL has no
    /// scheme or host.
    public init?(_ request: URLRequest) {
        guard let url = request.url else { return nil }
        self.init(
            method: HTTPMethod(rawValue: request.httpMethod ?? "GET"), url: url,
            headerFields: HeaderFields(foundation: request.allHTTPHeaderFields))
    }
}

extension ResponseHead {
    /// The head of `response`: its status and header fields.
    ///
    /// Foundation keeps one value a name, repeated fields joined with `", "`: they come back as one field, but for
    /// `Set-Cookie`, whose fields cannot be joined (a cookie's `Expires` date has a comma): each cookie is a field of
    /// its own again, as the server sent them wherever the joined text tells: a comma starts another cookie only
    /// before a cookie name and `=`, so one field written `a=1, b=2` reads as two cookies.
    public init(_ response: HTTPURLResponse) {
        var fields = HeaderFields()
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            let fieldName = HeaderField.Name(name)
            if fieldName == .setCookie {
                for cookie in SetCookieFields.cookies(in: value) {
                    fields.append(HeaderField(name: fieldName, value: cookie.trimmingCharacters(in: .whitespaces)))
                }
            } else {
                fields.append(HeaderField(name: fieldName, value: value))
            }
        }
        self.init(status: response.statusCode, headerFields: fields)
    }

    /// The header fields as Foundation holds them: one value a name, repeated names joined (`Set-Cookie` too, as
    /// Foundation does).
    var foundationHeaderFields: [String: String] { headerFields.foundationFields }
}

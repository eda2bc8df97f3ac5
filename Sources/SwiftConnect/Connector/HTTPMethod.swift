/// An HTTP request method, such as `GET` or `POST`.
///
/// The common methods are static members, so a connector reads `.get` or `.put`. Any other method (WebDAV's
/// `PROPFIND`, say) can be written as a string literal. Methods are case-sensitive (RFC 9110 §9.1): an extension
/// method is sent exactly as given, but a standard one written in another case (`"get"`, `"Delete"`, `"patch"`)
/// is sent in capitals, as Foundation sends most of them anyway, so what is sent, compared and retried agrees.
///
/// ```swift
/// var method: HTTPMethod {
///     switch self {
///     case .get: return .get
///     case .search: return "QUERY"
///     }
/// }
/// ```
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's token as it is sent, such as `"GET"`.
    public let rawValue: String

    /// Creates a method from its token.
    ///
    /// - Parameter rawValue: The token as it is sent, such as `"PATCH"`. Only a standard method's name written in
    ///   ASCII letters is uppercased (`"get"` becomes `"GET"`); any other is kept as given.
    public init(rawValue: String) {
        self.rawValue = Self.standardSpelling(of: rawValue) ?? rawValue
    }

    /// Creates a method from a string literal, as in `let method: HTTPMethod = "PROPFIND"`.
    ///
    /// - Parameter value: The token as it is sent.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    /// The capitalised name of a standard method written in another case, or `nil`.
    private static func standardSpelling(of method: String) -> String? {
        switch method {
        case "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "CONNECT": return nil  // as sent
        default: break
        }
        let utf8 = method.utf8
        // ASCII only: Unicode's case mapping makes ASCII of other letters (`ſ` → `S`, `ﬆ` → `ST`), which would send
        // "poſt", no token, as a POST.
        guard (3...7).contains(utf8.count), utf8.allSatisfy({ $0 < 0x80 }),
            utf8.contains(where: { (0x61...0x7A).contains($0) })
        else { return nil }
        let upper = String(decoding: utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
        switch upper {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH": return upper
        default: return nil
        }
    }

    /// The method's token, such as `GET`.
    public var description: String { rawValue }

    /// Whether sending the request twice has the same intended effect on the server as sending it once.
    ///
    /// True for `GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS` and `TRACE` (RFC 9110 §9.2.2); false for `POST`,
    /// `PATCH`, `CONNECT` and any other method. A retry policy may resend idempotent requests freely; others
    /// need an `Idempotency-Key` or the caller's consent.
    public var isIdempotent: Bool {
        switch rawValue {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": return true
        default: return false
        }
    }
}

extension HTTPMethod {
    /// Whether a request of this method carries no body: `GET`, `HEAD` and `TRACE` (any case, as ``init(rawValue:)``
    /// spells a standard method in capitals).
    ///
    /// RFC 9110 §9.3.1-2 give a GET's or HEAD's body no meaning; URLSession fails a GET's body and sends a HEAD
    /// without it, which would lose the body and report a success. §9.3.8 says a client must not send content in a
    /// TRACE, which the engines would send all the same. The one rule behind a connector's body
    /// (`asURLRequest()`), an upload's (`upload(files:to:)`) and the wire check every transport's request passes
    /// (`ConnectRequest.wireProblem(bodyFile:)`).
    var refusesBody: Bool { self == .get || self == .head || self == .trace }
}

// MARK: - Standard methods

extension HTTPMethod {
    /// `GET`: transfer a current representation of the target resource.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `POST`: process the enclosed representation according to the resource's own semantics.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`: replace the target resource's state with the enclosed representation.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`: apply a partial modification to the target resource (RFC 5789).
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`: remove the association between the target resource and its current functionality.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `HEAD`: like `GET`, but the server sends no body.
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `OPTIONS`: describe the communication options for the target resource.
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    /// `TRACE`: perform a message loop-back test along the path to the target resource.
    public static let trace = HTTPMethod(rawValue: "TRACE")
    /// `CONNECT`: establish a tunnel to the server identified by the target resource.
    public static let connect = HTTPMethod(rawValue: "CONNECT")
}

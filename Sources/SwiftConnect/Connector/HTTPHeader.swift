/// One HTTP header field: a name and a value.
///
/// Common headers are static members, so a connector's `headers` read as a list:
///
/// ```swift
/// var headers: [HTTPHeader] {
///     [.accept("application/json"), .acceptLanguage("en-US"), HTTPHeader(name: "X-Client", value: "ios")]
/// }
/// ```
///
/// Equality compares names exactly; the request builder matches names case-insensitively, so a later
/// `content-type` replaces an earlier `Content-Type`.
///
/// The ``description`` of a sensitive header (credentials, cookies, tokens, secrets, passwords, API keys) hides
/// the value, so printing headers never leaks them: `Authorization: <redacted>`.
public struct HTTPHeader: Hashable, Sendable, CustomStringConvertible {
    /// The field name, such as `Content-Type`. It must be an RFC 9110 token to be sent.
    public let name: String
    /// The field value. It must not contain CR, LF or NUL to be sent.
    public let value: String

    /// Creates a header.
    ///
    /// - Parameters:
    ///   - name: The field name, such as `"X-Request-ID"`.
    ///   - value: The field value.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `Name: value`, or `Name: <redacted>` when the header is sensitive.
    public var description: String {
        HTTPHeader.isSensitive(name: name) ? "\(name): <redacted>" : "\(name): \(value)"
    }
}

// MARK: - Common headers

extension HTTPHeader {
    /// An `Authorization` header with the given value, used as is.
    ///
    /// - Parameter value: The whole value, such as `"Token abc"`.
    /// - Returns: The header.
    public static func authorization(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Authorization", value: value)
    }

    /// An `Authorization: Bearer <token>` header.
    ///
    /// - Parameter bearerToken: The token, without the `Bearer ` prefix.
    /// - Returns: The header.
    public static func authorization(bearerToken: String) -> HTTPHeader {
        authorization(AuthorizationToken.bearer(token: bearerToken).headerValue)
    }

    /// An `Authorization: Basic <base64(username:password)>` header (RFC 7617, UTF-8).
    ///
    /// - Parameters:
    ///   - username: The user name. It should not contain a colon.
    ///   - password: The password.
    /// - Returns: The header.
    public static func authorization(username: String, password: String) -> HTTPHeader {
        authorization(AuthorizationToken.basic(username: username, password: password).headerValue)
    }

    /// A `Content-Type` header.
    ///
    /// - Parameter value: The media type, such as `"application/json"`.
    /// - Returns: The header.
    public static func contentType(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Content-Type", value: value)
    }

    /// An `Accept` header.
    ///
    /// - Parameter value: The acceptable media types, such as `"application/json"`.
    /// - Returns: The header.
    public static func accept(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Accept", value: value)
    }

    /// An `Accept-Language` header.
    ///
    /// - Parameter value: The preferred languages, such as `"en-US;q=1.0, ar;q=0.9"`.
    /// - Returns: The header.
    public static func acceptLanguage(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Accept-Language", value: value)
    }

    /// A `User-Agent` header.
    ///
    /// - Parameter value: The product description, such as `"MyApp/1.0"`.
    /// - Returns: The header.
    public static func userAgent(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "User-Agent", value: value)
    }

    /// An `Idempotency-Key` header, which lets a server recognise a resent non-idempotent request.
    ///
    /// - Parameter value: A key unique to the operation, such as a UUID string.
    /// - Returns: The header.
    public static func idempotencyKey(_ value: String) -> HTTPHeader {
        HTTPHeader(name: "Idempotency-Key", value: value)
    }
}

// MARK: - Validation and redaction

extension HTTPHeader {
    /// The characters of an RFC 9110 token (`tchar`): letters, digits and ``!#$%&'*+-.^_`|~``.
    private static let tokenCharacters = ASCIIByteSet("!#$%&'*+-.^_`|~" + ASCIIByteSet.alphanumerics)

    /// Header names whose value is always a credential or session state.
    private static let sensitiveNames = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Fragments that make any header name containing them sensitive, such as `X-Auth-Token`.
    private static let sensitiveFragments = ["token", "secret", "password", "api-key", "api_key", "apikey"]

    /// Whether a header with this name carries a secret whose value logs, descriptions and cURL output hide.
    ///
    /// True, ignoring case, for `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, and any name
    /// containing `token`, `secret`, `password` or `api-key` (also `api_key`, `apikey`).
    ///
    /// - Parameter name: The header name.
    /// - Returns: Whether its value must be redacted.
    package static func isSensitive(name: String) -> Bool {
        for candidate in sensitiveNames where asciiCaseInsensitiveEquals(name, candidate) { return true }
        for fragment in sensitiveFragments where asciiCaseInsensitiveContains(name, lowercasedFragment: fragment) {
            return true
        }
        return false
    }

    /// Whether `name` is a non-empty RFC 9110 token, which a field name (and a method) must be.
    static func isValidName(_ name: String) -> Bool {
        // Over the contiguous bytes where the string has them (native strings do): iterating the UTF-8 view
        // byte by byte cost several times more, on every header of every request.
        if let valid = name.utf8.withContiguousStorageIfAvailable({ isToken($0) }) { return valid }
        return isToken(Array(name.utf8))
    }

    private static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        let allowed = tokenCharacters
        return !bytes.isEmpty && bytes.allSatisfy { allowed.contains($0) }
    }

    /// Whether `value` is free of CR, LF and NUL, the bytes that could split or truncate a header.
    static func isValidValue(_ value: String) -> Bool {
        if let valid = value.utf8.withContiguousStorageIfAvailable({ isSafeValue($0) }) { return valid }
        return isSafeValue(Array(value.utf8))
    }

    private static func isSafeValue(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }

    /// Whether two header names are equal ignoring ASCII case, as field names are (RFC 9110 §5.1).
    static func asciiCaseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        for (a, b) in zip(left, right) where asciiLowercased(a) != asciiLowercased(b) { return false }
        return true
    }

    /// Whether `name` contains `fragment` (which must be lowercase ASCII), ignoring ASCII case.
    private static func asciiCaseInsensitiveContains(_ name: String, lowercasedFragment fragment: String) -> Bool {
        let haystack = Array(name.utf8)
        let needle = Array(fragment.utf8)
        guard needle.count <= haystack.count else { return false }
        outer: for start in 0...(haystack.count - needle.count) {
            for offset in 0..<needle.count where asciiLowercased(haystack[start + offset]) != needle[offset] {
                continue outer
            }
            return true
        }
        return false
    }

    @inline(__always)
    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}

extension HTTPHeader: CustomReflectable {
    /// The name and, unless the header is sensitive, the value, so `dump(header)` leaks no secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": name, "value": HTTPHeader.isSensitive(name: name) ? "<redacted>" : value])
    }
}

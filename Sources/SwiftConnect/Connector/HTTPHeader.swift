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
/// The ``description`` of a sensitive header (credentials, cookies, tokens, secrets, passwords, API keys,
/// sessions, signatures, private keys) hides the value, so printing headers never leaks them:
/// `Authorization: <redacted>`.
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

    /// `Name: value`, with `<redacted>` for the value of a sensitive header, and a URL-valued header's
    /// (`Referer`, `Location`) secret query items, fragment pairs and password hidden. A name that is not a token is
    /// cut where a value could start (as `cURLCommand(for:)` shows it), so a header line pasted in as the name shows
    /// no secret.
    public var description: String {
        "\(HTTPHeader.shownName(name)): \(shownValue)"
    }

    /// The value as printed: hidden for a sensitive header, its URL's secrets hidden for a URL-valued one.
    var shownValue: String {
        HTTPHeader.isSensitive(name: name) ? "<redacted>" : Redaction.headerValue(value, name: name, redacting: true)
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
    ///   - username: The user name. It must not contain a colon: the server splits the credentials at the first
    ///     one. Neither it nor the password may contain a control character (RFC 7617). This function cannot fail,
    ///     so it does not check; ``AuthorizationToken/basic(username:password:)`` does, and fails the request with a
    ///     typed error instead.
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

    /// Fragments that make a name secret: a header name (`X-Auth-Token`, `Set-Cookie`), a query item, or a
    /// JSON, form or multipart field (`refresh_token`). The one list behind header redaction, the credentials
    /// dropped on a cross-origin redirect, and field redaction in logs.
    ///
    /// Matched ignoring ASCII case and the separators `-`, `_`, `.`, `+` and space, so `apikey` also finds
    /// `X-Api-Key`, `api_key` and `API KEY`, and `private` finds `private_key`.
    static let sensitiveNameFragments = [
        "authorization", "authentication", "cookie", "token", "secret", "password", "passwd", "apikey", "accesskey",
        "authkey", "subscriptionkey", "functionskey", "credential", "session", "signature", "private", "dpop",
        "codeverifier", "assertion", "passphrase", "appkey", "applicationkey", "licensekey", "masterkey", "adminkey",
        "clientkey", "signingkey", "encryptionkey", "customerkey", "devicecode", "sentryauth", "fastlykey",
        "jwt",
    ]

    /// Whether a header with this name carries a secret: its value is hidden in logs, descriptions and cURL
    /// output, and it is dropped when a redirect leaves the origin.
    ///
    /// True when the name contains, ignoring ASCII case and the separators `-`, `_`, `.`, `+` and space, any of
    /// `authorization` (so `Authorization`, `Proxy-Authorization`, `X-Authorization`), `authentication`,
    /// `cookie` (`Cookie`, `Set-Cookie`), `token`, `secret`, `password`, `passwd`, `apikey` (`X-Api-Key`,
    /// `api_key`), `accesskey`, `authkey` (`X-Auth-Key`), `subscriptionkey` (`Ocp-Apim-Subscription-Key`),
    /// `functionskey` (`x-functions-key`), `credential`, `session`, `signature`, `private` (as in a private
    /// key), `dpop` (a DPoP proof, RFC 9449), `codeverifier` (OAuth PKCE's `code_verifier`, RFC 7636), `assertion`
    /// (a JWT a client authenticates with: `client_assertion`, RFC 7523), `passphrase`, or a key named for what it
    /// opens: `appkey`, `applicationkey` (`DD-APPLICATION-KEY`), `licensekey`, `masterkey`, `adminkey`, `clientkey`,
    /// `signingkey`, `encryptionkey` (a key that opens nothing, such as `Idempotency-Key`, is shown), or a service's
    /// own credential header: `sentryauth` (`X-Sentry-Auth`), `fastlykey` (`Fastly-Key`); or `jwt` (Strapi's login
    /// answers `"jwt"`). A name that ends
    /// with `assertiontype` or `tokentype` (`client_assertion_type`, `token_type`) names the public type of a
    /// credential, and is shown. Query items
    /// and body fields are recognised by the same list; a query item named exactly `key`, `sig` or `code` (API keys,
    /// signed URLs and OAuth authorization codes) is hidden too.
    ///
    /// - Parameter name: The header name.
    /// - Returns: Whether its value must be redacted.
    package static func isSensitive(name: String) -> Bool {
        // The name's bytes, ASCII-lowercased, without separators: fragments are matched in this.
        var folded: [UInt8] = []
        folded.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            switch byte {
            case 0x2D, 0x5F, 0x2E, 0x2B, 0x20: continue  // - _ . + space
            default: folded.append(asciiLowercased(byte))
            }
        }
        if publicTypeSuffixes.contains(where: { folded.count >= $0.count && folded.suffix($0.count).elementsEqual($0) })
        {
            return false
        }
        return sensitiveFragmentBytes.contains { fragment in containsRun(fragment, in: folded) }
    }

    /// The ends of names that hold the public type of a credential rather than the credential, folded as
    /// ``isSensitive(name:)`` folds names: `client_assertion_type` (a URN such as
    /// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, RFC 7521 §4.2), `token_type` (`Bearer`, RFC 6749
    /// §5.1) and the token exchange's `subject_token_type`, `actor_token_type`, `requested_token_type` and
    /// `issued_token_type` (URNs, RFC 8693).
    private static let publicTypeSuffixes: [[UInt8]] = [Array("assertiontype".utf8), Array("tokentype".utf8)]

    /// `headers` with each name (ignoring case) once, where it first comes, with the value it last has: a list of
    /// defaults where a later field replaces an earlier one of the same name, as a connector's headers do
    /// (`common + [.contentType("application/vnd.api+json")]`), though defaults are set only where a request has no
    /// field of that name.
    static func lastValuesWin(_ headers: [HTTPHeader]) -> [HTTPHeader] {
        guard headers.count > 1 else { return headers }
        var result: [HTTPHeader] = []
        result.reserveCapacity(headers.count)
        for header in headers {
            if let index = result.firstIndex(where: { asciiCaseInsensitiveEquals($0.name, header.name) }) {
                result[index] = header
            } else {
                result.append(header)
            }
        }
        return result
    }

    /// A field name as an error or a log shows it: whole when it is a token; otherwise only up to the first
    /// character that cannot start a value's text (`:`, `=`, a blank or a control character), then `…`. A whole
    /// header line pasted in as the name (`Authorization: Bearer …`) then never shows its secret.
    static func shownName(_ name: String) -> String {
        guard !isValidName(name) else { return name }
        let head = name.unicodeScalars.prefix { scalar in
            scalar != ":" && scalar != "=" && scalar != " " && scalar.value >= 0x20 && scalar.value != 0x7F
        }
        let shown = String(String.UnicodeScalarView(head.prefix(100)))
        return shown.unicodeScalars.count < name.unicodeScalars.count ? shown + "…" : shown
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

    /// Whether `value` is free of control characters (RFC 9110 §5.5 allows none but the horizontal tab): CR,
    /// LF and NUL could split or truncate a header, and the others are rejected or mangled by servers.
    static func isValidValue(_ value: String) -> Bool {
        if let valid = value.utf8.withContiguousStorageIfAvailable({ isSafeValue($0) }) { return valid }
        return isSafeValue(Array(value.utf8))
    }

    /// Whether `value` can go out as a request's field value: valid (``isValidValue(_:)``) and ASCII only.
    ///
    /// RFC 9110 §5.5 lets a field carry bytes above 127 (`obs-text`) but gives them no charset, and engines disagree on
    /// them: SwiftNIO and libcurl send a `String`'s UTF-8 bytes, and nothing says what Apple's URLSession sends.
    /// The same connector then reached each server differently, and a server read `é` as `Ã©` or not at all. A
    /// request's value is therefore held to ASCII, as OkHttp and .NET hold it, on every engine; an answer's fields are
    /// read as they come (``isValidValue(_:)``).
    static func isSendableValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 < 0x80 } && isValidValue(value)
    }

    /// Why `value` cannot go out as the value of the request field `name` (``isSendableValue(_:)``), as a sentence
    /// naming the field and never repeating the value (it may be a secret); `nil` when it can.
    static func unsendableValueMessage(name: String, value: String) -> String? {
        if !isValidValue(value) {
            return "the value of the header '\(name)' contains a control character (such as CR, LF or NUL), which "
                + "could split the header or cut it short"
        }
        if value.utf8.contains(where: { $0 >= 0x80 }) {
            return "the value of the header '\(name)' has text that is not ASCII, which HTTP gives no charset and "
                + "engines send differently: percent-encode it (RFC 8187's UTF-8'' form where the field defines one)"
        }
        return nil
    }

    private static func isSafeValue(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Whether two header names are equal ignoring ASCII case, as field names are (RFC 9110 §5.1).
    static func asciiCaseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        for (a, b) in zip(left, right) where asciiLowercased(a) != asciiLowercased(b) { return false }
        return true
    }

    /// ``sensitiveNameFragments`` as bytes.
    private static let sensitiveFragmentBytes = sensitiveNameFragments.map { Array($0.utf8) }

    /// Whether `haystack` contains `needle` as a contiguous run of bytes.
    private static func containsRun(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        outer: for start in 0...(haystack.count - needle.count) {
            for offset in 0..<needle.count where haystack[start + offset] != needle[offset] {
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

extension HTTPHeader {
    /// The header with `secrets` hidden wherever they show in its value, for the reflection of what holds it (a
    /// ``Route``, whose other parts may carry them); its own reflection still hides the value by the header's name.
    func hidingValue(_ secrets: SecretValues) -> HTTPHeader {
        secrets.isEmpty ? self : HTTPHeader(name: name, value: secrets.hiding(in: value))
    }
}

extension HTTPHeader: CustomReflectable {
    /// The name and the value as ``description`` shows them, so `dump(header)` leaks no secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": HTTPHeader.shownName(name), "value": shownValue])
    }
}

extension HTTPHeader {
    /// Headers from a dictionary, in the order of their names: the same dictionary always makes the same list.
    static func list(_ headers: [String: String]) -> [HTTPHeader] {
        headers.sorted { $0.key < $1.key }.map { HTTPHeader(name: $0.key, value: $0.value) }
    }
}

extension Array where Element == HTTPHeader {
    /// Headers from a dictionary, as the libraries that took `[String: String]` had them, in the order of their
    /// names (a dictionary has none of its own).
    ///
    /// ```swift
    /// override var headers: [HTTPHeader] { .init(["Accept": "application/json", "X-Client": "ios"]) }
    /// ```
    ///
    /// - Parameter dictionary: Values by header name.
    public init(_ dictionary: [String: String]) {
        self = HTTPHeader.list(dictionary)
    }
}

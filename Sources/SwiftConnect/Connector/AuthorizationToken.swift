import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Credentials sent in the `Authorization` header of an ``AuthorizedConnector``'s requests.
///
/// ```swift
/// var authorizationToken: AuthorizationToken? {
///     switch self {
///     case .login: return nil
///     case .profile: return .bearer(token: session.accessToken)
///     }
/// }
/// ```
///
/// Printing a token (``description``, `debugPrint`, `dump`) never shows the secret.
public enum AuthorizationToken: Hashable, Sendable, CustomStringConvertible {
    /// `Authorization: Bearer <token>` (RFC 6750).
    case bearer(token: String)
    /// `Authorization: Basic <base64 of "username:password">` (RFC 7617, UTF-8).
    ///
    /// The username must not contain `:` (RFC 7617): the server would split the pair at it and read another
    /// user's credentials. Neither may contain a control character (RFC 7617), such as the trailing newline of a
    /// password read from a file, which base64 would hide from the header. A request signed with such a token fails
    /// with ``ConnectError/InvalidRequestReason/invalidHeader(name:)`` for `Authorization` and is not sent.
    case basic(username: String, password: String)
    /// `Authorization: <token>`: the value used exactly as given, for schemes such as `Token abc` or AWS
    /// signatures.
    case custom(token: String)

    /// The value of the `Authorization` header, such as `Bearer abc`.
    public var headerValue: String {
        switch self {
        case .bearer(let token):
            return "Bearer " + token
        case .basic(let username, let password):
            return "Basic " + Data((username + ":" + password).utf8).base64EncodedString()
        case .custom(let token):
            return token
        }
    }

    /// Whether the token can be sent as it means: its header value has no CR, LF or NUL, and Basic credentials
    /// are what RFC 7617 allows (``BasicCredentials``).
    var isSendable: Bool {
        if case .basic(let username, let password) = self,
            BasicCredentials.problem(username: username, password: password) != nil
        {
            return false
        }
        return HTTPHeader.isSendableValue(headerValue)
    }

    /// The error for a request that would be signed with a token that is not ``isSendable``; names no secret.
    func unsendableError(request: ConnectResponse.StoredRequest?) -> ConnectError {
        var error = ConnectError.invalidRequest(.invalidHeader(name: "Authorization"), stored: request)
        guard case .basic(let username, let password) = self else { return error }
        switch BasicCredentials.problem(username: username, password: password) {
        case nil:
            break
        case .colonInUsername:
            error.message =
                "the Basic username of 'Authorization' contains ':', which RFC 7617 forbids "
                + "(the server would read another user's credentials)"
        case .controlCharacter:
            error.message =
                "the Basic credentials of 'Authorization' contain a control character (such as a line break), which "
                + "RFC 7617 forbids in the username and password (base64 would hide it from the header)"
        }
        return error
    }

    /// The `Authorization` header carrying this token.
    public var header: HTTPHeader {
        .authorization(headerValue)
    }

    /// The kind of token with its secret redacted, such as `bearer(<redacted>)`.
    public var description: String {
        switch self {
        case .bearer: return "bearer(<redacted>)"
        case .basic: return "basic(<redacted>)"
        case .custom: return "custom(<redacted>)"
        }
    }
}

/// RFC 7617's rules for the user name and password of Basic credentials, one home for the ones an
/// ``AuthorizationToken/basic(username:password:)`` carries and the ones a URL's user info is sent as.
enum BasicCredentials {
    /// Why a user name and password cannot go out as Basic credentials.
    enum Problem: Equatable {
        /// The user name holds a colon, where the server splits the pair: it would read another user.
        case colonInUsername
        /// The user name or password holds a control character (C0 or DEL), which RFC 7617 forbids and base64
        /// would hide from the header (a password's trailing newline, say).
        case controlCharacter
    }

    /// Why `username` and `password` cannot be sent as Basic credentials, or `nil` when they can. Bytes are compared:
    /// a colon followed by a combining mark (`:\u{301}`) is a single `Character` that is not `":"`, but the server
    /// still splits at it.
    static func problem(username: String, password: String) -> Problem? {
        if username.utf8.contains(UInt8(ascii: ":")) { return .colonInUsername }
        if hasControlCharacter(username) || hasControlCharacter(password) { return .controlCharacter }
        return nil
    }

    private static func hasControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}

extension AuthorizationToken: CustomReflectable {
    /// A mirror without children, so `dump(token)` shows no secret either.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .enum)
    }
}

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
    /// user's credentials. A request signed with such a token fails with
    /// ``ConnectError/InvalidRequestReason/invalidHeader(name:)`` for `Authorization` and is not sent.
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

    /// Whether the token can be sent as it means: its header value has no CR, LF or NUL, and a Basic username
    /// has no `:`.
    var isSendable: Bool {
        if case .basic(let username, _) = self, Self.hasColon(username) { return false }
        return HTTPHeader.isSendableValue(headerValue)
    }

    /// Whether `username` holds a colon byte, where a server splits the credentials: also one followed by a combining
    /// mark (`:\u{301}`), a single `Character` that is not `":"`.
    private static func hasColon(_ username: String) -> Bool {
        username.utf8.contains(UInt8(ascii: ":"))
    }

    /// The error for a request that would be signed with a token that is not ``isSendable``; names no secret.
    func unsendableError(request: ConnectResponse.StoredRequest?) -> ConnectError {
        var error = ConnectError.invalidRequest(.invalidHeader(name: "Authorization"), stored: request)
        if case .basic(let username, _) = self, Self.hasColon(username) {
            error.message =
                "the Basic username of 'Authorization' contains ':', which RFC 7617 forbids "
                + "(the server would read another user's credentials)"
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

extension AuthorizationToken: CustomReflectable {
    /// A mirror without children, so `dump(token)` shows no secret either.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .enum)
    }
}

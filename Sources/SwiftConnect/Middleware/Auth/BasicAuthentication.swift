import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Signs every request with HTTP Basic credentials: a user name and password, in one named value.
///
/// What Remotli's `BasicAuthPlugin` and similar plugins do, for a server (a staging gate, an internal service) that
/// asks for the same credentials on every request. There is nothing to refresh: a 401 is an answer. For tokens that
/// expire, use ``AuthenticationMiddleware``.
///
/// ```swift
/// let connect = Connect(middlewares: [.basicAuthentication(username: "gate", password: secret)])
/// ```
///
/// Every request gets `Authorization: Basic <base64 of "username:password">`, replacing any `Authorization` it had,
/// except those whose options say ``RequestOptions/requiresAuthentication`` `false`, and those to another host than
/// the client's server (``RequestContext/isForServer``) unless their options say `true`. The credentials are redacted
/// wherever the library prints a request, and never follow a redirect to another origin.
///
/// A user name with `:` (RFC 7617 forbids it: the server would split the pair there and read another user's
/// credentials), or a user name or password with a control character (RFC 7617 forbids those too: a password read
/// from a file with its trailing newline, say), fails each request with ``ConnectError/Kind/invalidRequest``
/// (``ConnectError/InvalidRequestReason/invalidHeader(name:)`` for `Authorization`), unsent.
public struct BasicAuthentication: Middleware {
    /// The credentials, as the token sent.
    public let token: AuthorizationToken

    /// Creates the middleware for `username` and `password`.
    ///
    /// - Parameters:
    ///   - username: The user name, without `:`.
    ///   - password: The password.
    public init(username: String, password: String) {
        token = .basic(username: username, password: password)
    }

    /// Signs `request`, unless its options opt out or it goes to another host than the client's server, and sends it
    /// on.
    ///
    /// - Parameters:
    ///   - request: The request so far.
    ///   - context: Facts about the call; its ``RequestContext/options`` may opt out.
    ///   - next: The rest of the pipeline.
    /// - Returns: The response, or an ``ConnectError/Kind/invalidRequest`` error for credentials that cannot be sent.
    public func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        if !context.signs(request) { return next(request) }
        guard token.isSendable else { return Future(error: token.unsendableError(request: .sent(request))) }
        request.headerFields[.authorization] = token.headerValue
        return next(request)
    }
}

extension Middleware where Self == BasicAuthentication {
    /// A middleware that signs every request with HTTP Basic credentials (see ``BasicAuthentication``).
    ///
    /// ```swift
    /// let connect = Connect(middlewares: [.basicAuthentication(username: "gate", password: secret)])
    /// ```
    ///
    /// - Parameters:
    ///   - username: The user name, without `:`.
    ///   - password: The password.
    /// - Returns: The middleware.
    public static func basicAuthentication(username: String, password: String) -> BasicAuthentication {
        BasicAuthentication(username: username, password: password)
    }
}

/// The key of ``RequestOptions/requiresAuthentication``.
enum AuthenticationRequirement: RequestOptionKey {
    typealias Value = Bool
}

extension RequestContext {
    /// Whether the client's authentication stages sign `request`: not when its options opt out, nor, unless they opt
    /// in, when it goes to another origin than the client's server: as built (``isForServer``), or as a middleware
    /// before the stage changed its URL since.
    func signs(_ request: borrowing ConnectRequest) -> Bool {
        if let required = options.requiresAuthentication { return required }
        guard isForServer else { return false }
        guard let serverURL else { return true }
        return request.url.hasSameOrigin(as: serverURL)
    }
}

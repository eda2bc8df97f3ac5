/// A connector whose requests may carry credentials.
///
/// Conform a ``Connector`` to it as well, and return a token for routes that need one:
///
/// ```swift
/// extension ProfileConnector: AuthorizedConnector {
///     var authorizationToken: AuthorizationToken? {
///         switch self {
///         case .signIn: return nil
///         default: return .bearer(token: TokenStore.shared.accessToken)
///         }
///     }
/// }
/// ```
///
/// ``Connector/asURLRequest()`` sets `Authorization` from the token, replacing any `Authorization` in the
/// connector's `headers`. With a `nil` token, the headers are left as they are.
///
/// ## One token per call
/// ``Connect`` reads ``authorizationToken`` once per call, when it builds the request on the calling thread (a
/// connector need not be `Sendable`, so nothing reads it later, from another thread). Every attempt of the call
/// carries that token: a retry sent by the ``RetryPolicy`` or asked for by a middleware (a
/// ``ConnectMiddlewareProtocol/retry(_:dueTo:attempt:)`` that answers `.retry` after a 401) sends the same
/// `Authorization` again, even when the token store it reads has a new token by then. The next call reads it
/// afresh.
///
/// To send a renewed token on the retry, sign each attempt in a middleware, which sees every attempt and replaces the
/// connector's `Authorization`: an ``AuthenticationMiddleware``, which also refreshes the token once for every request
/// it rejected, or your retry hook's own ``ConnectMiddlewareProtocol/adapt(_:)``:
///
/// ```swift
/// let auth = AuthenticationMiddleware(credential: .bearer(token: session.accessToken)) { expired in
///     // A client without this middleware: the refresh call must not wait for itself.
///     authClient.send(RefreshSession(refreshToken: session.refreshToken)).map { .bearer(token: $0.accessToken) }
/// }
/// // Its connectors need not be AuthorizedConnectors; its server is where the credential goes.
/// let connect = Connect(middlewares: [auth], configuration: ServerConfiguration(host: "api.example.com"))
/// ```
public protocol AuthorizedConnector {
    /// The credentials for this request, or `nil` when the route needs none. Read once per call, on the thread that
    /// makes it: its retries send the same token (see "One token per call" above).
    var authorizationToken: AuthorizationToken? { get }
}

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
public protocol AuthorizedConnector {
    /// The credentials for this request, or `nil` when the route needs none.
    var authorizationToken: AuthorizationToken? { get }
}

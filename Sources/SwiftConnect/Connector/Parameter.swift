import Foundation

/// One parameter of a request: a path value, a query item, a form field, or a body.
///
/// Return one as a connector's `parameters`, or several in a ``CompositeParameters``:
///
/// ```swift
/// var parameters: ParametersRepresentable? {
///     CompositeParameters(
///         .path(key: "userId", value: "1"),       // fills {userId} in the endpoint
///         .query(key: "action", value: "update"), // appends ?action=update
///         .jsonObject(value: todo)                // the JSON body
///     )
/// }
/// ```
///
/// A request has at most one body: one `.jsonObject`, or one `.body`, or any number of `.form` fields (which
/// together make one form body). Mixing them makes ``Connector/asURLRequest()`` throw.
public enum Parameter: ParametersRepresentable {
    /// A query item, appended to the URL after any query the endpoint already has.
    ///
    /// The name and value are percent-encoded so that only RFC 3986 unreserved characters remain, so
    /// `&`, `=`, `+` and `#` in a value can never start another item. Repeated keys are all sent, in order.
    case query(key: String, value: String)

    /// A value for the `{key}` placeholder of the endpoint.
    ///
    /// The value is percent-encoded as one path segment: `/` and every other reserved character is escaped,
    /// so `"a/b"` stays one segment (`a%2Fb`). A value that would make its segment `"."` or `".."` (which servers
    /// resolve to another path, even sent as `%2E`) fails the request with
    /// ``ConnectError/InvalidRequestReason/dotSegmentPathValue(key:)`` before anything is sent; so does an empty
    /// value in the path (``ConnectError/InvalidRequestReason/emptyPathValue(key:)``).
    case path(key: String, value: String)

    /// A JSON body, encoded with the connector's `jsonEncoder`.
    ///
    /// Sent with `Content-Type: application/json` unless the connector's headers set another.
    case jsonObject(value: any Encodable)

    /// A field of an `application/x-www-form-urlencoded` body. Several `.form` fields make one body,
    /// written in order.
    case form(key: String, value: String)

    /// A body sent as is, with the given `Content-Type` (unless the connector's headers set another); an empty
    /// content type sends none.
    case body(Data, contentType: String)

    /// This parameter alone.
    public var parameterList: [Parameter] { [self] }
}

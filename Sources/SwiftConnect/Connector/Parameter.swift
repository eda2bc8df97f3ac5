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
/// A request has at most one body: one `.jsonObject`, one `.encoded`, or one `.body`, or any number of `.form`
/// fields (which together make one form body). Mixing them makes ``Connector/asURLRequest()`` throw.
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

    /// A JSON body, as ``jsonObject(value:)``; the usage guide's spelling, `Parameter.jsonObject(todo)`.
    public static func jsonObject(_ value: any Encodable) -> Parameter { .jsonObject(value: value) }

    /// A field of an `application/x-www-form-urlencoded` body. Several `.form` fields make one body,
    /// written in order.
    case form(key: String, value: String)

    /// A body sent as is, with the given `Content-Type` (unless the connector's headers set another); an empty
    /// content type sends none.
    case body(Data, contentType: String)

    /// A body encoded from `value` by `encoder`, in its format (XML, property lists…), sent with the encoder's
    /// `Content-Type` unless the connector's headers set another: the seam every body format plugs into, as
    /// ``ResponseBodyDecoder`` is for answers.
    ///
    /// ```swift
    /// .encoded(value: settings, encoder: PropertyListEncoder())  // Content-Type: application/x-plist
    /// ```
    ///
    /// A value the encoder refuses fails the request with
    /// ``ConnectError/InvalidRequestReason/bodyEncodingFailed(_:)``, nothing sent.
    case encoded(value: any Encodable, encoder: any RequestBodyEncoder)

    /// This parameter alone.
    public var parameterList: [Parameter] { [self] }
}

/// Encodes a request body from an `Encodable` value, for ``Parameter/encoded(value:encoder:)``: the seam for body
/// formats other than JSON, as ``ResponseBodyDecoder`` is for answers. `PropertyListEncoder` is one; the XML
/// integration package (`Integrations/XML`) adds XML.
///
/// ```swift
/// struct CSVEncoder: RequestBodyEncoder {
///     var contentType: String { "text/csv; charset=utf-8" }
///     func encode<T: Encodable>(_ value: T) throws -> Data { … }
/// }
/// ```
public protocol RequestBodyEncoder {
    /// The `Content-Type` the body is sent with, such as `application/xml; charset=utf-8`.
    var contentType: String { get }

    /// Encodes `value` as a body.
    ///
    /// - Parameter value: The value.
    /// - Returns: The body.
    /// - Throws: Why the value cannot be encoded.
    func encode<T: Encodable>(_ value: T) throws -> Data
}

/// Property lists, sent as `application/x-plist`.
extension PropertyListEncoder: RequestBodyEncoder {
    /// `application/x-plist`.
    public var contentType: String { "application/x-plist" }
}

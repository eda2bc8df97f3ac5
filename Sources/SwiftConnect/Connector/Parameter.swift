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
    /// `&`, `=`, `+` and `#` in a value can never start another item. Repeated keys are all sent, in order. An
    /// empty key is refused (``ConnectError/InvalidRequestReason/invalidParameter(key:reason:)``): `?=value` names
    /// nothing; one that is meant is written in the endpoint.
    case query(key: String, value: String)

    /// A value for the `{key}` placeholder of the endpoint.
    ///
    /// The value is percent-encoded as one path segment: `/` and every other reserved character is escaped,
    /// so `"a/b"` stays one segment (`a%2Fb`). A value that would make its segment `"."` or `".."` (which servers
    /// resolve to another path, even sent as `%2E`) fails the request with
    /// ``ConnectError/InvalidRequestReason/dotSegmentPathValue(key:)`` before anything is sent; so does an empty
    /// value in the path (``ConnectError/InvalidRequestReason/emptyPathValue(key:)``). A value whose key is named
    /// like a secret (`token`, `password`, `api_key`…) is hidden wherever the request, a response to it or an error
    /// about it is shown, as a secret query item's is.
    case path(key: String, value: String)

    /// A JSON body, encoded with the connector's `jsonEncoder`.
    ///
    /// Sent with `Content-Type: application/json` unless the connector's headers set another.
    case jsonObject(value: any Encodable)

    /// A JSON body, as ``jsonObject(value:)``; the usage guide's spelling, `Parameter.jsonObject(todo)`.
    public static func jsonObject(_ value: any Encodable) -> Parameter { .jsonObject(value: value) }

    /// A field of an `application/x-www-form-urlencoded` body. Several `.form` fields make one body,
    /// written in order. An empty key is refused, as a `.query` item's is.
    case form(key: String, value: String)

    /// A body sent as is, with the given `Content-Type` (unless the connector's headers set another); an empty
    /// or blank content type sends none. With none, the engine may add its own: `URLSessionTransport` (Apple's
    /// URLSession and FoundationNetworking alike) sends a `POST` with a body and no type as
    /// `application/x-www-form-urlencoded`, `AsyncHTTPClientTransport` sends no type. Name the type a server reads.
    case body(Data, contentType: String)

    /// A body encoded from `value` by `encoder`, in its format (XML, property lists…), sent with the encoder's
    /// `Content-Type` unless the connector's headers set another (an encoder's empty or blank one sends none, and the
    /// engine may add its own, as for ``body(_:contentType:)``): the
    /// seam every body format plugs into, as
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

extension Parameter: CustomReflectable {
    /// Each case with its values as the default reflection shows them, but with secrets hidden as SwiftConnect's output
    /// hides them: the value of a query item, form field or path value whose key is named like a secret (`token`,
    /// `password`, `api_key`…) as `<redacted>`, and a body's value as the JSON it encodes to, with what secret keys hold
    /// hidden at any depth and wherever else in the body it shows (a password's confirmation). What `print(parameter)`
    /// and `dump(parameter)` show.
    ///
    /// ```swift
    /// print(Parameter.query(key: "api_key", value: key))  // query(key: "api_key", value: "<redacted>")
    /// ```
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: Reflected(self)).children, displayStyle: .enum)
    }

    /// The cases of ``Parameter`` with what they hold as reflection shows it: the same names and labels, so that the
    /// default mirror of each gives the children of ``customMirror``.
    private enum Reflected {
        case query(key: String, value: String)
        case path(key: String, value: String)
        case jsonObject(value: Any)
        case form(key: String, value: String)
        case body(Data, contentType: String)
        case encoded(value: Any, encoder: any RequestBodyEncoder)

        init(_ parameter: Parameter) {
            switch parameter {
            case .query(let key, let value): self = .query(key: key, value: Self.shown(value, key: key))
            case .path(let key, let value): self = .path(key: key, value: Self.shown(value, key: key))
            case .form(let key, let value): self = .form(key: key, value: Self.shown(value, key: key))
            case .jsonObject(let value): self = .jsonObject(value: value as? JSONObject ?? JSONValue.reflected(value))
            case .body(let data, let contentType): self = .body(data, contentType: contentType)
            case .encoded(let value, let encoder): self = .encoded(value: JSONValue.reflected(value), encoder: encoder)
            }
        }

        /// `value`, or ``Redaction/placeholder`` when `key` names a secret (as a query item's or a form field's name
        /// does in SwiftConnect's output).
        private static func shown(_ value: String, key: String) -> String {
            Redaction.isSensitiveQueryItem(key) ? Redaction.placeholder : value
        }
    }
}

extension Parameter {
    /// The values of the `.path` parameters in `parameters` whose key is named like a secret
    /// (`/password-reset/{token}`): once in the path they are plain segments, which nothing in the request names as
    /// secret, so the request carries them (``ConnectRequest/declaredSecrets``) to be hidden wherever it is shown.
    static func declaredSecrets(in parameters: [Parameter]) -> [String] {
        var found: [String] = []
        for case .path(let key, let value) in parameters where Redaction.isSensitiveQueryItem(key) {
            found.append(value)
            // As it goes in the path, escaped as one segment.
            let escaped = PercentEncoding.encodedPathSegment(value)
            if escaped != value { found.append(escaped) }
        }
        return found
    }

    /// The secret values the parameter carries: the value of a query item, form field or path value whose key is named
    /// like a secret, what secret keys hold in a body encoded from a value (at any depth), and a body's secret fields
    /// (as ``SecretValues`` finds them in a request's body).
    var secretValues: [String] {
        switch self {
        case .query(let key, let value), .path(let key, let value), .form(let key, let value):
            return Redaction.isSensitiveQueryItem(key) ? [value] : []
        case .jsonObject(let value as JSONObject):
            return value.secretValues
        case .jsonObject(let value), .encoded(let value, _):
            var found: [String] = []
            JSONValue.encoded(value)?.collectSecrets(underSecretKey: false, into: &found)
            return found
        case .body(let data, let contentType):
            return SecretValues.bodySecrets(data, contentType: contentType)
        }
    }

    /// The parameter with `secrets` hidden wherever they show in its keys and values, for the reflection of what holds
    /// it (a ``Route``), whose other parts may carry them; what a secret key holds is still hidden by the parameter's
    /// own reflection. A body given as bytes, and a value that does not encode as JSON, are kept as they are.
    func hidingValues(_ secrets: SecretValues) -> Parameter {
        guard !secrets.isEmpty else { return self }
        switch self {
        case .query(let key, let value): return .query(key: secrets.hiding(in: key), value: secrets.hiding(in: value))
        case .path(let key, let value): return .path(key: secrets.hiding(in: key), value: secrets.hiding(in: value))
        case .form(let key, let value): return .form(key: secrets.hiding(in: key), value: secrets.hiding(in: value))
        case .jsonObject(let value as JSONObject): return .jsonObject(value: value.hidingValues(secrets))
        case .jsonObject(let value):
            guard let json = JSONValue.encoded(value) else { return self }
            return .jsonObject(value: json.redacted.hidingValues(secrets))
        case .encoded(let value, let encoder):
            guard let json = JSONValue.encoded(value) else { return self }
            return .encoded(value: json.redacted.hidingValues(secrets), encoder: encoder)
        case .body: return self
        }
    }
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
    /// The `Content-Type` the body is sent with, such as `application/xml; charset=utf-8`; empty or blank for
    /// none (no `Content-Type` field, or a default header's). A `charset` it names is the one the body is written
    /// in: a request whose own `Content-Type` (the connector's, or a call's options') names another fails to build.
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

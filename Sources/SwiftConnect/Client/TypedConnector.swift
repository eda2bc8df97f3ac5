import Foundation

/// A ``Connector`` that names the type its response decodes to, for ``Connect/send(_:debugResponse:options:)-6goj3``.
///
/// ```swift
/// struct GetTodo: TypedConnector {
///     typealias Response = Todo
///     let id: Int
///     var baseURL: URL { URL(string: "https://jsonplaceholder.typicode.com")! }
///     var endpoint: String { "/todos/{id}" }
///     var method: HTTPMethod { .get }
///     var headers: [HTTPHeader] { [] }
///     var parameters: ParametersRepresentable? { Parameter.path(key: "id", value: "\(id)") }
/// }
///
/// let todo = try await Connect.default.send(GetTodo(id: 1)).value
/// ```
public protocol TypedConnector: Connector {
    /// The type the response body decodes to. Use ``EmptyResponse`` for endpoints without a body.
    associatedtype Response: Decodable & Sendable

    /// The decoder for the response body, such as a `JSONDecoder` with your date strategy. Defaults to `nil`:
    /// the client's ``ResponseDecoders`` choose by the response's `Content-Type`.
    var decoder: (any ResponseBodyDecoder)? { get }
}

extension TypedConnector {
    /// `nil`: the decoder is chosen by content type.
    public var decoder: (any ResponseBodyDecoder)? { nil }
}

/// A ``Connector`` that turns its own response into its value, for ``Connect/send(_:debugResponse:options:)-4cqyz``:
/// the decoding step of one endpoint, written once with the endpoint and reused by every call.
///
/// ``TypedConnector`` is the usual kind, for a `Decodable` response. Write a `DecodingConnector` for a model that is
/// not `Decodable`, or for an answer to reshape first (an envelope to unwrap, a legacy format read through
/// ``JSONValue``), as Konex's `Mappable` requests did:
///
/// ```swift
/// struct LegacyUser: DecodingConnector {
///     var baseURL: URL { URL(string: "https://legacy.example.com")! }
///     var endpoint: String { "/user.php" }
///
///     func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> User {
///         let json = try JSONDecoder().decode(JSONValue.self, from: response.data)  // Data → JSON value
///         guard let name = json["u_name"]?.stringValue else { throw LegacyFormatError() }
///         return User(name: name, age: json["u_age"]?.intValue ?? 0)  // JSON value → model
///     }
/// }
/// let user: Future<User> = connect.send(LegacyUser())
/// ```
///
/// The step runs where the response completes, so the connector is `Sendable`. A step that throws fails the call
/// with ``ConnectError/Kind/decoding``, its error kept as ``ConnectError/underlyingError`` and the request and
/// response attached (a ``ConnectError`` it throws is passed on as it is). A `DecodingError` reads as
/// ``Future/decoded(toType:decoder:)`` tells it, with its coding path; one that `JSONDecoder` reports as "The given data
/// was not valid JSON." of a body that is valid JSON says it is most likely a number that does not fit its type (a step
/// that decodes through ``JSONValue/decoded(as:decoder:)`` gets the number and its path). Conform to this protocol or
/// to ``TypedConnector``, not both.
public protocol DecodingConnector: Connector, Sendable {
    /// The value the response turns into.
    associatedtype Response: Sendable

    /// The value of a successful response (after the error handler, validators and processors).
    ///
    /// - Parameters:
    ///   - response: The response, its body in ``ConnectResponse/data``.
    ///   - decoders: The client's decoders by content type, for a step that wants them.
    /// - Returns: The value.
    /// - Throws: Why the response has no such value.
    func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> Response
}

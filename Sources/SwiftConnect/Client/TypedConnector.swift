import Foundation

/// A ``Connector`` that names the type its response decodes to, for ``Connect/send(_:debugResponse:options:)``.
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

import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What sends connectors: ``Connect`` conforms, so an app can depend on this protocol, inject the client, and
/// give its tests a fake of its own instead of a client with a fake transport.
///
/// A conformer implements ``response(for:debugResponse:options:)``; every other call of the protocol is built on it
/// and comes with it: the body (`request(_:)`, with `debugResponse:` and `options:` in any combination), the whole
/// response (`response(for:)`, likewise), and the typed `send(_:)` of a ``TypedConnector`` or a
/// ``DecodingConnector``, which decodes as ``Connect``'s does. Through the protocol, a ``Connect`` answers each as
/// its own method does.
///
/// Uploads, downloads to a file, streams, event sources, string-path quick calls and requests built elsewhere stay
/// on ``Connect``: each needs more than a connector and its response (a multipart body written to a temporary file,
/// a destination the engine writes to, a body read as it arrives, the client's server configuration), which a
/// conformer's one call cannot give. Through the protocol, a string path is a ``Route``:
/// `client.request(Route("/todos"))`.
/// A connector whose base URL is relative (`/`, leaving the server to the client) has no URL of its own, and its
/// `asURLRequest()` throws: a fake answers it for a URL of the fake's, as below.
///
/// ```swift
/// final class TodoStore {
///     let client: any ConnectClient
///     init(client: any ConnectClient = Connect.default) { self.client = client }
///
///     func load(id: Int) -> Future<Todo> {
///         client.request(TodoConnector.get(id: id)).decoded(toType: Todo.self)
///     }
/// }
///
/// // In a test:
/// struct CannedClient: ConnectClient {
///     func response(for connector: any Connector, debugResponse: Bool, options: RequestOptions)
///         -> Future<ConnectResponse>
///     {
///         let request = URLRequest(url: URL(string: "https://fake.test")!.appendingPathComponent(connector.endpoint))
///         return Future(result: Result { try .json(#"{"id":1,"title":"Test"}"#, for: request) })
///     }
/// }
/// let store = TodoStore(client: CannedClient())
/// ```
public protocol ConnectClient: Sendable {
    /// Sends the request `connector` describes and returns a future of the whole response, error statuses
    /// failing it as the client's error handler decides.
    ///
    /// - Parameters:
    ///   - connector: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the response.
    func response(for connector: any Connector, debugResponse: Bool, options: RequestOptions) -> Future<ConnectResponse>

    /// Sends the request `connector` describes and returns a future of its body, which knows its response (so
    /// that ``Future/decoded(toType:decoder:)`` chooses the decoder by content type).
    ///
    /// - Parameters:
    ///   - request: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the body.
    func request(_ request: any Connector, debugResponse: Bool, options: RequestOptions) -> Future<Data>
}

extension ConnectClient {
    /// The body of ``response(for:debugResponse:options:)``, decoded later by its content type with the default
    /// decoders.
    public func request(_ request: any Connector, debugResponse: Bool, options: RequestOptions) -> Future<Data> {
        ResponseBodySource.body(
            of: response(for: request, debugResponse: debugResponse, options: options), decoders: .default)
    }

    /// Sends the request `request` describes and returns a future of its body.
    ///
    /// - Parameters:
    ///   - request: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the body.
    public func request(_ request: any Connector, debugResponse: Bool = false) -> Future<Data> {
        self.request(request, debugResponse: debugResponse, options: RequestOptions())
    }

    /// Sends the request `connector` describes and returns a future of the whole response.
    ///
    /// - Parameter connector: The connector describing the endpoint.
    /// - Returns: A future of the response.
    public func response(for connector: any Connector) -> Future<ConnectResponse> {
        response(for: connector, debugResponse: false, options: RequestOptions())
    }

    /// Sends the request `request` describes, with options for this call only, and returns a future of its body.
    ///
    /// - Parameters:
    ///   - request: The connector describing the endpoint.
    ///   - options: Options for this call only.
    /// - Returns: A future of the body, as for ``request(_:debugResponse:options:)``.
    public func request(_ request: any Connector, options: RequestOptions) -> Future<Data> {
        self.request(request, debugResponse: false, options: options)
    }

    /// Sends the request `connector` describes and returns a future of the whole response.
    ///
    /// - Parameters:
    ///   - connector: The connector describing the endpoint.
    ///   - debugResponse: Logs the request and response.
    /// - Returns: A future of the response.
    public func response(for connector: any Connector, debugResponse: Bool) -> Future<ConnectResponse> {
        response(for: connector, debugResponse: debugResponse, options: RequestOptions())
    }

    /// Sends the request `connector` describes, with options for this call only, and returns a future of the whole
    /// response.
    ///
    /// - Parameters:
    ///   - connector: The connector describing the endpoint.
    ///   - options: Options for this call only.
    /// - Returns: A future of the response.
    public func response(for connector: any Connector, options: RequestOptions) -> Future<ConnectResponse> {
        response(for: connector, debugResponse: false, options: options)
    }

    /// Sends a connector that names its response type and returns a future of the decoded value, as
    /// ``Connect/send(_:debugResponse:options:)-6goj3`` does.
    ///
    /// The body is decoded by the connector's ``TypedConnector/decoder`` if it has one, else by the decoder for the
    /// response's `Content-Type`: a ``Connect``'s own ``ResponseDecoders``, or ``ResponseDecoders/default`` for the
    /// response of another conformer. A failure is a ``ConnectError`` of kind ``ConnectError/Kind/decoding`` that
    /// names the request and response.
    ///
    /// - Parameters:
    ///   - connector: The connector.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the decoded response.
    public func send<Endpoint: TypedConnector>(
        _ connector: Endpoint,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<Endpoint.Response> {
        // A `Connect` reached through the protocol decodes as its own method does: with its decoders.
        if let connect = self as? Connect {
            return connect.send(connector, debugResponse: debugResponse, options: options)
        }
        let decoder = connector.decoder
        return response(for: connector, debugResponse: debugResponse, options: options).map { response in
            try Connect.decode(
                response, as: Endpoint.Response.self, with: decoder ?? ResponseDecoders.default.decoder(for: response))
        }
    }

    /// Sends a connector that turns its response into its value itself, and returns a future of that value, as
    /// ``Connect/send(_:debugResponse:options:)-4cqyz`` does.
    ///
    /// The step gets a ``Connect``'s own ``ResponseDecoders``, or ``ResponseDecoders/default`` for the response of
    /// another conformer.
    ///
    /// - Parameters:
    ///   - connector: The connector, with its decoding step.
    ///   - debugResponse: Logs the request and response.
    ///   - options: Options for this call only.
    /// - Returns: A future of the value; a step that throws fails it with ``ConnectError/Kind/decoding``.
    public func send<Endpoint: DecodingConnector>(
        _ connector: Endpoint,
        debugResponse: Bool = false,
        options: RequestOptions = RequestOptions()
    ) -> Future<Endpoint.Response> {
        if let connect = self as? Connect {
            return connect.send(connector, debugResponse: debugResponse, options: options)
        }
        return response(for: connector, debugResponse: debugResponse, options: options).map { response in
            try Connect.value(of: connector, from: response, decoders: .default)
        }
    }
}

extension Connect: ConnectClient {}

extension ConnectResponse {
    /// A 200 response carrying `json` as an `application/json` body, answering `request`: for fakes of a
    /// ``ConnectClient`` or a ``Transport``.
    ///
    /// - Parameters:
    ///   - json: The body.
    ///   - status: The status; 200 by default.
    ///   - request: The request answered.
    /// - Throws: ``ConnectError/Kind/invalidRequest`` when `request` has no URL, ``ConnectError/Kind/badResponse``
    ///   when `status` is not in 100...999.
    public static func json(_ json: String, status: Int = 200, for request: URLRequest) throws -> ConnectResponse {
        guard request.url != nil else { throw ConnectError.invalidRequest(.invalidURL(""), request: request) }
        guard
            let response = ConnectResponse(
                request: request, statusCode: status, headers: ["Content-Type": "application/json"],
                data: Data(json.utf8))
        else {
            throw ConnectError(.badResponse, message: "\(status) is not an HTTP status", request: request)
        }
        return response
    }
}

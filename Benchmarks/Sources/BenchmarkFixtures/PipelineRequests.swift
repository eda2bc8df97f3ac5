import Foundation
import SwiftConnect
import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One request of the pipeline benchmarks (issue 6, item 3), through Connect or written by hand, over the same
/// FakeTransport. The benchmarks time them; `PipelineInstructions` runs them under callgrind and dhat.
public struct PipelineRequests: Sendable {
    /// The transport both ways share; it records requests, so clear it between samples.
    public let transport: FakeTransport
    private let connect: Connect
    private let url = FakeTodos.base.appendingPathComponent("todos")
    /// The decoder both ways share, or `nil`: the client's default decoder, and a new `JSONDecoder` by hand.
    private let decoder: TimedDecoder?

    /// A client with one middleware and the default error handler and retry policy, over a transport that
    /// answers every request with `body` as JSON. Made once, as an app makes its client once.
    ///
    /// With a `decoder`, the client uses it as its only decoder (as it would its default `JSONDecoder`) and the
    /// hand-written requests decode with it too, so that its time can be taken out of both.
    public init(body: Data, decoder: TimedDecoder? = nil) {
        transport = FakeTransport.answering(.data(body, headers: ["Content-Type": "application/json"]))
        var decoders = ResponseDecoders.default
        if let decoder {
            decoders.register(decoder, for: "application/json")
            decoders.fallback = decoder
        }
        connect = Connect(
            transport: transport, middlewares: [HeaderMiddleware()], errorHandler: ErrorHandler(),
            settings: Connect.Settings(decoders: decoders))
        self.decoder = decoder
    }

    /// One request through Connect, its middleware, error handler and decoding; `false` if it did not succeed.
    public func viaConnect() -> Bool {
        let todos = connect.send(FakeTodos())
        guard case .success(let value)? = todos.result, !value.isEmpty else { return false }
        consume(value)
        return true
    }

    /// The same work by hand: build the URLRequest, call the same FakeTransport, check the status, decode.
    public func byHand() -> Bool {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("benchmarks", forHTTPHeaderField: "X-Client")
        guard case .success(let response)? = transport.send(request).result, response.isSuccess,
            let todos = try? decoder.map({ try $0.decode([Todo].self, from: response.data) })
                ?? JSONDecoder().decode([Todo].self, from: response.data)
        else { return false }
        consume(todos)
        return true
    }
}

/// Keeps the optimizer from dropping a result.
@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// The middleware of the pipeline benchmark: adds one header, in the style the `Middleware` documentation
/// shows (the request taken `consuming`, so it changes in place).
private struct HeaderMiddleware: Middleware {
    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        request.setValue("benchmarks", forHTTPHeaderField: "X-Client")
        return next(request)
    }
}

/// The endpoint of the pipeline benchmark: GET /todos, decoded as `[Todo]`.
struct FakeTodos: TypedConnector {
    typealias Response = [Todo]
    static let base = URL(string: "https://api.example.com")!

    var baseURL: URL { Self.base }
    var endpoint: String { "/todos" }
    var method: HTTPMethod { .get }
    var headers: [HTTPHeader] { [] }
    var parameters: (any ParametersRepresentable)? { nil }
}

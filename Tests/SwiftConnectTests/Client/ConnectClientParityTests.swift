import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An app that injects `any ConnectClient` keeps every connector-based call `Connect` answers with a `Future`:
/// `request(_:options:)`, `response(for:options:)`, `response(for:debugResponse:)` and the typed `send` forms, for
/// a fake of its own (only the one requirement written) and for `Connect` itself.
final class ConnectClientParityTests: XCTestCase {
    private struct Todo: Codable, Equatable, Sendable {
        var id: Int
        var title: String
    }

    private struct GetTodo: TypedConnector {
        typealias Response = Todo
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/todos/1" }
    }

    /// A typed connector with a decoder of its own: its decoder wins over the content type.
    private struct GetPrefixedTodo: TypedConnector {
        typealias Response = Todo
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/todos/1" }
        var decoder: (any ResponseBodyDecoder)? { PrefixedJSONDecoder() }
    }

    private struct TodoTitle: DecodingConnector {
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/todos/1" }
        func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> String {
            try decoders.decoder(for: response.mediaType).decode(Todo.self, from: response.data).title.uppercased()
        }
    }

    private struct NoTitle: Error {}

    private struct FailingStep: DecodingConnector {
        var baseURL: URL { URL(string: "https://api.test")! }
        var endpoint: String { "/todos/1" }
        func decode(_ response: ConnectResponse, using decoders: ResponseDecoders) throws -> String {
            throw NoTitle()
        }
    }

    /// JSON after an anti-XSSI prefix, `)]}'` and a newline: a format the default decoders do not read.
    private struct PrefixedJSONDecoder: ResponseBodyDecoder {
        func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
            let prefix = Data(")]}'\n".utf8)
            guard data.starts(with: prefix) else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no prefix"))
            }
            return try JSONDecoder().decode(type, from: data.dropFirst(prefix.count))
        }
    }

    private static let prefixedType = "application/x-prefixed-json"

    /// A user's fake: only the one requirement, recording what each call passed it.
    private final class RecordingClient: ConnectClient, @unchecked Sendable {
        // @unchecked: `calls` is only read and written under `lock`.
        private let lock = NSLock()
        private var calls: [(debugResponse: Bool, options: RequestOptions)] = []
        let body: String
        let contentType: String

        init(body: String = #"{"id":1,"title":"Canned"}"#, contentType: String = "application/json") {
            self.body = body
            self.contentType = contentType
        }

        var recorded: [(debugResponse: Bool, options: RequestOptions)] { lock.withLock { calls } }

        func response(for connector: any Connector, debugResponse: Bool, options: RequestOptions)
            -> Future<ConnectResponse>
        {
            lock.withLock { calls.append((debugResponse, options)) }
            return Future(
                result: Result {
                    let request = try connector.asURLRequest()
                    guard
                        let response = ConnectResponse(
                            request: request, statusCode: 200, headers: ["Content-Type": contentType],
                            data: Data(body.utf8))
                    else { throw ConnectError(.badResponse, message: "no response", request: request) }
                    return response
                })
        }
    }

    private let marked = RequestOptions(headers: [HTTPHeader(name: "X-Call", value: "marked")])

    // MARK: A user's fake, through the protocol

    func testAFakeAnswersEveryConnectorFormThroughTheProtocol() {
        let fake = RecordingClient()
        let client: any ConnectClient = fake

        XCTAssertNotNil(value(of: client.request(GetTodo(), options: marked)))
        XCTAssertNotNil(value(of: client.response(for: GetTodo(), options: marked)))
        XCTAssertNotNil(value(of: client.response(for: GetTodo(), debugResponse: true)))
        XCTAssertEqual(value(of: client.send(GetTodo())), Todo(id: 1, title: "Canned"))
        XCTAssertEqual(value(of: client.send(GetTodo(), options: marked)), Todo(id: 1, title: "Canned"))
        XCTAssertEqual(value(of: client.send(GetTodo(), debugResponse: true)), Todo(id: 1, title: "Canned"))
        XCTAssertEqual(value(of: client.send(TodoTitle())), "CANNED")
        XCTAssertEqual(value(of: client.send(TodoTitle(), debugResponse: true, options: marked)), "CANNED")

        // Each call reached the one requirement once, with what it was given.
        let calls = fake.recorded
        XCTAssertEqual(calls.map(\.debugResponse), [false, false, true, false, false, true, false, true])
        XCTAssertEqual(
            calls.map { $0.options.headers.first?.value }, ["marked", "marked", nil, nil, "marked", nil, nil, "marked"])
    }

    func testAFakesTypedSendDecodesAsConnectDoes() throws {
        // A body that does not decode: the same error as `Connect.send` gives for the same answer.
        let body = #"{"id":"one","title":"Canned"}"#
        let client: any ConnectClient = RecordingClient(body: body)
        let connect = Connect(transport: FakeTransport.answering(.json(string: body)))
        let fromFake = try XCTUnwrap(connectError(of: client.send(GetTodo())))
        let fromConnect = try XCTUnwrap(connectError(of: connect.send(GetTodo())))
        XCTAssertEqual(fromFake.kind, .decoding)
        XCTAssertEqual(fromFake.kind, fromConnect.kind)
        XCTAssertEqual(fromFake.message, fromConnect.message)
        XCTAssertEqual(fromFake.codingPath, fromConnect.codingPath)
        XCTAssertEqual(fromFake.statusCode, 200)
        XCTAssertEqual(fromFake.request?.url?.absoluteString, "https://api.test/todos/1")
        XCTAssertEqual(fromFake.body, Data(body.utf8))

        // A step that throws: `.decoding`, its error kept, the response attached.
        let stepFailure = try XCTUnwrap(connectError(of: client.send(FailingStep())))
        let connectStepFailure = try XCTUnwrap(connectError(of: connect.send(FailingStep())))
        XCTAssertEqual(stepFailure.kind, .decoding)
        XCTAssertTrue(stepFailure.underlyingError is NoTitle)
        XCTAssertEqual(stepFailure.message, connectStepFailure.message)
        XCTAssertEqual(stepFailure.statusCode, 200)

        // The content type chooses the decoder: a body of a type the default decoders do not know is read as JSON
        // (their fallback), and the connector's own decoder wins over the content type.
        let prefixed = RecordingClient(body: ")]}'\n" + #"{"id":1,"title":"Canned"}"#, contentType: Self.prefixedType)
        XCTAssertEqual(connectError(of: (prefixed as any ConnectClient).send(GetTodo()))?.kind, .decoding)
        XCTAssertEqual(value(of: (prefixed as any ConnectClient).send(GetPrefixedTodo())), Todo(id: 1, title: "Canned"))
    }

    // MARK: Connect, through the protocol

    func testConnectAnswersEveryConnectorFormThroughTheProtocol() throws {
        let transport = FakeTransport.answering(.json(string: #"{"id":2,"title":"Real"}"#))
        let client: any ConnectClient = Connect(transport: transport)

        XCTAssertNotNil(value(of: client.request(GetTodo(), options: marked)))
        XCTAssertEqual(value(of: client.response(for: GetTodo(), options: marked))?.statusCode, 200)
        XCTAssertEqual(value(of: client.response(for: GetTodo(), debugResponse: false))?.statusCode, 200)
        XCTAssertEqual(value(of: client.send(GetTodo(), options: marked)), Todo(id: 2, title: "Real"))
        XCTAssertEqual(value(of: client.send(TodoTitle(), options: marked)), "REAL")
        XCTAssertEqual(
            transport.requests.map { $0.value(forHTTPHeaderField: "X-Call") },
            ["marked", "marked", nil, "marked", "marked"])
    }

    /// Through the protocol, `Connect`'s typed calls decode with its own decoders, as its own methods do.
    func testConnectDecodesWithItsOwnDecodersThroughTheProtocol() {
        var decoders = ResponseDecoders.default
        decoders.register(PrefixedJSONDecoder(), for: Self.prefixedType)
        let transport = FakeTransport.answering(
            .data(
                Data((")]}'\n" + #"{"id":3,"title":"Prefixed"}"#).utf8),
                headers: ["Content-Type": Self.prefixedType]))
        let connect = Connect(transport: transport, settings: Connect.Settings(decoders: decoders))
        let client: any ConnectClient = connect

        XCTAssertEqual(value(of: connect.send(GetTodo())), Todo(id: 3, title: "Prefixed"))
        XCTAssertEqual(value(of: client.send(GetTodo())), Todo(id: 3, title: "Prefixed"))
        XCTAssertEqual(value(of: client.send(TodoTitle())), "PREFIXED")
        XCTAssertEqual(value(of: client.request(GetTodo(), options: marked).decoded(toType: Todo.self))?.id, 3)
    }

    // MARK: Concrete calls stay unambiguous

    /// Compiles each form on `Connect.default` and on a `let c: Connect`: none is ambiguous with the protocol's.
    func testEveryFormCompilesOnAConcreteConnect() {
        let forms: (Connect) -> [Any] = { c in
            [
                c.request(GetTodo()), c.request(GetTodo(), debugResponse: true), c.request(GetTodo(), options: .init()),
                c.request(GetTodo(), debugResponse: true, options: .init()),
                c.response(for: GetTodo()), c.response(for: GetTodo(), debugResponse: true),
                c.response(for: GetTodo(), options: .init()),
                c.response(for: GetTodo(), debugResponse: true, options: .init()),
                c.send(GetTodo()), c.send(GetTodo(), debugResponse: true), c.send(GetTodo(), options: .init()),
                c.send(GetTodo(), debugResponse: true, options: .init()),
                c.send(TodoTitle()), c.send(TodoTitle(), debugResponse: true), c.send(TodoTitle(), options: .init()),
                c.send(TodoTitle(), debugResponse: true, options: .init()),
            ]
        }
        // Built, never run: `Connect.default` would reach the network.
        let onDefault: () -> [Any] = {
            [
                Connect.default.request(GetTodo()), Connect.default.request(GetTodo(), options: .init()),
                Connect.default.response(for: GetTodo()), Connect.default.response(for: GetTodo(), options: .init()),
                Connect.default.response(for: GetTodo(), debugResponse: true),
                Connect.default.send(GetTodo()), Connect.default.send(GetTodo(), options: .init()),
                Connect.default.send(TodoTitle()), Connect.default.send(TodoTitle(), debugResponse: true),
            ]
        }
        _ = onDefault
        let transport = FakeTransport.answering(.json(string: #"{"id":4,"title":"Concrete"}"#))
        let c: Connect = Connect(transport: transport)
        let futures = forms(c)
        XCTAssertEqual(futures.count, 16)
        // A typed send on the concrete client is `Connect`'s own: its future of the decoded value.
        XCTAssertEqual(value(of: c.send(GetTodo())), Todo(id: 4, title: "Concrete"))
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A middleware that takes its request `consuming` may change it, and its change reaches the transport whatever the
/// client around it. A retry must send exactly the same request as the first attempt; an error that reports the
/// request must report the one that was built.
final class RequestOwnershipTests: XCTestCase {
    /// Sets a header and records whether that changed the request in place. A copy-on-write copy replaces the
    /// reference a `URLRequest` holds, so its bytes differ after the change; changed in place, they do not.
    struct InPlaceProbe: Middleware {
        let name: String
        let inPlace: Recorder<Bool>

        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            let before = withUnsafeBytes(of: &request) { Array($0) }
            request.setValue("set", forHTTPHeaderField: name)
            inPlace.append(withUnsafeBytes(of: &request) { Array($0) } == before)
            return next(request)
        }
    }

    /// The usual way of writing a middleware before `consuming`: still conforms, still works.
    struct PlainParameterMiddleware: Middleware {
        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            var request = request
            request.setValue("plain", forHTTPHeaderField: "X-Plain")
            return next(request)
        }
    }

    struct Todos: Connector {
        var baseURL = URL(string: "https://api.example.com/v1")!
        var endpoint = "/todos/{id}"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = [HTTPHeader(name: "X-Connector", value: "todos")]
        var parameters: (any ParametersRepresentable)? = CompositeParameters([
            .path(key: "id", value: "7"), .query(key: "expand", value: "user"),
        ])
        var options = RequestOptions()
    }

    private static let ok = FakeResponse.json(string: #"{"ok":true}"#)

    private func sendAndCollect(_ connect: Connect, _ connector: any Connector = Todos()) throws {
        guard case .success? = result(of: connect.request(connector)) else {
            return XCTFail("the request failed")
        }
    }

    func testAConsumingMiddlewaresChangeReachesTheTransportWhateverTheClientAroundIt() throws {
        let configurations: [(String, (FakeTransport, [any Middleware]) -> Connect)] = [
            ("default retry policy", { Connect(transport: $0, middlewares: $1) }),
            ("no retry policy", { Connect(transport: $0, middlewares: $1, retryPolicy: nil) }),
            ("response cache", { Connect(transport: $0, middlewares: $1, responseCache: ResponseCache()) }),
            (
                "coalescing",
                {
                    Connect(
                        transport: $0, middlewares: $1, settings: Connect.Settings(coalescesIdenticalRequests: true))
                }
            ),
            (
                "request queue",
                { Connect(transport: $0, middlewares: $1, requestQueue: RequestQueue(maxConcurrentRequests: 2)) }
            ),
        ]
        for (name, makeClient) in configurations {
            let inPlace = Recorder<Bool>()
            let transport = FakeTransport.answering(Self.ok)
            let connect = makeClient(
                transport,
                [InPlaceProbe(name: "X-First", inPlace: inPlace), InPlaceProbe(name: "X-Second", inPlace: inPlace)]
            )
            try sendAndCollect(connect)
            XCTAssertEqual(inPlace.values.count, 2, "\(name): each middleware saw the request once")
            let sent = try XCTUnwrap(transport.requests.first, name)
            XCTAssertEqual(sent.value(forHTTPHeaderField: "X-First"), "set", name)
            XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Second"), "set", name)
            XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Connector"), "todos", name)
        }
    }

    func testAMiddlewareWithAPlainParameterStillConformsAndWorks() throws {
        let transport = FakeTransport.answering(Self.ok)
        let inPlace = Recorder<Bool>()
        let connect = Connect(
            transport: transport,
            middlewares: [PlainParameterMiddleware(), InPlaceProbe(name: "X-After", inPlace: inPlace)]
        )
        try sendAndCollect(connect)
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-Plain"), "plain")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-After"), "set")
        XCTAssertEqual(inPlace.values.count, 1)
    }

    func testEveryRetrySendsExactlyTheRequestTheFirstAttemptWasBuiltAs() throws {
        let transport = FakeTransport()
        transport.stub("/v1/todos/7", with: [.status(503), .status(503), Self.ok])
        let inPlace = Recorder<Bool>()
        let connect = Connect(
            transport: transport,
            middlewares: [InPlaceProbe(name: "X-Probe", inPlace: inPlace)],
            retryPolicy: RetryPolicy(maxAttempts: 3, jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock()),
            configuration: ServerConfiguration(
                host: "api.example.com", defaultQueryItems: [URLQueryItem(name: "lang", value: "en")])
        )
        var todos = Todos()
        todos.method = .put
        todos.parameters = CompositeParameters([
            .path(key: "id", value: "7"), .query(key: "expand", value: "user"), .jsonObject(value: ["done": true]),
        ])
        try sendAndCollect(connect, todos)

        let attempts = transport.requests
        XCTAssertEqual(attempts.count, 3)
        let first = try XCTUnwrap(attempts.first)
        XCTAssertEqual(first.url?.absoluteString, "https://api.example.com/v1/todos/7?expand=user&lang=en")
        XCTAssertEqual(first.httpMethod, "PUT")
        XCTAssertEqual(first.httpBody, Data(#"{"done":true}"#.utf8))
        XCTAssertEqual(first.value(forHTTPHeaderField: "Content-Type"), "application/json")
        for attempt in attempts.dropFirst() {
            XCTAssertEqual(attempt, first, "a retry sent another request than the first attempt")
            XCTAssertEqual(attempt.allHTTPHeaderFields, first.allHTTPHeaderFields)
        }
        XCTAssertEqual(inPlace.values.count, 3, "each attempt passes through the middleware")
    }

    func testARetryKeepsTheIdempotencyKeyItAddedAcrossAttempts() throws {
        let transport = FakeTransport()
        transport.stub("/v1/todos/7", with: [.status(503), Self.ok])
        let connect = Connect(
            transport: transport,
            retryPolicy: RetryPolicy(
                maxAttempts: 2, jitter: RetryPolicy.noJitter, addsIdempotencyKey: true, clock: ImmediateRetryClock())
        )
        var todos = Todos()
        todos.method = .post
        try sendAndCollect(connect, todos)
        let keys = transport.requests.map { $0.value(forHTTPHeaderField: "Idempotency-Key") }
        XCTAssertEqual(keys.count, 2)
        XCTAssertNotNil(keys[0])
        XCTAssertEqual(keys[0], keys[1])
    }

    func testATransportErrorReportsTheRequestAsBuilt() throws {
        let transport = FakeTransport.answering(.failure(URLError(.cannotConnectToHost)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let error = try XCTUnwrap(self.error(of: connect.request(Todos())) as? ConnectError)
        XCTAssertEqual(error.kind, .cannotConnect)
        let reported = try XCTUnwrap(error.request)
        XCTAssertEqual(reported, try Todos().asURLRequest().withDefaultAccept())
        XCTAssertEqual(reported.value(forHTTPHeaderField: "X-Connector"), "todos")
    }

    func testWithDebugOutputTheRequestIsKeptAndStillSent() throws {
        let transport = FakeTransport.answering(Self.ok)
        let lines = Recorder<String>()
        let connect = Connect(transport: transport, settings: Connect.Settings(logger: RecordingLogger(lines: lines)))
        guard case .success? = result(of: connect.request(Todos(), debugResponse: true)) else {
            return XCTFail("the request failed")
        }
        XCTAssertTrue(lines.values.contains { $0.contains("https://api.example.com/v1/todos/7?expand=user") })
        XCTAssertEqual(transport.requests.count, 1)
    }
}

struct RecordingLogger: ConnectLogger {
    let lines: Recorder<String>
    func log(_ level: LogLevel, _ message: String) { lines.append(message) }
}

extension URLRequest {
    /// This request with the client's default `Accept` header, as `Connect` builds it.
    fileprivate func withDefaultAccept() -> URLRequest {
        var request = self
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }
}

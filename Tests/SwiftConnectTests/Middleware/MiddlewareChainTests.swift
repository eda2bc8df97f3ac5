import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Middlewares around the transport: the onion order, answering without the transport, retrying, adapting.
final class MiddlewareChainTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    func testRequestPassesInOrderAndResponseInReverse() throws {
        // Given
        let events = Recorder<String>()
        let fake = FakeTransport.handlerRecording(events)
        let connect = Connect(
            transport: fake,
            middlewares: [
                RecordingMiddleware(name: "a", events: events), RecordingMiddleware(name: "b", events: events),
            ]
        )
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(events.values, ["→a", "→b", "transport", "←b", "←a"])
        XCTAssertEqual(fake.requests.first?.value(forHTTPHeaderField: "X-Trail"), "a,b", "a changed the request first")
    }

    func testChangesMadeByAMiddlewareReachTheTransport() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, middlewares: [HeaderMiddleware(name: "X-API-Key", value: "k1")])
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.first?.value(forHTTPHeaderField: "X-API-Key"), "k1")
        XCTAssertEqual(
            fake.requests.first?.value(forHTTPHeaderField: "Accept"), "application/json",
            "default headers come before middlewares")
    }

    func testMiddlewareCanAnswerWithoutCallingNext() {
        // Given
        let fake = FakeTransport.answering(.status(500))
        let behind = Recorder<String>()
        let connect = Connect(
            transport: fake,
            middlewares: [
                CacheMiddleware(body: Data("cached".utf8)), RecordingMiddleware(name: "behind", events: behind),
            ]
        )
        // When
        let data = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(data, Data("cached".utf8))
        XCTAssertTrue(fake.requests.isEmpty, "the transport sees nothing")
        XCTAssertEqual(behind.values, [], "later middlewares see nothing either")
    }

    func testMiddlewareCanRetryByCallingNextTwice() {
        // Given
        let fake = FakeTransport()
        fake.stub(.get, "/items", with: [.status(503), .json(string: #"{"ok":true}"#)])
        let connect = Connect(transport: fake, middlewares: [RetryOnceMiddleware()], retryPolicy: nil)
        // When
        let data = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(data.map { String(decoding: $0, as: UTF8.self) }, #"{"ok":true}"#)
        XCTAssertEqual(fake.requests.count, 2, "the transport sees two requests")
        XCTAssertEqual(fake.requests.map { $0.url?.path }, ["/items", "/items"])
    }

    func testErrorHandlerSeesTheResponseTheMiddlewaresReturn() {
        // Given: the retry middleware gives up after one retry; the second 503 goes to the error handler
        let fake = FakeTransport.answering(.json(string: #"{"message":"still down"}"#, status: 503))
        let connect = Connect(transport: fake, middlewares: [RetryOnceMiddleware()], retryPolicy: nil)
        // When
        let error = connectError(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error?.kind, .serverMessage)
        XCTAssertEqual(error?.message, "still down")
        XCTAssertEqual(fake.requests.count, 2)
    }

    func testAdaptThrowingFailsTheRequestBeforeAnyIO() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let behind = Recorder<String>()
        let connect = Connect(
            transport: fake,
            middlewares: [RefusingAdapter(), RecordingMiddleware(name: "behind", events: behind)]
        )
        // When
        let error = error(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(error as? TestError, TestError(403))
        XCTAssertTrue(fake.requests.isEmpty)
        XCTAssertEqual(behind.values, [])
    }

    func testGuideStyleAdapterChangesTheRequest() {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(middleware: LocaleAdapter(), errorHandler: ErrorHandler()).with(transport: fake)
        // When
        _ = value(of: connect.request(Endpoint()))
        // Then
        XCTAssertEqual(fake.requests.first?.value(forHTTPHeaderField: "Accept-Language"), "en-US")
    }

    func testDefaultConnectMiddlewarePassesRequestsThroughUnchanged() throws {
        // Given
        let fake = FakeTransport.answering(.status(200))
        let plain = Connect(transport: fake)
        let wrapped = Connect(transport: fake, middlewares: [ConnectMiddleware()])
        let endpoint = Endpoint(
            method: .post, headers: [HTTPHeader(name: "X-A", value: "1")],
            parameters: Parameter.jsonObject(value: ["k": "v"]))
        // When
        _ = value(of: plain.request(endpoint))
        _ = value(of: wrapped.request(endpoint))
        // Then
        XCTAssertEqual(fake.requests.count, 2)
        XCTAssertEqual(fake.requests[0], fake.requests[1])
    }

    func testContextNamesTheMethodAndTheConnector() {
        // Given
        let contexts = Recorder<String>()
        let logger = MemoryLogger()
        let connect = Connect(
            transport: FakeTransport.answering(.status(200)), middlewares: [ContextMiddleware(contexts: contexts)],
            settings: Connect.Settings(logger: logger))
        // When
        _ = value(of: connect.request(Endpoint(method: .delete)))
        // Then
        XCTAssertEqual(contexts.values, ["DELETE Endpoint"])
        XCTAssertEqual(logger.messages, ["from middleware"], "the context carries the client's logger")
    }

    func testMiddlewareWorksWithAClosureAsNext() {
        // Given
        let events = Recorder<String>()
        let middleware = RecordingMiddleware(name: "solo", events: events)
        let request = ConnectRequest(url: URL(string: "https://api.example.com/x")!)
        // When
        let future = middleware.intercept(request, context: RequestContext(method: .get, connectorName: "Test")) {
            sent in
            events.append("next:\(sent.value(forHTTPHeaderField: "X-Trail") ?? "")")
            return Future(value: ConnectResponse(request: sent, statusCode: 200)!)
        }
        // Then
        XCTAssertEqual(value(of: future)?.statusCode, 200)
        XCTAssertEqual(events.values, ["→solo", "next:solo", "←solo"])
    }

    /// A middleware that moves a request to another origin is not a redirect: the signing stage after it signs
    /// nothing there, but what was set before it goes along as it was (RequestContext.isForServer, SECURITY.md).
    func testAMiddlewareThatMovesARequestElsewhereTakesWhatWasSetBeforeIt() throws {
        // Given: a server with a default header and query item, a connector with its own token, a moving stage
        let transport = FakeTransport(fallback: .status(204))
        let moving = AnyMiddleware.adapter { request in
            request.url = URL(string: "https://mirror.other.test/items?\(request.url.query ?? "")")!
        }
        let signing = BasicAuthentication(username: "gate", password: "s3cret")
        let connect = Connect(
            transport: transport, middlewares: [moving, signing], retryPolicy: nil,
            configuration: ServerConfiguration(
                host: "api.test", defaultHeaders: [HTTPHeader(name: "X-API-Key", value: "k1")],
                defaultQueryItems: [URLQueryItem(name: "tenant", value: "t1")]))
        // When
        _ = value(of: connect.request(Route("/items", authorizationToken: .bearer(token: "connector-token"))))
        // Then
        let sent = try XCTUnwrap(transport.requests.first)
        XCTAssertEqual(sent.url?.host, "mirror.other.test")
        XCTAssertEqual(sent.url?.query, "tenant=t1")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-API-Key"), "k1")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Authorization"), "Bearer connector-token", "not re-signed")
    }
}

// MARK: - Doubles

extension FakeTransport {
    /// A transport answering 200 that records `transport` into `events` for every request.
    fileprivate static func handlerRecording(_ events: Recorder<String>) -> FakeTransport {
        .answering(
            .handler { request in
                events.append("transport")
                return .success(ConnectResponse(request: request, statusCode: 200)!)
            })
    }
}

extension Connect {
    /// The same client with another transport (the guide's initializer always uses URLSession).
    fileprivate func with(transport: any Transport) -> Connect {
        Connect(transport: transport, middlewares: middlewares, errorHandler: errorHandler, settings: settings)
    }
}

/// Sets one header, as an app's middleware would (also used by MiddlewareEdgeCaseTests).
struct HeaderMiddleware: Middleware {
    let name: String
    let value: String

    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        var request = request
        request.setValue(value, forHTTPHeaderField: name)
        return next(request)
    }
}

private struct CacheMiddleware: Middleware {
    let body: Data

    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        Future(value: ConnectResponse(request: request, statusCode: 200, data: body)!)
    }
}

/// Sends the request again, once, when the first answer is a 503.
private struct RetryOnceMiddleware: Middleware {
    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        next(request).flatMap { response in
            response.statusCode == 503 ? next(request) : Future(value: response)
        }
    }
}

private struct RefusingAdapter: ConnectMiddlewareProtocol {
    func adapt(_ request: URLRequest) throws -> URLRequest {
        throw TestError(403)
    }
}

private struct LocaleAdapter: ConnectMiddlewareProtocol {
    func adapt(_ request: URLRequest) throws -> URLRequest {
        var request = request
        request.setValue("en-US", forHTTPHeaderField: "Accept-Language")
        return request
    }
}

private struct ContextMiddleware: Middleware {
    let contexts: Recorder<String>

    func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
    {
        contexts.append("\(context.method) \(context.connectorName)")
        context.logger.log(.info, "from middleware")
        return next(request)
    }
}

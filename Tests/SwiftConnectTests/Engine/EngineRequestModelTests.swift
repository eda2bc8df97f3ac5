import Foundation
import SwiftConnectTesting
import XCTest

@_spi(Engine) @testable import SwiftConnect

/// Over an `HTTPEngine`, the client's `ConnectRequest` goes to the engine as it is: no `URLRequest` is made on a
/// success's path, and the fields a middleware set reach the engine in order, repeated names kept.
final class EngineRequestModelTests: XCTestCase {
    private typealias ScriptedEngine = EngineExchangeTests.ScriptedEngine

    private struct Tracing: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next)
            -> Future<ConnectResponse>
        {
            request.addValue("a=1", forHTTPHeaderField: "Baggage")
            request.addValue("b=2", forHTTPHeaderField: "baggage")
            return next(request)
        }
    }

    func testAGetThroughConnectMakesNoURLRequestAndKeepsRepeatedFields() throws {
        // Given
        let engine = ScriptedEngine([
            .init(status: 200, fields: [.contentType: "application/json"], chunks: [Data("{}".utf8)])
        ])
        let connect = Connect(transport: engine, middlewares: [Tracing()])
        let route = Route(
            "/todos/{id}", baseURL: URL(string: "https://api.test"), parameters: Parameter.path(key: "id", value: "7"))

        // When
        let response = try connect.response(for: route).wait(timeout: 10)

        // Then: the response holds the core's request, from which no URLRequest was made
        guard case .model(let sent) = response.storedRequest else {
            return XCTFail("the response holds a URLRequest: one was made on the engine's path")
        }
        XCTAssertFalse(sent.hasMadeURLRequest)
        XCTAssertEqual(response.sentRequest.url.absoluteString, "https://api.test/todos/7")
        let hop = try XCTUnwrap(engine.hops.first)
        XCTAssertEqual(hop.head.path, "/todos/7")
        XCTAssertEqual(hop.head.headerFields[values: "Baggage"], ["a=1", "b=2"], "two fields, in order")

        // And Foundation's request is still there when asked for, once
        XCTAssertEqual(response.request.url, URL(string: "https://api.test/todos/7"))
        XCTAssertTrue(sent.hasMadeURLRequest)
    }

    func testAnErrorStatusAndARedirectMakeNoURLRequestNorHTTPURLResponse() throws {
        // Given: a redirect, then an error answer with a JSON message
        let engine = ScriptedEngine([
            .init(status: 302, fields: [.location: "/moved", "Set-Cookie": "s=1; Path=/"]),
            .init(
                status: 404, fields: [.contentType: "application/json"],
                chunks: [Data(#"{"message":"no such todo"}"#.utf8)]),
        ])
        let connect = Connect(transport: engine)
        let route = Route("/todos/1", baseURL: URL(string: "https://api.test"))

        // When
        let outcome = try connect.response(for: route).waitForResult(timeout: 10)

        // Then: the error keeps the core's request and the engine's head, neither made into Foundation's
        guard case .failure(let failure) = outcome else { return XCTFail("a 404 succeeded") }
        let error = try XCTUnwrap(failure as? ConnectError)
        XCTAssertEqual(error.kind, .serverMessage)
        guard case .model(let sent) = error.storedRequest else { return XCTFail("the error holds a URLRequest") }
        XCTAssertFalse(sent.hasMadeURLRequest)
        guard case .parts(let parts) = error.storedHead else { return XCTFail("the error holds an HTTPURLResponse") }
        XCTAssertFalse(parts.isMadeForTesting)
        XCTAssertEqual(error.statusCode, 404)
        XCTAssertEqual(error.headers["Content-Type"], "application/json")
        XCTAssertTrue(error.description.contains("[GET https://api.test/todos/1]"), error.description)
        XCTAssertFalse(sent.hasMadeURLRequest, "describing the error made a URLRequest")
        XCTAssertEqual(engine.hops.last?.head.path, "/moved")
        XCTAssertEqual(engine.hops.last?.head.headerFields[.cookie], "s=1", "the redirect's cookie was sent")

        // And Foundation's types are there when asked for
        XCTAssertEqual(error.request?.url, URL(string: "https://api.test/todos/1"))
        XCTAssertEqual(error.response?.statusCode, 404)
    }
}

import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `.path` value under a secret name (`/password-reset/{token}`) is hidden wherever the request is shown, as a
/// secret query item is: the route hid it, but once in the path it was a plain segment, shown by the request, its
/// errors, the debug log and a recording.
final class DeclaredPathSecretTests: XCTestCase {
    private let secret = "rst_9f8e7d6c5b4a3210"

    private func route(timeout: TimeInterval = 60, value: String? = nil) -> Route {
        Route(
            "/password-reset/{token}", baseURL: URL(string: "https://api.example.com")!,
            parameters: Parameter.path(key: "token", value: value ?? secret), timeout: timeout)
    }

    private func texts(of error: any Error) -> [String] {
        var dumped = ""
        dump(error, to: &dumped)
        return ["\(error)", String(reflecting: error), dumped, (error as? ConnectError)?.message ?? ""]
    }

    private func assertHidden(_ texts: [String], _ value: String? = nil, line: UInt = #line) {
        for text in texts {
            XCTAssertFalse(text.contains(value ?? secret), text, line: line)
        }
    }

    /// The built request, an error status's failure and the debug log hide it; the request still goes with it.
    func testTheRequestItsFailureAndTheDebugLogHideIt() throws {
        let logger = MemoryLogger()
        let seen = Protected<[ConnectRequest]>([])
        let transport = FakeTransport.answering(.json(string: #"{"message":"expired"}"#, status: 410))
        let connect = Connect(
            transport: transport,
            middlewares: [
                AnyMiddleware { request, _, next in
                    seen.withLock { $0.append(request) }
                    return next(request)
                }
            ],
            retryPolicy: nil, settings: Connect.Settings(logger: logger))
        let call: Future<Data> = connect.request(route(), debugResponse: true)
        let error = try XCTUnwrap(connectError(of: call))
        XCTAssertEqual(error.statusCode, 410)
        let request = try XCTUnwrap(seen.snapshot.first)
        XCTAssertEqual(request.url.path, "/password-reset/\(secret)", "sent as it is")
        assertHidden(texts(of: error) + logger.messages + ["\(request)", String(reflecting: request)])
        XCTAssertTrue(logger.messages.joined().contains("/password-reset/<redacted>"), logger.messages.joined())
    }

    /// A guide-style middleware (`ConnectMiddlewareProtocol`: it adapts a `URLRequest`, which carries no declared
    /// secrets) keeps them: the request it hands on was made again from its `URLRequest`, and its failure showed the
    /// value.
    func testAnAdaptingMiddlewareKeepsThemHidden() throws {
        struct Locale: ConnectMiddlewareProtocol {
            func adapt(_ request: URLRequest) throws -> URLRequest {
                var request = request
                request.setValue("fr", forHTTPHeaderField: "Accept-Language")
                return request
            }
        }
        let transport = FakeTransport.answering(.json(string: #"{"message":"expired"}"#, status: 410))
        let connect = Connect(transport: transport, middlewares: [Locale()], retryPolicy: nil)
        let error = try XCTUnwrap(connectError(of: connect.request(route()) as Future<Data>))
        XCTAssertEqual(error.statusCode, 410)
        XCTAssertEqual(transport.requests.first?.value(forHTTPHeaderField: "Accept-Language"), "fr")
        assertHidden(texts(of: error))
    }

    /// A transport's own failure (here a fake's error) and an error raised while the request is built (a timeout of
    /// 0) hide it too, and so does a value that is escaped in the path.
    func testATransportsFailureAndABuildErrorHideIt() throws {
        let failing = Connect(transport: FakeTransport.answering(.failure(URLError(.timedOut))), retryPolicy: nil)
        assertHidden(texts(of: try XCTUnwrap(connectError(of: failing.request(route()) as Future<Data>))))
        XCTAssertThrowsError(try route(timeout: 0).asURLRequest()) { assertHidden(texts(of: $0)) }
        let connect = Connect(transport: FakeTransport.answering(.json(string: "{}")), retryPolicy: nil)
        XCTAssertThrowsError(try connect.request(route(timeout: 0)).wait(timeout: 5)) { assertHidden(texts(of: $0)) }

        let spaced = "reset token 9f8e7d6c"
        let escaped = try XCTUnwrap(connectError(of: failing.request(route(value: spaced)) as Future<Data>))
        assertHidden(texts(of: escaped), "reset%20token%209f8e7d6c")
        assertHidden(texts(of: escaped), spaced)
    }

    /// Through a real engine to a server on 127.0.0.1, by URLSession's plain path and its exchange (a body), an error
    /// status's failure hides it.
    func testAnErrorStatusThroughURLSessionHidesIt() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        server.route("GET", "/password-reset/\(secret)") { _ in LocalServer.Response(status: 404) }
        server.route("POST", "/password-reset/\(secret)") { _ in LocalServer.Response(status: 404) }
        let connect = Connect(
            transport: URLSessionTransport(), retryPolicy: nil,
            configuration: ServerConfiguration(scheme: .http, host: "127.0.0.1", port: server.port))
        for method in [HTTPMethod.get, .post] {
            let route = Route(
                "/password-reset/{token}", method: method,
                parameters: method == .get
                    ? Parameter.path(key: "token", value: secret)
                    : CompositeParameters(.path(key: "token", value: secret), .form(key: "a", value: "b")))
            let error = try XCTUnwrap(connectError(of: connect.request(route) as Future<Data>), "\(method)")
            XCTAssertEqual(error.statusCode, 404, "\(error)")
            assertHidden(texts(of: error))
        }
    }

    /// A recording keeps no trace of it: the HAR's URL shows the placeholder.
    func testARecordingHidesIt() throws {
        let har = FileManager.default.temporaryDirectory.appendingPathComponent("declared-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: har) }
        let recorder = RecordingTransport(
            fileURL: har, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        _ = try Connect(transport: recorder, retryPolicy: nil).request(route()).wait(timeout: 5)
        let text = try String(contentsOf: har, encoding: .utf8)
        XCTAssertFalse(text.contains(secret), text)
        XCTAssertTrue(text.contains("password-reset"), text)
    }
}

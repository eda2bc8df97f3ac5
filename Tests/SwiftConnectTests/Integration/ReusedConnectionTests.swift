import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server closes a pooled connection under a request with a body, without answering: on every engine the request
/// fails at once with `networkConnectionLost`, the engine never sends it again (whole, or without its body, as
/// libcurl would: see `SessionDelegate.urlSession(_:task:needNewBodyStream:)`), and ``RetryPolicy`` alone decides
/// whether it goes again.
final class ReusedConnectionTests: IntegrationTestCase {
    private static var order: Parameter { Parameter.jsonObject(value: ["item": 7]) }
    private static let orderBody = #"{"item":7}"#

    /// A POST is not replay-safe: it fails, and the server received it once, whole.
    func testAPOSTWhoseReusedConnectionIsClosedFailsAtOnceAndIsNotSentAgain() throws {
        let (server, connect) = try Self.pooledConnection(closedUnder: "/orders")
        defer { server.stop() }

        // Without the fix, libcurl sends the request again without its body, and it waits out its timeout.
        let post = Route("/orders", baseURL: server.baseURL, method: .post, parameters: Self.order, timeout: 60)
        let result = try connect.request(post).waitForResult(timeout: 90)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("got \(result)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        XCTAssertEqual(server.requests.filter { $0.path == "/orders" }.map(\.bodyText), [Self.orderBody])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/warm"), 1)
    }

    /// The same for a body streamed from an `InputStream` (chunked, its length unknown): the server gets the request
    /// once, whole. On Linux libcurl asks for the stream again before it would send the request a second time, and the
    /// transport refuses, failing the call.
    func testAStreamedPOSTWhoseReusedConnectionIsClosedFailsAtOnceAndIsNotSentAgain() throws {
        let (server, connect) = try Self.pooledConnection(closedUnder: "/orders")
        defer { server.stop() }
        let stream = ConnectRequest.OneShotStream(InputStream(data: Data(Self.orderBody.utf8)))
        let request = ConnectRequest(
            method: .post, url: server.baseURL.appendingPathComponent("orders"), body: .stream(stream),
            timeoutInterval: 60)

        let result = try connect.response(for: request, name: "orders").waitForResult(timeout: 90)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("got \(result)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        XCTAssertEqual(server.requests.filter { $0.path == "/orders" }.map(\.bodyText), [Self.orderBody])
    }

    /// The same for a body sent from a file (an upload of a file on disk goes through a temporary file).
    func testAnUploadFromAFileWhoseReusedConnectionIsClosedFailsAtOnce() throws {
        let (server, connect) = try Self.pooledConnection(closedUnder: "/uploads")
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("reused-\(UUID().uuidString).txt")
        try Data("a file's content".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let upload = Route("/uploads", baseURL: server.baseURL, method: .post, timeout: 60)
        let result = try connect.upload(files: [File(key: "doc", fileURL: file)], to: upload).waitForResult(timeout: 90)

        guard case .failure(let error as ConnectError) = result else { return XCTFail("got \(result)") }
        XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        let bodies = server.requests.filter { $0.path == "/uploads" }.map(\.bodyText)
        XCTAssertEqual(bodies.count, 1)
        XCTAssertTrue(bodies.first?.contains("a file's content") ?? false, "\(bodies)")
    }

    /// A server whose POSTs to `path` close the connection, and a client (the default retry policy) that holds a
    /// connection to it in its pool.
    private static func pooledConnection(closedUnder path: String) throws -> (LocalServer, Connect) {
        let server = try LocalServer.started()
        server.route("GET", "/warm") { _ in .text("ok") }
        server.route("POST", path) { _ in LocalServer.Response().withFault(.closeBeforeHeaders) }
        let connect = Connect(transport: TransportUnderTest.make())
        do {
            _ = try connect.request(Route("/warm", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
        } catch {
            server.stop()
            throw error
        }
        return (server, connect)
    }

    /// A PUT is replay-safe: the engine fails it as it fails a POST, then the retry policy sends it again, whole.
    func testAPUTWhoseReusedConnectionIsClosedIsSentAgainByTheRetryPolicy() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let attempts = Protected(0)
        server.route("GET", "/warm") { _ in .text("ok") }
        server.route("PUT", "/orders/7") { _ in
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt == 1 ? LocalServer.Response().withFault(.closeBeforeHeaders) : .text("stored")
        }
        let outcomes = AttemptOutcomes()
        let connect = Connect(
            transport: TransportUnderTest.make(), middlewares: [outcomes],
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 0))
        _ = try connect.request(Route("/warm", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
        outcomes.seen.withLock { $0.removeAll() }

        let put = Route("/orders/7", baseURL: server.baseURL, method: .put, parameters: Self.order, timeout: 60)
        let stored = try connect.request(put).wait(timeout: 90)

        XCTAssertEqual(String(decoding: stored, as: UTF8.self), "stored")
        XCTAssertEqual(outcomes.seen.withLock { $0 }, ["connectionLost", "200"])
        XCTAssertEqual(
            server.requests.filter { $0.path == "/orders/7" }.map(\.bodyText), [Self.orderBody, Self.orderBody])
    }
}

/// Records what each attempt that passes it ends with: the status, or the `URLError` of a transport failure.
private struct AttemptOutcomes: Middleware {
    let seen = Protected<[String]>([])

    func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
        ConnectResponse
    > {
        let seen = seen
        let sent = next(request)
        // Registered first, so it runs before the retry loop sees the outcome.
        sent.whenComplete { result in
            let outcome: String
            switch result {
            case .success(let response): outcome = "\(response.statusCode)"
            case .failure(let error):
                outcome = (error as? ConnectError)?.kind.rawValue ?? "\(error)"
            }
            seen.withLock { $0.append(outcome) }
        }
        return sent
    }
}

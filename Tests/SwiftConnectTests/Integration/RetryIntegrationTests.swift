import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The retry policy through real `URLSession` to a real HTTP server on 127.0.0.1.
final class RetryIntegrationTests: IntegrationTestCase {
    private struct Endpoint: Connector {
        var baseURL: URL
        var endpoint: String
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)?
    }

    private var server: LocalServer!
    private var clock: ImmediateRetryClock!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        clock = ImmediateRetryClock()
        connect = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock)
        )
    }

    override func tearDown() {
        connect.cancelAllRequests()
        server.stop()
        server = nil
        clock = nil
        connect = nil
    }

    private func endpoint(_ path: String, method: HTTPMethod = .get) -> Endpoint {
        Endpoint(baseURL: server.baseURL, endpoint: path, method: method)
    }

    /// Registers a route that answers `failure` to its first `times` requests, then `success`.
    private func route(
        _ method: String,
        _ path: String,
        failing times: Int,
        with failure: LocalServer.Response,
        then success: LocalServer.Response = .json(["ok": true])
    ) {
        let served = Counter()
        server.route(method, path) { _ in
            served.increment()
            return served.value <= times ? failure : success
        }
    }

    func testFailingTwiceWith503ThenSucceedingGivesSuccessAfterThreeRequests() throws {
        // Given
        route("GET", "/flaky", failing: 2, with: .json(string: #"{"message":"warming up"}"#, status: 503))
        // When
        let body = try connect.request(endpoint("/flaky")).decoded(toType: [String: Bool].self).wait()
        // Then
        XCTAssertEqual(body, ["ok": true])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/flaky"), 3)
        XCTAssertEqual(clock.delays, [0.5, 1.0])
    }

    func testRetryAfterSecondsIsRespected() throws {
        // Given
        route("GET", "/limited", failing: 1, with: LocalServer.Response.status(429).withHeader("Retry-After", "1"))
        // When
        XCTAssertNoThrow(try connect.request(endpoint("/limited")).wait())
        // Then
        XCTAssertEqual(clock.delays, [1.0])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/limited"), 2)
    }

    func testRetryAfterWithTheRealClock() throws {
        // Given: the default policy and its real clock (one wait of about a second)
        route("GET", "/maintenance", failing: 1, with: LocalServer.Response.status(503).withHeader("Retry-After", "1"))
        let realConnect = Connect(transport: TransportUnderTest.make())
        // When
        let body = try realConnect.request(endpoint("/maintenance")).decoded(toType: [String: Bool].self).wait(
            timeout: 20)
        // Then
        XCTAssertEqual(body, ["ok": true])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/maintenance"), 2)
    }

    func testPostToA503RouteIsNotReplayed() throws {
        // Given
        route("POST", "/orders", failing: 1, with: .json(string: #"{"message":"try later"}"#, status: 503))
        // When
        let failure = try XCTUnwrap(error(of: connect.request(endpoint("/orders", method: .post))) as? ConnectError)
        // Then
        XCTAssertEqual(failure.kind, .serverMessage)
        XCTAssertEqual(failure.statusCode, 503)
        XCTAssertEqual(server.requestCount(for: "POST", path: "/orders"), 1)
        XCTAssertEqual(clock.delays, [])
    }

    func testPostWithAnAddedIdempotencyKeyIsReplayedWithTheSameKey() throws {
        // Given
        route("POST", "/payments", failing: 1, with: .status(503))
        let keyed = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(addsIdempotencyKey: true, clock: clock)
        )
        // When
        XCTAssertNoThrow(try keyed.request(endpoint("/payments", method: .post)).wait())
        // Then
        let keys = server.requests.filter { $0.path == "/payments" }.map { $0.header("Idempotency-Key") }
        XCTAssertEqual(keys.count, 2)
        XCTAssertNotNil(keys[0])
        XCTAssertEqual(keys[0], keys[1])
    }

    func testExhaustedRetriesReportTheServersLastAnswer() throws {
        // Given
        server.route("GET", "/down") { _ in .json(string: #"{"message":"database down"}"#, status: 503) }
        // When
        let failure = try XCTUnwrap(error(of: connect.request(endpoint("/down"))) as? ConnectError)
        // Then
        XCTAssertEqual(failure.kind, .serverMessage)
        XCTAssertEqual(failure.statusCode, 503)
        XCTAssertEqual(failure.message, "database down")
        XCTAssertEqual(server.requestCount(for: "GET", path: "/down"), 3)
    }

    func testDroppedConnectionIsRetried() throws {
        // Given: the first connection closes before any response
        route("GET", "/drop", failing: 1, with: LocalServer.Response.json(["x": 1]).withFault(.closeBeforeHeaders))
        // When
        let body = try connect.request(endpoint("/drop")).decoded(toType: [String: Bool].self).wait()
        // Then
        XCTAssertEqual(body, ["ok": true])
        XCTAssertEqual(server.requestCount(for: "GET", path: "/drop"), 2)
    }
}

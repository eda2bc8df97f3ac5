import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// On Linux a size-limited request (and a download) runs on a short-lived session of its own, invalidated to stop
/// it or once it ends. It must be invalidated once only: FoundationNetworking's `invalidateAndCancel()` and
/// `finishTasksAndInvalidate()` race with each other on the session's delegate, and both on one session crashed an
/// AddressSanitizer run. A timeout asks for both (the future fails, then the transfer is stopped), and so does a
/// caller's cancellation (the transfer is stopped, then the future fails).
final class IsolatedSessionTests: XCTestCase {
    private typealias Todo = ClientFixtures.Todo

    private var server: LocalServer!
    private var transport: URLSessionTransport!
    private var connect: Connect!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/todo") { _ in .json(Todo.sample) }
        // Declares 100 bytes more than it sends, then stays silent on an open connection.
        server.route("GET", "/silent") { _ in .json(Todo.sample).withFault(.lieAboutLength(extra: 100)) }
        server.route("GET", "/held") { _ in .json(Todo.sample).delayed(by: 600) }
        transport = URLSessionTransport()
        connect = Connect(transport: transport, retryPolicy: nil, settings: Connect.Settings(maxResponseBytes: 1 << 20))
    }

    override func tearDown() {
        server.stop()
    }

    /// How many sessions of its own the transport makes for a size-limited request: one on Linux, none elsewhere.
    private var sessionsPerRequest: Int { URLSessionTransport.stopsOnlyWithItsSession ? 1 : 0 }

    private func route(_ path: String, timeout: TimeInterval = 10) -> Route {
        Route(path, baseURL: server.baseURL, timeout: timeout)
    }

    func testARequestThatEndsInvalidatesItsSessionOnce() throws {
        // When
        let data = try connect.request(route("/todo")).wait(timeout: 10)

        // Then
        XCTAssertEqual(try JSONDecoder().decode(Todo.self, from: data), Todo.sample)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10))
        XCTAssertEqual(transport.isolatedSessionInvalidations.snapshot, sessionsPerRequest)
    }

    func testARequestThatTimesOutInvalidatesItsSessionOnce() throws {
        // When: the future fails with the timeout, then the transfer is stopped (2 s: the hop makes its session well
        // before, however busy FoundationNetworking's queue is)
        let result = try connect.request(route("/silent", timeout: 2)).waitForResult(timeout: 10)

        // Then
        guard case .failure(let error as ConnectError) = result else {
            return XCTFail("expected a ConnectError, got \(result)")
        }
        XCTAssertEqual(error.kind, .timedOut)
        // The connection closes once the transfer is stopped, which is the last of the two.
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the transfer was stopped")
        XCTAssertEqual(transport.isolatedSessionInvalidations.snapshot, sessionsPerRequest)
    }

    func testARequestCancelledByItsCallerInvalidatesItsSessionOnce() throws {
        // Given: a request the server holds
        let arrived = DispatchSemaphore(value: 0)
        server.route("GET", "/held-signalled") { _ in
            arrived.signal()
            return .json(Todo.sample).delayed(by: 600)
        }
        let future = connect.request(route("/held-signalled"))
        XCTAssertEqual(arrived.wait(timeout: .now() + 10), .success, "the request reached the server")

        // When: the transfer is stopped, then the future fails
        future.cancel()

        // Then
        guard case .failure(let error as ConnectError) = try future.waitForResult(timeout: 10) else {
            return XCTFail("expected a ConnectError")
        }
        XCTAssertEqual(error.kind, .cancelled)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the transfer was stopped")
        XCTAssertEqual(transport.isolatedSessionInvalidations.snapshot, sessionsPerRequest)
    }

    func testManyTimeoutsAndCancellationsInvalidateEachSessionOnce() throws {
        // When: 20 size-limited requests, half timing out, half cancelled while held
        var futures: [Future<Data>] = []
        for index in 0..<20 {
            let future = connect.request(route(index.isMultiple(of: 2) ? "/silent" : "/held", timeout: 2))
            if !index.isMultiple(of: 2) { future.cancel() }
            futures.append(future)
        }
        for future in futures { _ = try future.waitForResult(timeout: 10) }

        // Then
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "every transfer was stopped")
        // A request cancelled before its hop started made no session; the ten that timed out made one each.
        let made = transport.isolatedSessionsMade.snapshot
        XCTAssertGreaterThanOrEqual(made, 10 * sessionsPerRequest)
        XCTAssertLessThanOrEqual(made, 20 * sessionsPerRequest)
        XCTAssertEqual(transport.isolatedSessionInvalidations.snapshot, made, "each session made is invalidated once")
    }
    /// A transfer stopped mid-body (a size limit reached without a declared length) is stopped before its future
    /// fails: its session is invalidated with its task cancelled, the one way to stop libcurl, not let go to
    /// finish the transfer (which the future's completion would do first).
    func testATransferStoppedMidBodyInvalidatesItsSessionCancellingIt() throws {
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<4096 { guard write(Data(count: 16_384)) else { return } }
            }
        }
        let limited = connect.request(route("/endless"))
        guard case .failure(let error as ConnectError) = try limited.waitForResult(timeout: 20) else {
            return XCTFail("the size limit did not fail the request")
        }
        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertEqual(transport.isolatedSessionInvalidations.snapshot, sessionsPerRequest)
        XCTAssertEqual(
            transport.isolatedSessionCancellations.snapshot, sessionsPerRequest,
            "the stopped transfer's session was let go to finish instead of being cancelled")
    }
}

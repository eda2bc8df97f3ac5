import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request's timeout counts from when its caller sent it, also while its task waits to start: on Linux, while a
/// streamed request body is in flight, a task of `URLSessionTransport` is created and resumed from the transport's
/// submission queue, which can wait for FoundationNetworking's work queue (`SlowStreamBodyTests`). A request whose
/// deadline passes meanwhile fails timed out, and its task is never resumed.
final class SubmissionDeadlineTests: XCTestCase {
    private var server: LocalServer!
    /// A streamed body counted as in flight for each test: tasks start from the submission queue.
    private var streamInFlight: StreamedBodyClaim?

    override func setUpWithError() throws {
        try XCTSkipUnless(
            URLSessionTransport.startsTasksOffTheCaller, "tasks start on the caller's thread: nothing waits")
        streamInFlight = StreamedBodyClaim()
        server = try LocalServer.started()
        server.route("GET", "/held") { _ in .text("held") }
        server.route("GET", "/after") { _ in .text("after") }
    }

    override func tearDown() {
        streamInFlight?.release()
        server?.stop()
    }

    private func kind<T>(of outcome: Result<T, any Error>) -> ConnectError.Kind? {
        guard case .failure(let error) = outcome else { return nil }
        return (error as? ConnectError)?.kind
    }

    /// Lets `transport`'s submission queue go on, and waits for a request sent after the held one to be answered:
    /// the queue is serial, so the held request had its turn before it.
    private func releaseAndSendAnother(on transport: URLSessionTransport) throws {
        transport.submissionQueue.resume()
        let after = transport.send(URLRequest(url: server.baseURL.appendingPathComponent("after")))
        XCTAssertEqual(String(decoding: try after.wait(timeout: 30).data, as: UTF8.self), "after")
    }

    func testAPlainRequestWaitingToStartTimesOutFromWhenItWasSentAndIsNeverSent() throws {
        // Given a transport whose submission queue is held
        let transport = URLSessionTransport()
        transport.submissionQueue.suspend()

        // When a plain GET with a short timeout is sent
        var held = URLRequest(url: server.baseURL.appendingPathComponent("held"))
        held.timeoutInterval = 0.2
        let outcome = try transport.send(held).waitForResult(timeout: 10)

        // Then it fails timed out while the queue still waits, and its task never starts
        XCTAssertEqual(kind(of: outcome), .timedOut)
        try releaseAndSendAnother(on: transport)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/held"), 0, "a task started after its deadline")
    }

    func testARequestThroughTheExchangeWaitingToStartTimesOutAndIsNeverSent() throws {
        // Given a transport whose submission queue is held
        let transport = URLSessionTransport()
        transport.submissionQueue.suspend()

        // When a request through the core's exchange (a size limit) with a short timeout is sent
        var held = ConnectRequest(method: .get, url: server.baseURL.appendingPathComponent("held"))
        held.timeoutInterval = 0.2
        let outcome = try transport.send(held, transfer: TransferOptions(maxResponseBytes: 1_000))
            .waitForResult(timeout: 10)

        // Then it fails timed out while the queue still waits, and its hop's task never starts
        XCTAssertEqual(kind(of: outcome), .timedOut)
        try releaseAndSendAnother(on: transport)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/held"), 0, "a hop started after its deadline")
    }
}

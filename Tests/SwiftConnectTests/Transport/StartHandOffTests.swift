import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// On Linux a `URLSessionTransport` task is created and resumed off its caller, on the transport's submission queue,
/// only while a streamed request body is in flight (which can hold FoundationNetworking's work queue:
/// `SlowStreamBodyTests`) or while earlier starts wait there; otherwise at once, on the caller, as on Apple platforms.
final class StartHandOffTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        try XCTSkipUnless(URLSessionTransport.startsTasksOffTheCaller, "tasks always start on the caller's thread")
        server = try LocalServer.started()
        for path in ["/a", "/b"] { server.route("GET", path) { _ in .text(String(path.dropFirst())) } }
        server.streamingRoute("POST", "/upload") { _, body in
            var count = 0
            while let piece = body.read() { count += piece.count }
            return .text("\(count)")
        }
    }

    override func tearDown() {
        server?.stop()
    }

    private func get(_ path: String) -> URLRequest {
        URLRequest(url: server.baseURL.appendingPathComponent(path))
    }

    private func text(_ future: Future<ConnectResponse>) throws -> String {
        String(decoding: try future.wait(timeout: 30).data, as: UTF8.self)
    }

    /// `future` does not complete within half a second, and the server has seen no GET of `path`.
    private func assertNotStarted<T>(
        _ future: Future<T>, path: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let startedEarly = expectation(description: "\(path) started with the submission queue held")
        startedEarly.isInverted = true
        future.observe { _ in startedEarly.fulfill() }
        wait(for: [startedEarly], timeout: 0.5)
        XCTAssertEqual(server.requestCount(for: "GET", path: path), 0, file: file, line: line)
    }

    /// Waits until no more streamed bodies are counted than `count`.
    private func waitForStreamsInFlight(atMost count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let settled = XCTNSPredicateExpectation(
            predicate: NSPredicate { _, _ in StreamedBodyClaim.inFlight.snapshot <= count }, object: nil)
        XCTAssertEqual(XCTWaiter().wait(for: [settled], timeout: 10), .completed, file: file, line: line)
    }

    func testWithNoStreamedBodyInFlightTasksStartOnTheCaller() throws {
        // Given a transport whose submission queue is held, and no streamed body in flight
        let transport = URLSessionTransport()
        transport.submissionQueue.suspend()
        defer { transport.submissionQueue.resume() }

        // When a plain request and one through the core's exchange are sent
        let plain = transport.send(get("a"))
        let exchanged = transport.send(
            ConnectRequest(method: .get, url: server.baseURL.appendingPathComponent("b")),
            transfer: TransferOptions(maxResponseBytes: 1_000))

        // Then both are answered: neither went through the queue
        XCTAssertEqual(try text(plain), "a")
        XCTAssertEqual(try text(exchanged), "b")
    }

    func testWhileAStreamedBodyIsInFlightTasksStartFromTheSubmissionQueue() throws {
        // Given a streamed body in flight and the transport's submission queue held
        let claim = StreamedBodyClaim()
        defer { claim.release() }
        let transport = URLSessionTransport()
        transport.submissionQueue.suspend()

        // When a plain request and one through the core's exchange are sent
        let plain = transport.send(get("a"))
        let exchanged = transport.send(
            ConnectRequest(method: .get, url: server.baseURL.appendingPathComponent("b")),
            transfer: TransferOptions(maxResponseBytes: 1_000))

        // Then neither starts until the queue runs, and both are answered then
        assertNotStarted(plain, path: "/a")
        assertNotStarted(exchanged, path: "/b")
        transport.submissionQueue.resume()
        XCTAssertEqual(try text(plain), "a")
        XCTAssertEqual(try text(exchanged), "b")
    }

    func testARequestSentAfterOneWaitingOnTheQueueGoesAfterItEvenOnceTheStreamIsOver() throws {
        // Given a request waiting on the held queue for a streamed body that is over since
        let transport = URLSessionTransport()
        let claim = StreamedBodyClaim()
        transport.submissionQueue.suspend()
        let first = transport.send(get("a"))
        claim.release()

        // When another request is sent
        let second = transport.send(get("b"))

        // Then it waits behind the first rather than overtaking it, and both are answered once the queue runs
        assertNotStarted(second, path: "/b")
        transport.submissionQueue.resume()
        XCTAssertEqual(try text(first), "a")
        XCTAssertEqual(try text(second), "b")

        // And with nothing left on the queue, the next request starts on its caller again
        transport.submissionQueue.suspend()
        defer { transport.submissionQueue.resume() }
        XCTAssertEqual(try text(transport.send(get("a"))), "a")
    }

    func testAStreamedUploadIsCountedUntilItsBodyIsSent() throws {
        // Given a streamed upload through URLSessionTransport
        let before = StreamedBodyClaim.inFlight.snapshot
        let chunks = AsyncStream<Data> { continuation in
            for _ in 0..<4 { continuation.yield(Data(repeating: 7, count: 1_000)) }
            continuation.finish()
        }
        var upload = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
        upload.body = .stream(ConnectRequest.OneShotStream(chunks))

        // When it is answered
        let response = try URLSessionTransport().send(upload, transfer: TransferOptions()).wait(timeout: 30)

        // Then it was sent whole and no longer counts
        XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "4000")
        waitForStreamsInFlight(atMost: before)
    }

    func testACancelledOrFailedStreamedUploadNoLongerCounts() throws {
        let before = StreamedBodyClaim.inFlight.snapshot
        let transport = URLSessionTransport()

        // A body whose producer never sends its second chunk, cancelled
        let producerWaits = Promise<Void>()
        var waiting = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
        waiting.body = .stream(ConnectRequest.OneShotStream(NeverEndingChunks(asked: producerWaits)))
        let cancelled = transport.send(waiting, transfer: TransferOptions())
        try producerWaits.future.wait(timeout: 10)
        XCTAssertGreaterThan(StreamedBodyClaim.inFlight.snapshot, before, "a body being read is not counted")
        cancelled.cancel()
        XCTAssertEqual(
            ((try cancelled.waitForResult(timeout: 10)).failure as? ConnectError)?.kind, .cancelled)
        waitForStreamsInFlight(atMost: before)

        // A body whose producer fails
        var failing = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
        failing.body = .stream(ConnectRequest.OneShotStream(FailingChunks()))
        XCTAssertNotNil((try transport.send(failing, transfer: TransferOptions()).waitForResult(timeout: 30)).failure)
        waitForStreamsInFlight(atMost: before)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}

/// One chunk, then a wait for a next one that never comes (until cancelled); ``asked`` is kept when it is asked for.
private struct NeverEndingChunks: AsyncSequence, AsyncIteratorProtocol, Sendable {
    typealias Element = Data
    let asked: Promise<Void>
    private let sent = Protected(false)

    init(asked: Promise<Void>) { self.asked = asked }

    func makeAsyncIterator() -> Self { self }

    func next() async throws -> Data? {
        if sent.isFirstTime() { return Data(repeating: 1, count: 1_000) }
        _ = asked.succeed(())
        let never = Promise<Void>()
        try await withTaskCancellationHandler {
            try await never.future.value
        } onCancel: {
            _ = never.fail(CancellationError())
        }
        return nil
    }
}

/// One chunk, then a failure.
private struct FailingChunks: AsyncSequence, AsyncIteratorProtocol, Sendable {
    typealias Element = Data
    struct Failed: Error {}
    private let sent = Protected(false)

    func makeAsyncIterator() -> Self { self }

    func next() async throws -> Data? {
        if sent.isFirstTime() { return Data(repeating: 1, count: 1_000) }
        throw Failed()
    }
}

extension Protected where Value == Bool {
    /// `true` the first time it is asked (the flag is then set), `false` after.
    fileprivate func isFirstTime() -> Bool {
        withLock { flag in
            defer { flag = true }
            return !flag
        }
    }
}

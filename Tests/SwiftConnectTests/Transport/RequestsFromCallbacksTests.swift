import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Requests started from a callback chained on another request (`flatMap`, `observe`…), which runs on the
/// session's delegate queue: `URLSessionTransport` hands them to URLSession from its own queue when other
/// requests are in flight, so the delegate queue never waits for URLSession's work queue.
final class RequestsFromCallbacksTests: XCTestCase {
    private var server: LocalServer!
    private let releaseSlow = DispatchSemaphore(value: 0)
    /// Lets `/gated` answer: signalled once a test has chained its callback on the request (see ``gated(on:_:)``).
    private let releaseGated = DispatchSemaphore(value: 0)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        server.route("GET", "/small") { _ in .text("small") }
        server.route("GET", "/chained") { _ in .text("chained") }
        server.route("GET", "/after") { _ in .text("after") }
        let gate = releaseGated
        server.route("GET", "/gated") { _ in
            _ = gate.wait(timeout: .now() + 30)
            return .text("small")
        }
        let release = releaseSlow
        server.route("GET", "/slow") { _ in
            _ = release.wait(timeout: .now() + 30)
            return .text("slow")
        }
    }

    override func tearDown() {
        releaseSlow.signal()
        server.stop()
    }

    /// Sends `/gated` (answered "small") and chains `callbacks` on it before the server may answer: the callbacks then
    /// run where the response is delivered, on the session's delegate queue. Chained on a request already answered,
    /// they would run at once on the test's thread, which a loaded machine can hold up past the response.
    private func gated<T>(on transport: URLSessionTransport, _ callbacks: (Future<ConnectResponse>) -> T) -> T {
        gated(transport.send(request("gated")), callbacks)
    }

    /// ``gated(on:_:)`` for a `/gated` request sent already.
    private func gated<T>(_ sent: Future<ConnectResponse>, _ callbacks: (Future<ConnectResponse>) -> T) -> T {
        let chained = callbacks(sent)
        releaseGated.signal()
        return chained
    }

    /// Sends `/slow` and `/gated` (neither answered yet), then holds `transport`'s submission queue. On Linux a task
    /// starts from that queue while a streamed body is in flight (`URLSessionTransport.startOffTheCaller`): both are
    /// let through it first.
    private func inFlightWithSubmissionsHeld(
        on transport: URLSessionTransport
    ) -> (slow: Future<ConnectResponse>, gated: Future<ConnectResponse>) {
        let slow = transport.send(request("slow"))
        let gated = transport.send(request("gated"))
        transport.submissionQueue.sync {}
        transport.submissionQueue.suspend()
        return (slow, gated)
    }

    private func request(_ path: String) -> URLRequest {
        URLRequest(url: server.baseURL.appendingPathComponent(path))
    }

    /// `future` does not complete within half a second, and the server has seen no GET of `path`.
    private func assertNotStarted<T>(
        _ future: Future<T>, path: String, _ message: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let startedEarly = expectation(description: message)
        startedEarly.isInverted = true
        future.observe { _ in startedEarly.fulfill() }
        wait(for: [startedEarly], timeout: 0.5)
        XCTAssertEqual(server.requestCount(for: "GET", path: path), 0, message, file: file, line: line)
    }

    private func kind(of outcome: Result<ConnectResponse, any Error>) -> ConnectError.Kind? {
        guard case .failure(let error) = outcome else { return nil }
        return (error as? ConnectError)?.kind
    }

    private func text(_ future: Future<ConnectResponse>) -> Future<String> {
        future.map { String(decoding: $0.data, as: UTF8.self) }
    }

    func testTheMarkIsSetOnlyWhileDelivering() {
        XCTAssertFalse(CompletionContext.isDelivering)
        var inside = false
        var nested = false
        var afterNested = false
        CompletionContext.deliver {
            inside = CompletionContext.isDelivering
            CompletionContext.deliver { nested = CompletionContext.isDelivering }
            afterNested = CompletionContext.isDelivering
        }
        XCTAssertTrue(inside)
        XCTAssertTrue(nested)
        XCTAssertTrue(afterNested, "a nested delivery leaves the outer one marked")
        XCTAssertFalse(CompletionContext.isDelivering)
    }

    func testCallbacksOfAResponseRunMarkedAsADelivery() throws {
        let transport = URLSessionTransport()
        let marked = gated(on: transport) { $0.map { _ in CompletionContext.isDelivering } }
        XCTAssertTrue(try marked.wait(timeout: 30))
    }

    func testARequestFromACallbackWaitsForTheSubmissionQueueWhileOthersAreInFlight() throws {
        // Given a request in flight and the transport's submission queue held
        let transport = URLSessionTransport()
        let (slow, sent) = inFlightWithSubmissionsHeld(on: transport)

        // When a callback starts a request
        let second = request("chained")
        let chained = gated(sent) { $0.flatMap { _ in transport.send(second) } }

        // Then it starts only once the queue runs, and completes then
        assertNotStarted(chained, path: "/chained", "the chained request started on the delegate queue")
        transport.submissionQueue.resume()
        XCTAssertEqual(try text(chained).wait(timeout: 30), "chained")
        releaseSlow.signal()
        XCTAssertEqual(try text(slow).wait(timeout: 30), "slow")
    }

    func testARequestFromACallbackCancelledBeforeItsTurnNeverStarts() throws {
        try assertCancelledBeforeItsTurnNeverStarts(on: URLSessionTransport())
    }

    func testATransportOverASessionOfYourOwnDoesTheSame() throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        try assertCancelledBeforeItsTurnNeverStarts(on: URLSessionTransport(session: session))
    }

    /// With another request in flight and `transport`'s submission queue held, a callback starts a request
    /// and cancels it at once: it fails as cancelled and never reaches the server, and later requests still go out.
    private func assertCancelledBeforeItsTurnNeverStarts(
        on transport: URLSessionTransport, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        // Given a request in flight and the transport's submission queue held
        let (slow, sent) = inFlightWithSubmissionsHeld(on: transport)

        // When a callback starts a request and cancels it at once
        let second = request("chained")
        let cancelled = gated(sent) { small in
            small.flatMap { _ -> Future<ConnectResponse> in
                let chained = transport.send(second)
                chained.cancel()
                return chained
            }
        }
        let outcome = try cancelled.waitForResult(timeout: 30)
        transport.submissionQueue.resume()

        // Then it failed as cancelled and never reached the server, while later requests still go out
        XCTAssertEqual(kind(of: outcome), .cancelled, file: file, line: line)
        let third = request("after")
        let after = gated(on: transport) { $0.flatMap { _ in transport.send(third) } }
        XCTAssertEqual(try text(after).wait(timeout: 30), "after", file: file, line: line)
        XCTAssertEqual(server.requestCount(for: "GET", path: "/chained"), 0, file: file, line: line)
        releaseSlow.signal()
        _ = try slow.wait(timeout: 30)
    }

    /// A plain task started after its caller cancelled (on Linux a task can start later, from the submission queue,
    /// so a cancellation can land between the queue's check and the start): the cancellation finds the deadline
    /// armed and disarms it, instead of the deadline being armed after it, holding the request until it fires.
    func testAPlainTaskStartedAfterItsCallerCancelledLeavesNoDeadlineArmed() throws {
        let transport = URLSessionTransport()
        let promise = Promise<ConnectResponse>()
        promise.future.cancel()
        var slow = request("slow")
        slow.timeoutInterval = 30
        let before = DeadlineScheduler.shared.pendingCount

        transport.startDataTask(slow, promise: promise)

        // At most as many: a deadline of an earlier test may have fired meanwhile.
        XCTAssertLessThanOrEqual(DeadlineScheduler.shared.pendingCount, before, "the deadline was left armed")
        XCTAssertEqual(kind(of: try promise.future.waitForResult(timeout: 10)), .cancelled)
    }

    func testWithNothingElseInFlightARequestFromACallbackStartsAtOnce() throws {
        // The submission queue is held: a request that went through it would never complete.
        let transport = URLSessionTransport()
        // On Linux too: no streamed body is in flight (`URLSessionTransport.startOffTheCaller`).
        transport.submissionQueue.suspend()
        defer { transport.submissionQueue.resume() }
        let second = request("chained")
        let chained = transport.send(request("small")).flatMap { _ in transport.send(second) }
        XCTAssertEqual(try text(chained).wait(timeout: 30), "chained")
    }

    func testTransfersFromACallbackDoNotWaitForTheSubmissionQueue() throws {
        // A transfer runs through the core's exchange, which starts its hop from a task of its own, never from the
        // caller's thread (here a delivery's callback): it needs no submission queue, and completes with it held.
        // On Linux too: no streamed body is in flight (`URLSessionTransport.startOffTheCaller`).
        let transport = URLSessionTransport()
        transport.submissionQueue.suspend()
        defer { transport.submissionQueue.resume() }
        let limited = TransferOptions(maxResponseBytes: 1 << 20)
        let third = request("after")

        let chained = gated(on: transport) { $0.flatMap { _ in transport.send(third, transfer: limited) } }

        XCTAssertEqual(try text(chained).wait(timeout: 30), "after")
    }

    func testManyChainsInFlightAllCompleteOnTheDelegateQueue() throws {
        // 16 chains of 10 requests each, every step started from the previous step's callback
        let transport = URLSessionTransport()
        let delegateQueue = transport.session.delegateQueue
        let small = request("small")
        let stepsStartedOnDelegateQueue = Guarded(0)
        @Sendable func chain(_ steps: Int) -> Future<Int> {
            // A step started on the delegate queue adds its callback there, before its response can be delivered
            // there: the callback runs on that queue. One started elsewhere (the first step, by the test's thread,
            // and the steps after a callback that ran there because its response had already arrived) adds it
            // after `send` returns, and runs it on the adding thread when the response came first.
            let startedOnDelegateQueue = OperationQueue.current === delegateQueue
            if startedOnDelegateQueue { stepsStartedOnDelegateQueue.withLock { $0 += 1 } }
            return transport.send(small).flatMap { response -> Future<Int> in
                if startedOnDelegateQueue { XCTAssertTrue(OperationQueue.current === delegateQueue) }
                XCTAssertEqual(String(decoding: response.data, as: UTF8.self), "small")
                return steps == 1 ? Future(value: 1) : chain(steps - 1).map { $0 + 1 }
            }
        }
        let chains = (0..<16).map { _ in chain(10) }
        XCTAssertEqual(try Future.all(chains).wait(timeout: 60), Array(repeating: 10, count: 16))
        XCTAssertEqual(server.requestCount(for: "GET", path: "/small"), 160)
        XCTAssertGreaterThan(stepsStartedOnDelegateQueue.withLock { $0 }, 0, "no step was started from a callback")
    }
}

import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RequestQueue` at its edges: the cap changed under load, ids that are not waiting, the stages around it (cache,
/// retries, streams), what it shows, and a queue released with requests waiting in it.
final class RequestQueueHuntTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// A transport that answers every request on another thread, and records the most requests it held at once.
    private final class CountingTransport: Transport, Sendable {
        /// In flight now, and the most ever.
        let counts = Protected((now: 0, most: 0))

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            counts.withLock { counts in
                counts.now += 1
                counts.most = max(counts.most, counts.now)
            }
            let promise = Promise<ConnectResponse>()
            DispatchQueue.global().async {
                self.counts.withLock { $0.now -= 1 }
                promise.succeed(ConnectResponse(request: request, statusCode: 200)!)
            }
            return promise.future
        }
    }

    /// A retry clock that keeps each action until the test runs it.
    private final class HeldRetryClock: RetryClock {
        let actions = Protected<[@Sendable () -> Void]>([])

        func schedule(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any RetryCancellable {
            actions.withLock { $0.append(action) }
            return RetryCancellables.none
        }

        /// Runs the actions kept so far.
        func fire() {
            for action in actions.withLock({ actions in
                defer { actions.removeAll() }
                return actions
            }) { action() }
        }
    }

    // MARK: - The cap

    /// Requests submitted from many threads while other threads set the cap (raised, lowered, 0, negative): no more
    /// than the highest cap ever set reach the transport at once, every request completes, and a cap below 1 reads
    /// back as 1.
    func testTheCapHoldsWhileManyThreadsSubmitAndChangeIt() {
        let transport = CountingTransport()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = Protected<[Future<Data>]>([])
        let caps = [3, 0, -7, 1, 4, Int.min, 2]

        DispatchQueue.concurrentPerform(iterations: 600) { index in
            if index % 10 == 0 {
                queue.maxConcurrentRequests = caps[(index / 10) % caps.count]
            } else {
                let future = connect.request(Endpoint(endpoint: "/r/\(index)"))
                futures.withLock { $0.append(future) }
            }
        }

        for future in futures.withLock({ $0 }) { XCTAssertNotNil(value(of: future)) }
        XCTAssertLessThanOrEqual(transport.counts.withLock { $0.most }, 4)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertGreaterThanOrEqual(queue.maxConcurrentRequests, 1)
        queue.maxConcurrentRequests = -1
        XCTAssertEqual(queue.maxConcurrentRequests, 1)
    }

    /// `resume()` called on one thread while others submit into the paused queue: every request starts and
    /// completes, none is left waiting.
    func testAResumeFromAnotherThreadDuringSubmissionLosesNoRequest() {
        let transport = CountingTransport()
        let queue = RequestQueue(maxConcurrentRequests: 3)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = Protected<[Future<Data>]>([])
        queue.pause()

        DispatchQueue.concurrentPerform(iterations: 300) { index in
            if index == 150 { queue.resume() }
            let future = connect.request(Endpoint(endpoint: "/r/\(index)"))
            futures.withLock { $0.append(future) }
        }

        for future in futures.withLock({ $0 }) { XCTAssertNotNil(value(of: future)) }
        XCTAssertLessThanOrEqual(transport.counts.withLock { $0.most }, 3)
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(queue.runningCount, 0)
    }

    // MARK: - Cancelling by id

    /// `cancel(_:)` of a request that ran and ended, or of an id the queue never gave: `false`, and a request
    /// running meanwhile is not touched.
    func testCancellingAnEndedOrUnknownIDDoesNothing() throws {
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let first = connect.request(Endpoint(endpoint: "/r/0"))
        let second = connect.request(Endpoint(endpoint: "/r/1"))
        let secondID = try XCTUnwrap(queue.waitingRequests.first?.id)
        transport.respond(to: 0)
        XCTAssertNotNil(value(of: first))
        let third = connect.request(Endpoint(endpoint: "/r/2"))
        transport.respond(to: 1)
        XCTAssertNotNil(value(of: second))

        XCTAssertFalse(queue.cancel(secondID), "ended")
        XCTAssertFalse(queue.cancel(secondID &+ 1_000), "never given")

        XCTAssertFalse(third.isCompleted)
        XCTAssertEqual(queue.runningCount, 1)
        XCTAssertEqual(transport.cancellations.value, 0)
        transport.respond(to: 2)
        XCTAssertNotNil(value(of: third))
    }

    // MARK: - The stages around the queue

    /// A response the cache serves takes no slot: it comes while the queue is paused.
    func testACacheHitNeedsNoSlot() throws {
        let transport = FakeTransport.answering(.json(["n": 1]))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: queue,
            responseCache: ResponseCache(defaultRule: CacheRule(timeToLive: 600)))
        XCTAssertNotNil(value(of: connect.request(Endpoint(endpoint: "/cached"))))
        queue.pause()

        let cached = connect.request(Endpoint(endpoint: "/cached"))

        XCTAssertNotNil(value(of: cached))
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    /// Requests that fail, are retried (a 503), are cancelled while running or end in an error status never hold more
    /// slots than the cap: each retry queues again for one slot, the cancelled request frees its own, and when every
    /// call has ended no slot is held and nothing waits.
    func testTheCapHoldsWhileRequestsFailAreCancelledAndRetried() {
        // Given: two slots, six requests, a retry allowed
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 2, clock: ImmediateRetryClock()),
            requestQueue: queue)
        let futures = (0..<6).map { connect.request(Endpoint(endpoint: "/r/\($0)")) }
        let inFlight = { transport.futures.filter { !$0.isCompleted }.count }
        XCTAssertEqual(transport.requests.count, 2)
        // When: the first is answered 503 (its retry queues behind the others) and the second is cancelled
        transport.respond(to: 0, status: 503)
        XCTAssertEqual(inFlight(), 2)
        XCTAssertEqual(queue.runningCount, 2)
        futures[1].cancel()
        XCTAssertEqual(inFlight(), 2)
        XCTAssertEqual(queue.runningCount, 2)
        // Then: the rest, answered one by one (one with a 500, retried too), never hold more than two slots
        var answered = 2
        while answered < transport.requests.count {
            XCTAssertLessThanOrEqual(inFlight(), 2)
            XCTAssertLessThanOrEqual(queue.runningCount, 2)
            transport.respond(to: answered, status: answered == 3 ? 500 : 200)
            answered += 1
        }
        // Each first attempt once (the cancelled one included: it was running), then the two retries, at the back
        XCTAssertEqual(
            transport.requests.map(\.url?.path), ["/r/0", "/r/1", "/r/2", "/r/3", "/r/4", "/r/5", "/r/0", "/r/3"])
        for future in futures { XCTAssertTrue(future.isCompleted) }
        XCTAssertEqual(connectError(of: futures[1])?.kind, .cancelled)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    /// A retry queues again, as documented: behind the request that waited while the first attempt ran.
    func testARetryQueuesAgainBehindTheWaitingRequests() {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let gate = Promise<Void>()
        transport.stub("/a", with: [FakeResponse.status(503).released(by: gate.future), .json(["ok": true])])
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 2, clock: ImmediateRetryClock()),
            requestQueue: queue)
        let retried = connect.request(Endpoint(endpoint: "/a"))
        let waiting = connect.request(Endpoint(endpoint: "/b"))

        gate.succeed(())

        XCTAssertNotNil(value(of: retried))
        XCTAssertNotNil(value(of: waiting))
        XCTAssertEqual(transport.requests.compactMap { $0.url?.path }, ["/a", "/b", "/a"])
        XCTAssertEqual(queue.runningCount, 0)
    }

    /// A stream frees its slot when its head arrives, as documented, even if nobody reads its body: the next request
    /// starts while the stream stays open.
    func testAStreamNobodyReadsFreesItsSlotAtItsHead() throws {
        let transport = FakeTransport(fallback: .json(["ok": true]))
        let bodyEnds = Promise<Void>()
        transport.stub(
            "/events",
            with: .stream { body in
                _ = await body.send(Data("data: 1\n\n".utf8))
                try? await bodyEnds.future.value
                body.finish(throwing: nil)
            })
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let stream = connect.stream(Endpoint(endpoint: "/events"))
        XCTAssertNotNil(value(of: stream.head))

        let next = connect.request(Endpoint(endpoint: "/next"))

        XCTAssertNotNil(value(of: next))
        XCTAssertEqual(transport.requests.compactMap { $0.url?.path }, ["/events", "/next"])
        stream.cancel()
        bodyEnds.succeed(())
    }

    // MARK: - What the queue shows

    /// A waiting request printed, dumped or reflected shows none of the secrets its URL carries (a password, a
    /// token in the query), nor its `Authorization` header.
    func testAWaitingRequestShowsNoSecret() throws {
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let connect = Connect(transport: FakeTransport.answering(.status(200)), retryPolicy: nil, requestQueue: queue)
        let route = Route(
            url: URL(string: "https://alice:pa55word@api.example.com/items?access_token=tok-123&page=2")!,
            headers: [HTTPHeader(name: "Authorization", value: "Bearer bear-456")])
        let call = connect.request(route)
        let waiting = try XCTUnwrap(queue.waitingRequests.first)

        var dumped = ""
        dump(queue.waitingRequests, to: &dumped)
        let shown = [
            "\(waiting)", String(describing: waiting), String(reflecting: waiting), dumped, "\(waiting.request)",
            waiting.request.redactedURL,
        ]
        for text in shown {
            for secret in ["pa55word", "tok-123", "bear-456"] {
                XCTAssertFalse(text.contains(secret), "\(secret) in \(text)")
            }
        }
        XCTAssertTrue("\(waiting)".contains("page=2"), "\(waiting)")
        queue.cancelPending()
        XCTAssertEqual(connectError(of: call)?.kind, .cancelled)
    }

    // MARK: - A queue released with requests waiting

    /// A paused queue that its client and the app let go of, with a request waiting that has no deadline: nothing can
    /// resume it any more, so the request fails `cancelled` at once, unsent, and the queue is freed. It waited for
    /// ever, and the queue, its client's pipeline and transport with it, were never freed.
    func testAPausedQueueReleasedWithItsClientFailsItsWaitingRequests() throws {
        try assertAPausedQueueReleasedWithItsClientFailsItsWaitingRequest(middlewares: { _ in [] })
    }

    /// The same through a `ConnectivityMiddleware` that pauses the queue while offline: the middleware held the queue,
    /// and the waiting request the middleware, so nothing was freed and the request waited for ever.
    func testAPausedQueueAConnectivityMiddlewareFollowsIsFreedWithItsClient() throws {
        try assertAPausedQueueReleasedWithItsClientFailsItsWaitingRequest(middlewares: { queue in
            [ConnectivityMiddleware(monitor: FakeConnectivityMonitor(.connected), pausing: queue)]
        })
    }

    private func assertAPausedQueueReleasedWithItsClientFailsItsWaitingRequest(
        middlewares: (RequestQueue) -> [any Middleware], line: UInt = #line
    ) throws {
        let transport = FakeTransport.answering(.status(200))
        weak var releasedQueue: RequestQueue?
        var endpoint = Endpoint(endpoint: "/waiting")
        endpoint.timeout = .infinity
        let future: Future<Data> = {
            let queue = RequestQueue(maxConcurrentRequests: 1)
            releasedQueue = queue
            queue.pause()
            let connect = Connect(
                transport: transport, middlewares: middlewares(queue), retryPolicy: nil, requestQueue: queue)
            return connect.request(endpoint)
        }()

        guard case .failure(let error)? = try? future.waitForResult(timeout: 5) else {
            return XCTFail("still waiting, or sent: \(String(describing: future.result))", line: line)
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)", line: line)
        XCTAssertTrue(transport.requests.isEmpty, line: line)
        XCTAssertNil(releasedQueue, "the queue is freed", line: line)
    }

    /// A retry that comes after its paused queue was released (the first attempt ran, the client and the app let go
    /// of the queue during the backoff) fails `cancelled`, unsent, as the requests waiting in it did: it is not sent
    /// past the pause, nor left waiting in a queue nobody can resume.
    func testARetryAfterItsPausedQueueWasReleasedFailsUnsent() throws {
        let transport = FakeTransport.answering(.status(503))
        let clock = HeldRetryClock()
        weak var releasedQueue: RequestQueue?
        var endpoint = Endpoint(endpoint: "/retried")
        endpoint.timeout = .infinity
        let future: Future<Data> = {
            let queue = RequestQueue(maxConcurrentRequests: 1)
            releasedQueue = queue
            let connect = Connect(
                transport: transport, retryPolicy: RetryPolicy(maxAttempts: 2, clock: clock), requestQueue: queue)
            let future = connect.request(endpoint)
            queue.pause()
            return future
        }()
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertNil(releasedQueue, "nothing holds the queue during the backoff")

        clock.fire()

        guard case .failure(let error)? = try? future.waitForResult(timeout: 5) else {
            return XCTFail("still waiting, or answered: \(String(describing: future.result))")
        }
        XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        XCTAssertEqual(transport.requests.count, 1, "the retry is not sent")
    }

    /// A queue released while requests run and others wait (not paused) is not released: the running requests keep
    /// it, and the waiting ones start in turn.
    func testAQueueReleasedWithRequestsRunningStillStartsTheWaitingOnes() throws {
        let transport = ManualTransport()
        let (running, waiting): (Future<Data>, Future<Data>) = {
            let connect = Connect(
                transport: transport, retryPolicy: nil, requestQueue: RequestQueue(maxConcurrentRequests: 1))
            return (connect.request(Endpoint(endpoint: "/r/0")), connect.request(Endpoint(endpoint: "/r/1")))
        }()

        transport.respond(to: 0)
        XCTAssertNotNil(value(of: running))
        transport.respond(to: 1)
        XCTAssertNotNil(value(of: waiting))
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/r/0", "/r/1"])
    }
}

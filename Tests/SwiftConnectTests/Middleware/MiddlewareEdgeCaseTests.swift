import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

private struct ClosureTransport: Transport {
    let body: @Sendable (URLRequest) -> Future<ConnectResponse>
    init(_ body: @escaping @Sendable (URLRequest) -> Future<ConnectResponse>) { self.body = body }
    func send(_ request: URLRequest) -> Future<ConnectResponse> { body(request) }
}

/// The queue, the coalescer, retries and plugins at their edges: calls that must not be merged, limits, huge
/// or malformed `Retry-After`, uncapped backoff, cancellation at every step.
final class MiddlewareEdgeCaseTests: XCTestCase {
    /// A plugin that records "will", "did" and "fail" and fulfils `expectation` at each.
    private func recordingPlugin(_ events: Recorder<String>, fulfilling expectation: XCTestExpectation) -> AnyPlugin {
        AnyPlugin(
            willSend: { _, _ in
                events.append("will")
                expectation.fulfill()
            },
            didReceive: { _, _ in
                events.append("did")
                expectation.fulfill()
            },
            didFail: { _, _, _ in
                events.append("fail")
                expectation.fulfill()
            })
    }

    typealias Endpoint = ClientFixtures.Endpoint

    private func echoAuthorization() -> FakeResponse {
        .handler { request in
            let auth = request.value(forHTTPHeaderField: "Authorization") ?? "none"
            return .success(ConnectResponse(request: request, statusCode: 200, data: Data(auth.utf8))!)
        }
    }

    // MARK: - Coalescer

    func testCoalescerDoesNotMergeRequestsThatPerCallMiddlewaresMakeDifferent() {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: echoAuthorization().released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let alice = connect.request(
            Endpoint(), options: RequestOptions(middlewares: [HeaderMiddleware(name: "Authorization", value: "alice")]))
        let bob = connect.request(
            Endpoint(), options: RequestOptions(middlewares: [HeaderMiddleware(name: "Authorization", value: "bob")]))
        gate.succeed(())
        XCTAssertEqual(value(of: alice).map { String(decoding: $0, as: UTF8.self) }, "alice")
        XCTAssertEqual(value(of: bob).map { String(decoding: $0, as: UTF8.self) }, "bob")
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testCoalescerCallsEachCallersPlugins() {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: FakeResponse.status(200).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let firstSaw = expectation(description: "first plugin didReceive")
        let secondSaw = expectation(description: "second plugin didReceive")
        let a = connect.request(
            Endpoint(), options: RequestOptions(plugins: [AnyPlugin(didReceive: { _, _ in firstSaw.fulfill() })]))
        let b = connect.request(
            Endpoint(), options: RequestOptions(plugins: [AnyPlugin(didReceive: { _, _ in secondSaw.fulfill() })]))
        gate.succeed(())
        _ = value(of: a)
        _ = value(of: b)
        wait(for: [firstSaw, secondSaw], timeout: 3)
    }

    func testCoalescerCancellingOneCallerKeepsOthers() {
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        XCTAssertEqual(transport.requests.count, 1)
        futures[1].cancel()
        XCTAssertEqual(transport.cancellations.value, 0)
        transport.respond(to: 0, body: Data("x".utf8))
        XCTAssertEqual(value(of: futures[0]), Data("x".utf8))
        XCTAssertEqual(value(of: futures[2]), Data("x".utf8))
        XCTAssertEqual(connectError(of: futures[1])?.kind, .cancelled)
    }

    func testCoalescerCancellingAllCancelsTransportOnce() {
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        for f in futures { f.cancel() }
        XCTAssertEqual(transport.cancellations.value, 1)
        // A new identical request starts a new call.
        let again = connect.request(Endpoint())
        XCTAssertEqual(transport.requests.count, 2)
        transport.respond(to: 1)
        XCTAssertNotNil(value(of: again))
    }

    func testCoalescerSharesErrors() {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: FakeResponse.failure(URLError(.badURL)).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let futures = (0..<3).map { _ in connect.request(Endpoint()) }
        gate.succeed(())
        for f in futures { XCTAssertNotNil(error(of: f)) }
        XCTAssertEqual(transport.requests.count, 1)
    }

    // MARK: - Queue

    func testQueueRespectsLimitFIFOAndCancellation() {
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = (0..<10).map { i in connect.request(Endpoint(endpoint: "/items/\(i)")) }
        XCTAssertEqual(transport.requests.count, 2)
        futures[2].cancel()
        futures[3].cancel()
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(queue.pendingCount, 6)
        futures[0].cancel()  // running: frees its slot
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(transport.requests.count, 3)
        var answered = 1
        while answered < transport.requests.count {
            transport.respond(to: answered)
            answered += 1
        }
        let paths = transport.requests.map { $0.url!.path }
        XCTAssertEqual(
            paths, ["/items/0", "/items/1", "/items/4", "/items/5", "/items/6", "/items/7", "/items/8", "/items/9"])
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testQueueClampsZeroAndNegative() {
        for limit in [0, -5, Int.min] {
            let queue = RequestQueue(maxConcurrentRequests: limit)
            let connect = Connect(
                transport: FakeTransport.answering(.status(200)), retryPolicy: nil, requestQueue: queue)
            let futures = (0..<5).map { _ in connect.request(Endpoint()) }
            for f in futures { XCTAssertNotNil(value(of: f)) }
        }
    }

    func testQueueUnderConcurrentLoadNeverExceedsLimit() {
        let inFlight = Counter()
        let maxSeen = Protected(0)
        let current = Protected(0)
        let transport = ClosureTransport { request in
            let now = current.withLock {
                $0 += 1
                return $0
            }
            maxSeen.withLock { $0 = max($0, now) }
            let p = Promise<ConnectResponse>()
            let ended = Protected(false)
            let end: @Sendable () -> Void = {
                if ended.withLock({ e in
                    defer { e = true }
                    return !e
                }) {
                    current.withLock { $0 -= 1 }
                }
            }
            p.setCancelHandler { end() }  // a cancelled request frees its slot at once
            DispatchQueue.global().async {
                end()
                inFlight.increment()
                p.completeIfPending(with: .success(ConnectResponse(request: request, statusCode: 200)!))
            }
            return p.future
        }
        let queue = RequestQueue(maxConcurrentRequests: 3)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = Protected<[Future<Data>]>([])
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let f = connect.request(Endpoint())
            if i % 7 == 0 { f.cancel() }
            futures.withLock { $0.append(f) }
        }
        let all = futures.withLock { $0 }
        for f in all { _ = result(of: f) }
        XCTAssertLessThanOrEqual(maxSeen.withLock { $0 }, 3)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testQueueSynchronousFailureReleasesSlot() {
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: FakeTransport.answering(.failure(URLError(.badURL))), retryPolicy: nil, requestQueue: queue)
        for _ in 0..<5 { XCTAssertNotNil(error(of: connect.request(Endpoint()))) }
        XCTAssertEqual(queue.runningCount, 0)
    }

    // MARK: - Plugins

    func testPluginsBalancedPerAttemptWithRetryAndCancel() {
        let events = Recorder<String>()
        let allDone = expectation(description: "plugin events")
        allDone.expectedFulfillmentCount = 6  // 3 willSend + 3 didReceive
        let plugin = AnyPlugin(
            willSend: { _, _ in
                events.append("will")
                allDone.fulfill()
            },
            didReceive: { r, _ in
                events.append("did\(r.statusCode)")
                allDone.fulfill()
            },
            didFail: { _, _, _ in
                events.append("fail")
                allDone.fulfill()
            })
        let clock = ImmediateRetryClock()
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503), .status(503), .status(200)])
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 3, clock: clock),
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        wait(for: [allDone], timeout: 5)
        XCTAssertEqual(events.values, ["will", "did503", "will", "did503", "will", "did200"])
    }

    func testPluginsBalancedOnCancel() {
        let events = Recorder<String>()
        let allDone = expectation(description: "plugin events")
        allDone.expectedFulfillmentCount = 2
        let plugin = recordingPlugin(events, fulfilling: allDone)
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        let f = connect.request(Endpoint())
        f.cancel()
        wait(for: [allDone], timeout: 5)
        XCTAssertEqual(events.values, ["will", "fail"])
    }

    /// An attempt stopped by the call's deadline, or by its own timeout, ends for its plugins as timed out, as it
    /// does for the caller and the observers: a monitor must not count timeouts as the user's cancellations.
    func testPluginsHearThatADeadlineOrAnAttemptTimeoutStoppedTheAttempt() {
        assertPluginsHearTimedOut(through: "no stage", queue: nil, coalesces: false)
    }

    /// The same through a client's own stages that hold a promise of their own in front of the plugins: its
    /// ``RequestQueue`` (the attempt holds a slot), its coalescer (the attempt's caller is the shared request's only
    /// one), each with the call's deadline and with an attempt's own timeout. They stop the attempt as it was
    /// stopped, not as a caller's cancellation.
    func testPluginsHearThatADeadlineOrAnAttemptTimeoutStoppedAnAttemptThroughTheQueueOrTheCoalescer() {
        assertPluginsHearTimedOut(through: "queue", queue: RequestQueue(maxConcurrentRequests: 2), coalesces: false)
        assertPluginsHearTimedOut(through: "coalescer", queue: nil, coalesces: true)
    }

    /// Stops a call by its deadline, then an attempt by its own timeout, over a transport that never answers, through
    /// `queue` and the coalescer as asked; checks that the plugins heard each attempt end as timed out.
    private func assertPluginsHearTimedOut(
        through stage: String, queue: RequestQueue?, coalesces: Bool, line: UInt = #line
    ) {
        for (timeout, policy) in [(0.05, nil), (60, RetryPolicy(maxAttempts: 2, attemptTimeout: 0.05))] {
            let failures = Recorder<String>()
            let allDone = expectation(description: "plugin events")
            allDone.expectedFulfillmentCount = policy == nil ? 2 : 4
            let plugin = AnyPlugin(
                willSend: { _, _ in allDone.fulfill() }, didReceive: { _, _ in allDone.fulfill() },
                didFail: { error, _, _ in
                    failures.append((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)")
                    allDone.fulfill()
                })
            let connect = Connect(
                transport: ManualTransport(), retryPolicy: policy, requestQueue: queue,
                settings: Connect.Settings(
                    coalescesIdenticalRequests: coalesces, options: RequestOptions(plugins: [plugin])))

            let outcome = connectError(of: connect.request(Endpoint(timeout: timeout)) as Future<Data>)

            XCTAssertEqual(outcome?.kind, .timedOut, stage, line: line)
            wait(for: [allDone], timeout: 5)
            XCTAssertEqual(
                failures.values, Array(repeating: "timedOut", count: policy == nil ? 1 : 2), stage, line: line)
            XCTAssertEqual(queue?.runningCount ?? 0, 0, stage, line: line)
        }
    }

    // MARK: - Retry

    func testRetryAfterParsing() {
        let now = Date(timeIntervalSince1970: 1_704_067_200)  // Mon, 01 Jan 2024 00:00:00 GMT
        XCTAssertEqual(RetryAfter.delay(from: "120", now: now), 120)
        XCTAssertEqual(RetryAfter.delay(from: " 5 ", now: now), 5)
        XCTAssertNil(RetryAfter.delay(from: "-5", now: now), "a negative value is invalid, not 'retry now'")
        XCTAssertNil(RetryAfter.delay(from: "-0", now: now))
        XCTAssertNil(RetryAfter.delay(from: "+5", now: now))
        XCTAssertNil(RetryAfter.delay(from: "soon", now: now))
        XCTAssertNil(RetryAfter.delay(from: "", now: now))
        XCTAssertNil(RetryAfter.delay(from: "1.5", now: now))
        XCTAssertEqual(RetryAfter.delay(from: "Mon, 01 Jan 2024 00:00:30 GMT", now: now), 30)
        XCTAssertEqual(RetryAfter.delay(from: "Sun, 31 Dec 2023 23:00:00 GMT", now: now), 0)
        let huge = RetryAfter.delay(from: String(repeating: "9", count: 400), now: now)
        XCTAssertNotNil(huge)
        XCTAssertTrue(huge!.isFinite, "huge Retry-After gives \(String(describing: huge))")
    }

    func testHugeRetryAfterWithUncappedPolicyIsNotWaitedPastTheCallsDeadline() {
        let clock = ImmediateRetryClock()
        let policy = RetryPolicy(maxAttempts: 2, maxRetryAfter: .infinity, clock: clock)
        let transport = FakeTransport()
        transport.stub("/items", with: .status(503, headers: ["Retry-After": String(repeating: "9", count: 400)]))
        let connect = Connect(transport: transport, retryPolicy: policy)
        // The wait would end long after the connector's 60 s timeout: the 503 stands at once, not retried now
        XCTAssertEqual((error(of: connect.request(Endpoint())) as? ConnectError)?.statusCode, 503)
        XCTAssertEqual(clock.delays, [])
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testBackoffWithUncappedMaxDelay() {
        let policy = RetryPolicy(baseDelay: 1, multiplier: 1e200, maxDelay: .infinity)
        let d = policy.backoffDelay(afterAttempt: 3)
        XCTAssertGreaterThanOrEqual(d, 0)
    }

    func testBackoffJitterBoundsAndCaps() {
        for attempt in [-3, 0, 1, 2, 10, 1000, Int.max] {
            let p = RetryPolicy(baseDelay: 0.5, multiplier: 2, maxDelay: 30, jitter: { _ in -1e9 })
            let q = RetryPolicy(baseDelay: 0.5, multiplier: 2, maxDelay: 30, jitter: { _ in .nan })
            for d in [p.backoffDelay(afterAttempt: attempt), q.backoffDelay(afterAttempt: attempt)] {
                XCTAssertTrue(d >= 0 && d <= 30, "attempt \(attempt) delay \(d)")
            }
        }
    }

    func testMaxAttemptsZeroOneNegativeMakeOneAttempt() {
        for n in [0, 1, -1, Int.min] {
            let transport = FakeTransport.answering(.status(503))
            let connect = Connect(
                transport: transport, retryPolicy: RetryPolicy(maxAttempts: n, clock: ImmediateRetryClock()))
            _ = result(of: connect.request(Endpoint()))
            XCTAssertEqual(transport.requests.count, 1, "maxAttempts \(n)")
        }
    }

    func testPostNotRetriedButKeyedPostRetriedWithSameKey() {
        let transport = FakeTransport.answering(.status(503))
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(maxAttempts: 3, clock: ImmediateRetryClock()))
        _ = result(of: connect.request(Endpoint(method: .post)))
        XCTAssertEqual(transport.requests.count, 1)

        let keyed = FakeTransport.answering(.status(503))
        let keyedConnect = Connect(
            transport: keyed,
            retryPolicy: RetryPolicy(maxAttempts: 3, addsIdempotencyKey: true, clock: ImmediateRetryClock()))
        _ = result(of: keyedConnect.request(Endpoint(method: .post)))
        XCTAssertEqual(keyed.requests.count, 3)
        let keys = Set(keyed.requests.compactMap { $0.value(forHTTPHeaderField: "Idempotency-Key") })
        XCTAssertEqual(keys.count, 1)

        let patch = FakeTransport.answering(.status(503))
        let patchConnect = Connect(
            transport: patch,
            retryPolicy: RetryPolicy(maxAttempts: 3, addsIdempotencyKey: true, clock: ImmediateRetryClock()))
        _ = result(of: patchConnect.request(Endpoint(method: .patch, headers: [HTTPHeader(name: "X-A", value: "1")])))
        XCTAssertEqual(Set(patch.requests.compactMap { $0.value(forHTTPHeaderField: "Idempotency-Key") }).count, 1)
    }

    func testCancelDuringBackoffStopsRetries() {
        let clock = ImmediateRetryClock(holdsActions: true)
        let transport = FakeTransport.answering(.status(503))
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(maxAttempts: 5, clock: clock))
        let f = connect.request(Endpoint())
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(clock.pendingActionCount, 1)
        f.cancel()
        _ = clock.runPendingActions()
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(connectError(of: f)?.kind, .cancelled)
    }

    func testCancelDuringAttemptStopsRetries() {
        let transport = ManualTransport()
        let clock = ImmediateRetryClock()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(maxAttempts: 5, clock: clock))
        let f = connect.request(Endpoint())
        f.cancel()
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(clock.delays.count, 0)
    }

    // MARK: - ConnectMiddleware guide API

    struct GuideMiddleware: ConnectMiddlewareProtocol {
        let attempts: Counter
        let adaptFailsAt: Int?
        func adapt(_ request: URLRequest) throws -> URLRequest {
            attempts.increment()
            if let adaptFailsAt, attempts.value == adaptFailsAt { throw TestError(7) }
            return request
        }
        func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision { .retry }
    }

    func testGuideRetryMakesMaxRetryAttemptsThenFails() {
        let transport = FakeTransport.answering(.status(500))
        let connect = Connect(
            transport: transport, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: nil)],
            retryPolicy: RetryPolicy(maxAttempts: 10, retryableStatusCodes: [], clock: ImmediateRetryClock()))
        XCTAssertNotNil(error(of: connect.request(Endpoint())))
        XCTAssertEqual(transport.requests.count, GuideMiddleware.maxRetryAttempts)
    }

    /// The hook is asked only when its answer can lead to another attempt: not on the policy's last one, where its
    /// side effects (a token refresh) would be for nothing.
    func testGuideRetryIsNotAskedOnThePolicysLastAttempt() {
        struct Counting: ConnectMiddlewareProtocol {
            let asked: Counter
            func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
                asked.increment()
                return .retry
            }
        }
        for maxAttempts in [1, 2, 3] {
            let asked = Counter()
            let transport = FakeTransport.answering(.status(500))
            let policy = RetryPolicy(maxAttempts: maxAttempts, retryableStatusCodes: [], clock: ImmediateRetryClock())
            let connect = Connect(transport: transport, middlewares: [Counting(asked: asked)], retryPolicy: policy)
            XCTAssertEqual((error(of: connect.request(Endpoint())) as? ConnectError)?.statusCode, 500)
            XCTAssertEqual(transport.requests.count, maxAttempts)
            XCTAssertEqual(asked.value, maxAttempts - 1, "maxAttempts \(maxAttempts)")
        }
    }

    func testGuideRetryNeverSendsMoreThanThePolicysMaxAttempts() {
        // Given: a hook that always says yes, and the default policy, which retries 500 by itself too
        let transport = FakeTransport.answering(.status(500))
        let clock = ImmediateRetryClock()
        let connect = Connect(
            transport: transport, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: nil)],
            retryPolicy: RetryPolicy(clock: clock))
        // When
        let failure = error(of: connect.request(Endpoint())) as? ConnectError
        // Then: one loop, one cap: 3 sends, not 3 x 5
        XCTAssertEqual(failure?.statusCode, 500)
        XCTAssertEqual(failure?.attempts, 3)
        XCTAssertEqual(transport.requests.count, RetryPolicy.default.maxAttempts)
        // And without a policy of its own, the client still caps the hook at the default three
        let unpoliced = FakeTransport.answering(.status(500))
        let noPolicy = Connect(
            transport: unpoliced, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: nil)],
            retryPolicy: nil)
        _ = error(of: noPolicy.request(Endpoint()))
        XCTAssertEqual(unpoliced.requests.count, 3)
        // And a policy of one attempt sends once, whatever the hook says
        let once = FakeTransport.answering(.status(500))
        let single = Connect(
            transport: once, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: nil)],
            retryPolicy: RetryPolicy(maxAttempts: 1))
        _ = error(of: single.request(Endpoint()))
        XCTAssertEqual(once.requests.count, 1)
    }

    /// Always retries, but declares its own limit.
    struct TwoAttemptMiddleware: ConnectMiddlewareProtocol {
        static var maxRetryAttempts: Int { 2 }
        func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision { .retry }
    }

    /// Declares a limit below one.
    struct NoAttemptMiddleware: ConnectMiddlewareProtocol {
        static var maxRetryAttempts: Int { 0 }
        func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision { .retry }
    }

    func testAMiddlewaresOwnMaxRetryAttemptsIsTheLimit() {
        let transport = FakeTransport.answering(.status(500))
        let connect = Connect(transport: transport, middlewares: [TwoAttemptMiddleware()], retryPolicy: nil)
        XCTAssertEqual((error(of: connect.request(Endpoint())) as? ConnectError)?.statusCode, 500)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testAMaxRetryAttemptsBelowOneStillSendsTheRequestOnce() {
        let transport = FakeTransport.answering(.status(500))
        let connect = Connect(transport: transport, middlewares: [NoAttemptMiddleware()], retryPolicy: nil)
        XCTAssertEqual((error(of: connect.request(Endpoint())) as? ConnectError)?.statusCode, 500)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testGuideRetryAdaptFailureEndsRequest() {
        let transport = FakeTransport.answering(.status(500))
        let connect = Connect(
            transport: transport, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: 3)], retryPolicy: nil
        )
        XCTAssertEqual((error(of: connect.request(Endpoint())) as? TestError)?.code, 7)
        XCTAssertEqual(transport.requests.count, 2)
    }

    /// As its documentation says, the hook is not asked about an attempt its own timeout (`attemptTimeout`) stopped:
    /// the policy decides, and a POST, which may have reached the server, is not sent again on the hook's word.
    func testGuideRetryIsNotAskedAboutAnAttemptItsOwnTimeoutStopped() {
        struct AlwaysRetry: ConnectMiddlewareProtocol {
            let asked: Counter
            func retry(_ request: URLRequest, dueTo error: any Error, attempt: Int) -> RetryDecision {
                asked.increment()
                return .retry
            }
        }
        // Given: a transport that never answers, and attempts of 0.05 s within a call of 60 s
        let asked = Counter()
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, middlewares: [AlwaysRetry(asked: asked)],
            retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0, attemptTimeout: 0.05, clock: ImmediateRetryClock()))
        var endpoint = Endpoint()
        endpoint.method = .post
        // When
        let failure = connectError(of: connect.request(endpoint))
        // Then: the POST timed out once, and the hook was not asked to send it again
        XCTAssertEqual(failure?.kind, .timedOut)
        XCTAssertEqual(asked.value, 0)
        XCTAssertEqual(transport.requests.count, 1)
    }

    func testGuideRetryStopsOnCancel() {
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, middlewares: [GuideMiddleware(attempts: Counter(), adaptFailsAt: nil)],
            retryPolicy: nil)
        let f = connect.request(Endpoint())
        f.cancel()
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(transport.requests.count, 1)
    }
}

extension MiddlewareEdgeCaseTests {
    func testCoalescerHonorsEachCallersResponseLimit() {
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub("/items", with: FakeResponse.data(Data(repeating: 65, count: 100)).released(by: gate.future))
        let connect = Connect(
            transport: transport, retryPolicy: nil, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let unlimited = connect.request(Endpoint())
        let limited = connect.request(Endpoint(), options: RequestOptions(maxResponseBytes: 10))
        gate.succeed(())
        XCTAssertEqual(value(of: unlimited)?.count, 100)
        XCTAssertNotNil(error(of: limited), "a 100-byte body reached a caller limited to 10 bytes")
    }

    func testLimitAloneIsEnforcedWithoutCoalescing() {
        let transport = FakeTransport.answering(.data(Data(repeating: 65, count: 100)))
        let connect = Connect(transport: transport, retryPolicy: nil)
        XCTAssertNotNil(error(of: connect.request(Endpoint(), options: RequestOptions(maxResponseBytes: 10))))
    }

}

extension MiddlewareEdgeCaseTests {
    func testQueuePauseCancelPendingResume() {
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let futures = (0..<3).map { i in connect.request(Endpoint(endpoint: "/items/\(i)")) }
        XCTAssertEqual(transport.requests.count, 0)
        queue.cancelPending()
        for f in futures { XCTAssertEqual(connectError(of: f)?.kind, .cancelled) }
        queue.resume()
        let later = connect.request(Endpoint(endpoint: "/later"))
        XCTAssertEqual(transport.requests.map { $0.url!.path }, ["/later"])
        transport.respond(to: 0)
        XCTAssertNotNil(value(of: later))
        XCTAssertEqual(queue.runningCount, 0)
    }

    func testPluginsBalancedWhenMiddlewareAddsInvalidHeader() {
        let events = Recorder<String>()
        let allDone = expectation(description: "plugin events")
        allDone.expectedFulfillmentCount = 2
        let plugin = recordingPlugin(events, fulfilling: allDone)
        let transport = FakeTransport.answering(.status(200))
        let connect = Connect(
            transport: transport, middlewares: [HeaderMiddleware(name: "X Bad", value: "v")], retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin])))
        XCTAssertNotNil(error(of: connect.request(Endpoint())))
        wait(for: [allDone], timeout: 5)
        XCTAssertEqual(events.values, ["will", "fail"])
        XCTAssertEqual(transport.requests.count, 0)
    }
}

import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A connector's `timeout` is the caller's deadline: it bounds the whole call, every attempt and every wait between
/// them, whatever the retry policy; a middleware can ask the one retry loop for another attempt.
final class CallDeadlineTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    // MARK: - The deadline

    func testASilentServerFailsTheCallAtItsTimeoutWhateverTheRetryPolicy() throws {
        // Given: a transport that never answers, and a policy that would retry a timeout five times
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(maxAttempts: 5, baseDelay: 0.01))
        let start = DispatchTime.now()
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.3))))
        // Then: one deadline for the whole call; the attempt in flight is cancelled, no other one is sent
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertGreaterThanOrEqual(Self.seconds(since: start), 0.3)
        XCTAssertLessThan(Self.seconds(since: start), 0.3 + 2, "within the timeout plus scheduling slack")
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(transport.cancellations.value, 1)
    }

    /// The deadline passing while the transport's `send` has not returned yet (an engine that starts its work on the
    /// caller's thread, a loaded machine): the attempt it then returns is stopped as the call was, timed out, and
    /// its plugins hear so. They heard "cancelled", as if the caller had cancelled, in a call that timed out.
    func testAnAttemptWhoseSendReturnsAfterTheDeadlineIsStoppedAsTimedOut() throws {
        final class CallEnds: ConnectObserver, ConnectCallObserver {
            let ended = DispatchSemaphore(value: 0)
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                if case .callEnded = event { ended.signal() }
            }
        }
        /// Returns from `send` only once the call has ended.
        final class LateSend: Transport, @unchecked Sendable {
            // @unchecked Sendable: `observer` and `cancelled` are themselves thread-safe.
            let observer: CallEnds
            let cancelled = Counter()
            init(observer: CallEnds) { self.observer = observer }
            func send(_ request: URLRequest) -> Future<ConnectResponse> {
                XCTAssertEqual(observer.ended.wait(timeout: .now() + 10), .success)
                let promise = Promise<ConnectResponse>()
                promise.setCancelHandler { [cancelled] in cancelled.increment() }
                return promise.future
            }
        }
        // Given
        let observer = CallEnds()
        let transport = LateSend(observer: observer)
        let failures = Recorder<String>()
        let told = expectation(description: "didFail")
        let plugin = AnyPlugin(didFail: { error, _, _ in
            failures.append((error as? ConnectError).map { "\($0.kind)" } ?? "\(error)")
            told.fulfill()
        })
        let connect = Connect(
            transport: transport, retryPolicy: nil,
            settings: Connect.Settings(options: RequestOptions(plugins: [plugin]), observers: [observer]))
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.05)) as Future<Data>))
        // Then
        XCTAssertEqual(error.kind, .timedOut)
        wait(for: [told], timeout: 10)
        XCTAssertEqual(failures.values, ["timedOut"])
        XCTAssertEqual(transport.cancelled.value, 1, "the late attempt is stopped")
    }

    func testADeadlineThatPassesAfterARetrySaysHowManyAttempts() throws {
        // Given: a 503, retried at once, then an attempt that never answers
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503), .never])
        let policy = RetryPolicy(
            maxAttempts: 3, baseDelay: 0, jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock())
        let connect = Connect(transport: transport, retryPolicy: policy)
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.3))))
        // Then: the deadline's error counts both attempts, as every other end of a call does
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(error.attempts, 2)
    }

    func testTheDeadlineCoversTheWaitsBetweenAttempts() throws {
        // Given: every attempt fails at once with a retryable error; the policy waits 0.2 s, then 0.4 s, 0.8 s…
        let transport = FakeTransport.answering(.failure(URLError(.networkConnectionLost)))
        let clock = ImmediateRetryClock()
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: 0.2, jitter: RetryPolicy.noJitter, clock: clock)
        let connect = Connect(transport: transport, retryPolicy: policy)
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 1))))
        // Then: 0.2 + 0.4 fit in the second; the 0.8 s wait would end after it, so the call ends with the last
        // failure instead of waiting, well before ten attempts (the test's clock counts the waits as time spent)
        XCTAssertEqual(error.kind, .connectionLost)
        XCTAssertEqual(error.attempts, 3)
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(clock.delays, [0.2, 0.4])
    }

    func testAWaitThatWouldEndAfterTheDeadlineIsNotStarted() throws {
        // Given: a 503 asking for a 30 s wait, in a call of 5 s
        let transport = FakeTransport.answering(.status(503, headers: ["Retry-After": "30"]))
        let clock = ImmediateRetryClock()
        let connect = Connect(transport: transport, retryPolicy: RetryPolicy(clock: clock))
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 5))))
        // Then: the server's answer stands at once
        XCTAssertEqual(error.statusCode, 503)
        XCTAssertEqual(clock.delays, [])
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// Hears how many attempts the call's end reports.
    private final class EndRecorder: ConnectObserver, ConnectCallObserver {
        let attempts = Recorder<Int>()
        func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
        func record(_ event: ConnectEvent) {
            if case .callEnded(_, _, let attempts) = event { self.attempts.append(attempts) }
        }
    }

    /// The deadline passing while an attempt's answer is still being judged (its error handler is slow) ends the
    /// call once: the caller hears the outcome its observers heard, not the answer that came in the meantime.
    func testTheCallerHearsTheEndItsObserversHeardWhenTheDeadlineRacesAnAnswer() throws {
        // Given: a 503 whose judging waits until the deadline's end has been told to the observers, who wait in turn
        // (a second at most) for the caller to hear an outcome
        let judging = DispatchSemaphore(value: 0)
        let heard = DispatchSemaphore(value: 0)
        struct SlowJudge: ErrorHandling {
            let judging: DispatchSemaphore
            let calls = Recorder<Int>()
            func handle(response: [String: Any]) -> (any Error)? { nil }
            func handle(_ response: ConnectResponse) -> (any Error)? {
                // The retry loop's judging only: the caller's failure asks again.
                if calls.values.isEmpty { _ = judging.wait(timeout: .now() + 10) }
                calls.append(1)
                return ConnectError(.httpStatus, message: "503")
            }
        }
        final class Ends: ConnectObserver, ConnectCallObserver {
            let judging: DispatchSemaphore
            let heard: DispatchSemaphore
            let kinds = Recorder<String>()
            init(judging: DispatchSemaphore, heard: DispatchSemaphore) {
                self.judging = judging
                self.heard = heard
            }
            func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? { self }
            func record(_ event: ConnectEvent) {
                guard case .callEnded(let status, let error, _) = event else { return }
                kinds.append(status.map { "status \($0)" } ?? "\((error as? ConnectError)?.kind.rawValue ?? "?")")
                judging.signal()
                _ = heard.wait(timeout: .now() + 1)
            }
        }
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503)])
        let ends = Ends(judging: judging, heard: heard)
        let connect = Connect(
            transport: transport, errorHandler: SlowJudge(judging: judging),
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 5, jitter: RetryPolicy.noJitter),
            settings: Connect.Settings(observers: [ends]))
        // When
        let call: Future<Data> = connect.request(Endpoint(timeout: 0.3))
        call.observe { _ in heard.signal() }
        let error = try XCTUnwrap(connectError(of: call))
        // Then
        XCTAssertEqual(ends.kinds.values, [error.kind.rawValue])
    }

    func testAnAttemptTheDeadlineCutsShortBeforeItIsSentIsNotCounted() throws {
        // Given: a 503, retried at once, then a stage that holds the second attempt's request (as a queue, the
        // network or a token refresh would) until the call's deadline passes
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503)])
        let holdsTheRetry = AnyMiddleware { request, context, next in
            context.attempt == 1 ? next(request) : Promise<ConnectResponse>().future
        }
        let observer = EndRecorder()
        let connect = Connect(
            transport: transport, middlewares: [holdsTheRetry],
            retryPolicy: RetryPolicy(baseDelay: 0, jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [observer]))
        // When
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.3))))
        // Then: one request was sent, and the error and the call's end both say so
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(error.attempts, 1)
        XCTAssertFalse(error.description.contains("after 2 attempts"), error.description)
        XCTAssertEqual(observer.attempts.values, [1])
    }

    func testACallWhoseDeadlinePassesInTheQueueSaysNoAttemptWasSent() throws {
        // Given: a paused queue
        let transport = FakeTransport.answering(.json(string: "{}"))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        queue.pause()
        let observer = EndRecorder()
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()), requestQueue: queue,
            settings: Connect.Settings(observers: [observer]))
        // When: the call's deadline passes while its first attempt waits there
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.2))))
        // Then
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(transport.requests.count, 0)
        XCTAssertEqual(error.attempts, 0)
        XCTAssertEqual(observer.attempts.values, [0])
    }

    func testACallCancelledWhileItsRetryWaitsCountsOnlyTheAttemptSent() throws {
        // Given: a 503, retried at once, and a stage that holds the second attempt's request
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503)])
        let held = Promise<Void>()
        let holdsTheRetry = AnyMiddleware { request, context, next in
            if context.attempt == 1 { return next(request) }
            held.succeed(())
            return Promise<ConnectResponse>().future
        }
        let observer = EndRecorder()
        let connect = Connect(
            transport: transport, middlewares: [holdsTheRetry],
            retryPolicy: RetryPolicy(baseDelay: 0, jitter: RetryPolicy.noJitter, clock: ImmediateRetryClock()),
            settings: Connect.Settings(observers: [observer]))
        let call = connect.request(Endpoint(timeout: 10))
        _ = try held.future.wait(timeout: 10)
        // When
        call.cancel()
        // Then
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(observer.attempts.values, [1])
    }

    /// A retry cancelled by the queue while it waits there (`cancelPending()`, `cancel(_:)`, the client's
    /// `cancelAllRequests()`) was never sent: the call said 2 attempts, to the caller and its observers, with one sent.
    func testARetryTheQueueCancelsWhileItWaitsCountsOnlyTheAttemptSent() throws {
        for way in ["cancelPending", "cancel(id)", "cancelAllRequests"] {
            // Given: a 503, its retry held by the clock, then let go into a paused queue
            let transport = FakeTransport()
            transport.stub("/items", with: [.status(503), .json(string: "{}")])
            let clock = ImmediateRetryClock(holdsActions: true)
            let queue = RequestQueue(maxConcurrentRequests: 1)
            let observer = EndRecorder()
            let connect = Connect(
                transport: transport, retryPolicy: RetryPolicy(maxAttempts: 2, clock: clock), requestQueue: queue,
                settings: Connect.Settings(observers: [observer]))
            let call = connect.request(Endpoint(timeout: 10))
            XCTAssertEqual(clock.pendingActionCount, 1, way)
            queue.pause()
            XCTAssertEqual(clock.runPendingActions(), 1, way)
            XCTAssertEqual(queue.pendingCount, 1, way)
            // When
            switch way {
            case "cancelPending": queue.cancelPending()
            case "cancel(id)": XCTAssertTrue(queue.cancel(try XCTUnwrap(queue.waitingRequests.first).id), way)
            default: connect.cancelAllRequests()
            }
            // Then
            let error = try XCTUnwrap(connectError(of: call), way)
            XCTAssertEqual(transport.requests.count, 1, way)
            XCTAssertEqual(error.attempts, 1, "\(way): \(error)")
            XCTAssertEqual(observer.attempts.values, [1], way)
        }
    }

    func testAnInfiniteTimeoutSetsNoDeadline() {
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503), .status(503), .status(200)])
        let clock = ImmediateRetryClock()
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, clock: clock))
        XCTAssertNotNil(value(of: connect.request(Endpoint(timeout: .infinity))))
        XCTAssertEqual(clock.delays, [0.5, 1.0])
    }

    // MARK: - An attempt's own timeout

    /// Never answers its first request (as a connection the network dropped); answers every later one with 200.
    private final class SilentOnceTransport: Transport, @unchecked Sendable {
        // @unchecked Sendable: `lock` protects `count`; the two transports are thread-safe.
        private let lock = NSLock()
        private var count = 0
        let silent = ManualTransport()
        let answering = FakeTransport.answering(.status(200))

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            let isFirst = lock.withLock {
                count += 1
                return count == 1
            }
            return isFirst ? silent.send(request) : answering.send(request)
        }
    }

    func testAnAttemptThatOutlivesItsAttemptTimeoutIsAbandonedAndSentAgain() throws {
        // Given: a first attempt that never ends, a policy with a 0.2 s attempt timeout, a call of 10 s
        let transport = SilentOnceTransport()
        let clock = ImmediateRetryClock()
        let connect = Connect(
            transport: transport,
            retryPolicy: RetryPolicy(jitter: RetryPolicy.noJitter, attemptTimeout: 0.2, clock: clock))
        let start = DispatchTime.now()
        // When
        let response = try XCTUnwrap(value(of: connect.response(for: Endpoint(timeout: 10))))
        // Then: the first attempt was cancelled after its 0.2 s, the second answered
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertGreaterThanOrEqual(Self.seconds(since: start), 0.2)
        XCTAssertEqual(transport.silent.cancellations.value, 1)
        XCTAssertEqual(transport.answering.requests.count, 1)
        XCTAssertEqual(clock.delays, [0.5], "retried as a timeout is")
    }

    /// Sends its attempt's request twice at once (a hedge) and answers once both sends ended: with the first that
    /// succeeded, else with the first send's failure.
    private struct WaitingHedge: Middleware {
        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            let sends = [next(request), next(request)]
            let promise = Promise<ConnectResponse>()
            let results = Recorder<(Int, Result<ConnectResponse, any Error>)>()
            for (index, send) in sends.enumerated() {
                send.observe { result in
                    results.append((index, result))
                    let all = results.values.sorted { $0.0 < $1.0 }.map(\.1)
                    guard all.count == sends.count else { return }
                    let success = all.first { if case .success = $0 { true } else { false } }
                    promise.completeIfPending(with: success ?? all[0])
                }
            }
            return promise.future
        }
    }

    func testEachSendOfAHedgeTimesOutOnItsOwn() throws {
        for silent in 0..<2 {
            // Given: a hedge whose send number `silent` never answers while the other answers at once; sends time
            // out after 0.2 s, in a call of 10 s with one attempt
            let transport = FakeTransport()
            transport.stub(
                "/items", with: silent == 0 ? [.never, .json(string: "{}")] : [.json(string: "{}"), .never])
            let connect = Connect(
                transport: transport, middlewares: [WaitingHedge()],
                retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.2, clock: ImmediateRetryClock()))
            // When
            let result = try connect.response(for: Endpoint(timeout: 10)).waitForResult(timeout: 20)
            // Then: the silent send timed out on its own, and the hedge answered with the other's response instead
            // of the call waiting for its deadline
            guard case .success(let response) = result else {
                return XCTFail("send \(silent) silent: \(result)")
            }
            XCTAssertEqual(response.statusCode, 200)
            XCTAssertEqual(transport.requests.count, 2)
        }
    }

    func testAnAbandonedAttemptOfARequestNotSafeToReplayEndsTheCallTimedOut() throws {
        // Given
        let transport = SilentOnceTransport()
        let connect = Connect(
            transport: transport, retryPolicy: RetryPolicy(attemptTimeout: 0.2, clock: ImmediateRetryClock()))
        // When: a POST without an Idempotency-Key
        let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(method: .post, timeout: 10))))
        // Then: timed out after its attempt's 0.2 s, never sent again
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertTrue(error.message.contains("0.2 s"), error.message)
        XCTAssertEqual(transport.silent.cancellations.value, 1)
        XCTAssertEqual(transport.answering.requests.count, 0)
    }

    func testAnAttemptsTimeoutCountsFromTheTransportNotWhileQueuedOrOffline() throws {
        // Given: a queue of one slot held by another client's request until 0.5 s, and a client offline until
        // 0.5 s; both clients' attempts time out after 0.2 s, with one attempt each
        let gate = Promise<Void>()
        let network = FakeConnectivityMonitor(.disconnected)
        let transport = FakeTransport(fallback: .json(string: "{}"))
        transport.stub(.get, "/hold", with: FakeResponse.json(string: "{}").released(by: gate.future))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let holder = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let policy = RetryPolicy(maxAttempts: 1, attemptTimeout: 0.2, clock: ImmediateRetryClock())
        let queued = Connect(transport: transport, retryPolicy: policy, requestQueue: queue)
        let offline = Connect(
            transport: transport, middlewares: [ConnectivityMiddleware(monitor: network, policy: .waitForConnectivity)],
            retryPolicy: policy)
        // When: each waits longer than its attempt timeout before it can be sent
        let held = holder.request(Endpoint(endpoint: "/hold", timeout: 10))
        let waiting = queued.request(Endpoint(timeout: 10))
        let offlineCall = offline.request(Endpoint(timeout: 10))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
            gate.succeed(())
            network.goOnline(over: [.wiredEthernet])
        }
        // Then: each is sent once its wait ends, and answers; the wait did not count against the attempt
        XCTAssertNotNil(value(of: held))
        XCTAssertNotNil(value(of: waiting), "an attempt timed out while it waited in the queue")
        XCTAssertNotNil(value(of: offlineCall), "an attempt timed out while it was held offline")
        XCTAssertEqual(transport.requests.count, 3)
    }

    func testAJoinersAttemptTimeoutCountsFromWhenTheSharedRequestReachesTheTransport() throws {
        // Given: a queue of one slot held by another client's request until the test releases it, and a coalescing
        // client sharing the queue whose attempts time out after 0.5 s, with one attempt each
        let gate = Promise<Void>()
        let transport = FakeTransport(fallback: .json(string: "{}"))
        transport.stub(.get, "/hold", with: FakeResponse.json(string: "{}").released(by: gate.future))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let holder = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let coalescing = Connect(
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.5, clock: ImmediateRetryClock()),
            requestQueue: queue, settings: Connect.Settings(coalescesIdenticalRequests: true))
        let held = holder.request(Endpoint(endpoint: "/hold", timeout: 10))
        // When: two identical calls, the second joining the first, which waits in the queue
        let first = coalescing.request(Endpoint(timeout: 10))
        let joiner = coalescing.request(Endpoint(timeout: 10))
        XCTAssertEqual(queue.pendingCount, 1, "the identical calls share one request, waiting in the queue")
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/hold"])
        // …and they wait there longer than their attempt timeout: until a request sent after both joined, whose own
        // attempt timeout is 1.5 s, has timed out at the transport
        let silent = ManualTransport()
        let marker = Connect(
            transport: silent,
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 1.5, clock: ImmediateRetryClock()))
        XCTAssertEqual(connectError(of: marker.request(Endpoint(timeout: 10)))?.kind, .timedOut)
        XCTAssertFalse(first.isCompleted, "the first call's attempt timed out while it waited in the queue")
        XCTAssertFalse(
            joiner.isCompleted, "the joiner's attempt timed out while the shared request waited in the queue")
        gate.succeed(())
        // Then: the shared request is sent once the slot frees, and both calls get its answer
        XCTAssertNotNil(value(of: held))
        XCTAssertNotNil(value(of: first))
        XCTAssertNotNil(value(of: joiner), "the joiner's attempt clock counted the shared request's queue time")
        XCTAssertEqual(transport.requests.map { $0.url?.path }, ["/hold", "/items"])
    }

    func testAJoinerOfARequestAlreadyAtTheTransportIsInFlightAtOnce() throws {
        // Given: a coalescing client whose attempts time out after 0.2 s, with one attempt each, and a transport that
        // never answers
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.2, clock: ImmediateRetryClock()),
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        // When: a second identical call joins the first once it is at the transport
        let first = connect.request(Endpoint(timeout: 30))
        XCTAssertEqual(transport.requests.count, 1)
        let joiner = connect.request(Endpoint(timeout: 30))
        // Then: each attempt times out after its own timeout, not at the call's deadline (30 s, longer than the test
        // waits); the shared request, sent once, is cancelled when the last caller leaves it
        XCTAssertEqual(connectError(of: first)?.kind, .timedOut)
        XCTAssertEqual(connectError(of: joiner)?.kind, .timedOut)
        XCTAssertEqual(transport.requests.count, 1)
        XCTAssertEqual(transport.cancellations.value, 1)
    }

    func testAnAttemptsTimeoutDoesNotRunWhileATokenRefreshHoldsItsAnswer() throws {
        // Given: a server that accepts only the renewed token, a refresh the test completes, and a POST whose
        // attempts time out after 0.2 s
        let transport = FakeTransport(
            fallback: .handler { request in
                let status = request.value(forHTTPHeaderField: "Authorization") == "Bearer new" ? 200 : 401
                return .success(ConnectResponse(request: request, statusCode: status, data: Data("{}".utf8))!)
            })
        let refresh = Promise<AuthorizationToken>()
        let auth = AuthenticationMiddleware(credential: .bearer(token: "old"), refresh: { _ in refresh.future })
        let connect = Connect(
            transport: transport, middlewares: [auth],
            retryPolicy: RetryPolicy(attemptTimeout: 0.2, clock: ImmediateRetryClock()))
        let call = connect.response(for: Endpoint(method: .post, timeout: 10))
        XCTAssertEqual(transport.requests.count, 1, "answered 401, waiting for the refresh")
        // When: the refresh takes longer than the attempt timeout: until a request sent after the 401, whose own
        // attempt timeout is 0.5 s, has timed out at the transport
        let marker = Connect(
            transport: ManualTransport(),
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.5, clock: ImmediateRetryClock()))
        XCTAssertEqual(connectError(of: marker.request(Endpoint(timeout: 10)))?.kind, .timedOut)
        XCTAssertFalse(call.isCompleted, "the attempt timed out while the refresh held its 401")
        refresh.succeed(.bearer(token: "new"))
        // Then: the POST is sent again with the renewed token, and answers
        XCTAssertEqual(value(of: call)?.statusCode, 200)
        XCTAssertEqual(transport.requests.count, 2)
    }

    func testARetryAfterAnAttemptTimeoutDoesNotRejoinTheSharedRequestItGaveUpOn() throws {
        // Given: a coalescing client whose attempts time out after 0.5 s, with two attempts, and a transport that
        // never answers its first request and answers every later one
        let transport = SilentOnceTransport()
        let connect = Connect(
            transport: transport,
            retryPolicy: RetryPolicy(maxAttempts: 2, attemptTimeout: 0.5, clock: ImmediateRetryClock()),
            settings: Connect.Settings(coalescesIdenticalRequests: true))
        // When: a first call reaches the transport, and an identical one joins it 0.25 s later (after a request
        // whose attempt timeout is 0.25 s has timed out), so it is still in the shared request when the first
        // call's attempt is abandoned and retried
        let first = connect.response(for: Endpoint(timeout: 30))
        let marker = Connect(
            transport: ManualTransport(),
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.25, clock: ImmediateRetryClock()))
        XCTAssertEqual(connectError(of: marker.request(Endpoint(timeout: 10)))?.kind, .timedOut)
        let joiner = connect.response(for: Endpoint(timeout: 30))
        // Then: each retry is a request of its own, which answers; neither waits again on the silent one
        XCTAssertEqual(value(of: first)?.statusCode, 200, "the retry rejoined the request it had given up on")
        XCTAssertEqual(value(of: joiner)?.statusCode, 200)
        XCTAssertEqual(transport.silent.requests.count, 1)
        XCTAssertEqual(transport.silent.cancellations.value, 1, "cancelled once its last caller left")
    }

    func testAnAttemptTimeoutThatIsNotAPositiveNumberOrOutlastsTheCallIsNone() throws {
        for attemptTimeout in [0, -1, .nan, .infinity, 30] as [TimeInterval] {
            // Given: a transport that never answers
            let transport = ManualTransport()
            let connect = Connect(
                transport: transport,
                retryPolicy: RetryPolicy(attemptTimeout: attemptTimeout, clock: ImmediateRetryClock()))
            // When
            let error = try XCTUnwrap(connectError(of: connect.request(Endpoint(timeout: 0.3))))
            // Then: the call's deadline ended it, after one attempt
            XCTAssertEqual(error.kind, .timedOut, "\(attemptTimeout)")
            XCTAssertTrue(error.message.contains("0.3 s"), error.message)
            XCTAssertEqual(transport.requests.count, 1, "\(attemptTimeout)")
        }
    }

    // MARK: - Asking the loop for another attempt

    /// Asks for one more attempt after a 409 on the first, as the documentation of `RetryAdvice` shows.
    private struct RetryOnceOn409: Middleware {
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            next(request).map { response in
                if response.statusCode == 409, context.attempt == 1 { context.retryAdvice.request(after: 0.2) }
                return response
            }
        }
    }

    func testAUserMiddlewareAsksTheLoopForAnotherAttempt() {
        // Given: a POST (which the policy would never replay by itself) answered 409, then 200
        let transport = FakeTransport()
        transport.stub(.post, "/items", with: [.status(409), .status(200)])
        let clock = ImmediateRetryClock()
        let connect = Connect(
            transport: transport, middlewares: [RetryOnceOn409()], retryPolicy: RetryPolicy(clock: clock))
        // When
        let outcome = result(of: connect.request(Endpoint(method: .post)))
        // Then
        XCTAssertNotNil(try? outcome?.get())
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(clock.delays, [0.2], "the delay the middleware asked for, on the policy's clock")
    }

    func testAskingForAnotherAttemptStaysWithinThePolicysMaxAttempts() {
        let transport = FakeTransport.answering(.status(409))
        let connect = Connect(
            transport: transport, middlewares: [RetryOnceOn409()],
            retryPolicy: RetryPolicy(maxAttempts: 1))
        XCTAssertEqual(connectError(of: connect.request(Endpoint(method: .post)))?.statusCode, 409)
        XCTAssertEqual(transport.requests.count, 1)
    }

    /// Asks for another attempt after a 409, after the delay it was made with.
    private struct RetryOn409After: Middleware {
        let delay: TimeInterval
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            next(request).map { [delay] response in
                if response.statusCode == 409 { context.retryAdvice.request(after: delay) }
                return response
            }
        }
    }

    /// A delay that is not a finite number (an overflowed backoff of the middleware's own, a `Retry-After: inf` read
    /// with `Double(_:)`) asks for no retry, as the guide hook's `retryAfter` of one does: not for one at once.
    func testAskingForAnotherAttemptAfterNoFiniteDelayAsksForNone() {
        for (asked, requests) in [(-3.0, 2), (0, 2), (.infinity, 1), (.nan, 1)] as [(TimeInterval, Int)] {
            // Given: a POST answered 409, then 200, through a middleware that asks for a retry after `asked`
            let transport = FakeTransport()
            transport.stub(.post, "/items", with: [.status(409), .status(200)])
            let clock = ImmediateRetryClock()
            let connect = Connect(
                transport: transport, middlewares: [RetryOn409After(delay: asked)],
                retryPolicy: RetryPolicy(clock: clock))
            // When
            _ = result(of: connect.request(Endpoint(method: .post, timeout: .infinity)))
            // Then
            XCTAssertEqual(transport.requests.count, requests, "request(after: \(asked))")
            XCTAssertEqual(clock.delays, [], "request(after: \(asked))")
        }
    }

    func testEachAttemptPassesEveryMiddlewareWithItsNumber() {
        let attempts = Recorder<Int>()
        let transport = FakeTransport()
        transport.stub("/items", with: [.status(503), .status(503), .status(200)])
        let connect = Connect(
            transport: transport, middlewares: [AttemptRecorder(attempts: attempts)],
            retryPolicy: RetryPolicy(clock: ImmediateRetryClock()))
        XCTAssertNotNil(value(of: connect.request(Endpoint())))
        XCTAssertEqual(attempts.values, [1, 2, 3])
    }

    private struct AttemptRecorder: Middleware {
        let attempts: Recorder<Int>
        func intercept(_ request: consuming ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            attempts.append(context.attempt)
            return next(request)
        }
    }
}

/// A released client lets the requests it started finish: each future completes exactly once.
final class ClientReleaseTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    func testReleasingAClientLetsItsRequestsFinishEachExactlyOnce() {
        // Given: three requests in flight through a client nobody holds any more
        let transport = ManualTransport()
        let completions = Recorder<Int>()
        var futures: [Future<Data>] = []
        weak var released: Connect?
        do {
            let connect = Connect(
                transport: transport, retryPolicy: RetryPolicy(clock: ImmediateRetryClock()),
                requestQueue: RequestQueue(maxConcurrentRequests: 2))
            released = connect
            futures = (0..<3).map { connect.request(Endpoint(endpoint: "/items/\($0)")) }
        }
        for (index, future) in futures.enumerated() { future.observe { _ in completions.append(index) } }
        // Then: the client is gone, its requests are not
        XCTAssertNil(released, "in-flight requests do not keep the client alive")
        XCTAssertEqual(transport.requests.count, 2, "the queue still holds the third")
        // When: the server answers, the first with a 503 that the policy retries
        transport.respond(to: 0, status: 503)
        transport.respond(to: 1, body: Data("1".utf8))
        XCTAssertEqual(transport.requests.count, 4, "the retry of the first and the third went out")
        transport.respond(to: 2)
        transport.respond(to: 3, body: Data("2".utf8))
        // Then
        for future in futures { XCTAssertNotNil(value(of: future)) }
        XCTAssertEqual(completions.values.sorted(), [0, 1, 2], "each future completed exactly once")
    }

    func testReleasingAClientWithARealEngineLetsItsRequestsFinish() throws {
        // Given: a loopback server that answers when the test says so
        let server = try LocalServer.started()
        defer { server.stop() }
        let release = DispatchSemaphore(value: 0)
        let arrived = DispatchSemaphore(value: 0)
        server.route("GET", "/slow") { _ in
            arrived.signal()
            // Bounded: a test that fails to release the server does not hang it.
            _ = release.wait(timeout: .now() + 10)
            return .text("done")
        }
        var futures: [Future<Data>] = []
        weak var released: Connect?
        do {
            let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
            released = connect
            let endpoint = ConfigurableConnector(baseURL: server.baseURL, endpoint: "/slow")
            futures = (0..<3).map { _ in connect.request(endpoint) }
        }
        for _ in 0..<3 {
            XCTAssertEqual(arrived.wait(timeout: .now() + 10), .success, "the request reached the server")
        }
        XCTAssertNil(released)
        // When
        for _ in 0..<3 { release.signal() }
        // Then
        for future in futures { XCTAssertEqual(value(of: future), Data("done".utf8)) }
    }
}

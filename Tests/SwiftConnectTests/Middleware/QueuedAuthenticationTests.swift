import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``RequestQueue`` listed before an ``AuthenticationMiddleware``, with the refresh sent through a client that
/// shares the queue: the requests waiting for the refresh give their slots back, so the refresh call gets one.
///
/// Before, they held their slots while they waited, and the refresh call waited for one of them: for ever once the
/// queue was full. Every wait here is bounded, so a regression fails instead of hanging the suite.
final class QueuedAuthenticationTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    private static let old = AuthorizationToken.bearer(token: "old")
    private static let new = AuthorizationToken.bearer(token: "new")
    private static var token: Endpoint { Endpoint(endpoint: "/token", method: .post) }

    /// 200 when the request carries `token`, 401 otherwise.
    private static func accepting(only token: AuthorizationToken) -> FakeResponse {
        .handler { request in
            let status = request.value(forHTTPHeaderField: "Authorization") == token.headerValue ? 200 : 401
            return .success(ConnectResponse(request: request, statusCode: status, data: Data(#"{"ok":true}"#.utf8))!)
        }
    }

    /// A transport where `/token` answers at once and every other path accepts only the new credential.
    private static func server(gate: Future<Void>? = nil) -> FakeTransport {
        let items = accepting(only: new)
        let fake = FakeTransport(fallback: gate.map { items.released(by: $0) } ?? items)
        fake.stub(.post, "/token", with: .json(string: #"{"token":"new"}"#))
        return fake
    }

    /// An auth middleware whose refresh asks `authClient` (which shares the queue) for the new credential.
    private static func authentication(refreshingThrough authClient: Connect, calls: Counter? = nil)
        -> AuthenticationMiddleware
    {
        AuthenticationMiddleware(credential: old) { _ in
            calls?.increment()
            return authClient.request(token).map { _ in new }
        }
    }

    private func paths(_ requests: [URLRequest]) -> [String] {
        requests.compactMap { $0.url?.path }
    }

    private func authorization(_ requests: [URLRequest]) -> [String?] {
        requests.map { $0.value(forHTTPHeaderField: "Authorization") }
    }

    /// Answers request `index` of `transport`, or fails the test if it was not sent (instead of crashing).
    private func respond(
        _ transport: ManualTransport, to index: Int, status: Int = 200, body: Data = Data(),
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard index < transport.requests.count else {
            return XCTFail("request \(index) was not sent", file: file, line: line)
        }
        transport.respond(to: index, status: status, body: body)
    }

    private func assertEmpty(_ queue: RequestQueue, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(queue.runningCount, 0, "running", file: file, line: line)
        XCTAssertEqual(queue.pendingCount, 0, "pending", file: file, line: line)
    }

    // MARK: - The deadlock, gone

    func testAOneSlotQueueBeforeTheMiddlewareLetsTheRefreshThroughTheSharedQueue() {
        // Given: one slot; the refresh goes through another client sharing the queue
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient)
        let connect = Connect(transport: fake, middlewares: [queue, auth], retryPolicy: nil)
        // When
        let outcome = result(of: connect.request(Endpoint()), timeout: 5)
        // Then
        XCTAssertNotNil(try? outcome?.get(), "the request completes")
        XCTAssertEqual(paths(fake.requests), ["/items", "/token", "/items"])
        XCTAssertEqual(authorization(fake.requests(to: "/items")), ["Bearer old", "Bearer new"])
        XCTAssertEqual(auth.credential, Self.new)
        assertEmpty(queue)
    }

    func testAOneSlotQueueListedAmongTheMiddlewaresOfBothClients() {
        // Given: the auth client lists the queue as a middleware too
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, middlewares: [queue], retryPolicy: nil)
        let connect = Connect(
            transport: fake, middlewares: [queue, Self.authentication(refreshingThrough: authClient)],
            retryPolicy: nil)
        // When
        let outcome = result(of: connect.request(Endpoint()), timeout: 5)
        // Then
        XCTAssertNotNil(try? outcome?.get())
        XCTAssertEqual(paths(fake.requests), ["/items", "/token", "/items"])
        assertEmpty(queue)
    }

    func testAFullQueueOfFourWhoseRequestsAreAllRejectedAtOnceSharesOneRefreshThroughIt() {
        // Given: 4 slots, 6 requests (4 running, 2 waiting), the 401s held back by a gate
        let gate = Promise<Void>()
        let fake = Self.server(gate: gate.future)
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let refreshes = Counter()
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient, calls: refreshes)
        let connect = Connect(transport: fake, middlewares: [queue, auth], retryPolicy: nil)
        let futures = (0..<6).map { connect.request(Endpoint(endpoint: "/items/\($0)")) }
        XCTAssertEqual(fake.requests.count, 4)
        XCTAssertEqual(queue.pendingCount, 2)
        // When: the four are rejected at once
        gate.succeed(())
        // Then
        for future in futures { XCTAssertNotNil(try? result(of: future, timeout: 5)?.get()) }
        XCTAssertEqual(refreshes.value, 1, "one refresh for all")
        XCTAssertEqual(fake.requests(to: "/token").count, 1)
        let signed = authorization(fake.requests.filter { $0.url?.path != "/token" })
        XCTAssertEqual(signed.filter { $0 == "Bearer old" }.count, 4, "the four rejected")
        XCTAssertEqual(signed.filter { $0 == "Bearer new" }.count, 6, "each sent once with the new credential")
        assertEmpty(queue)
    }

    func testTheMiddlewareInACallsOptionsAfterAQueueOfTheClient() {
        // Given: the queue among the client's middlewares, the auth middleware in the call's options
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient)
        let connect = Connect(transport: fake, middlewares: [queue], retryPolicy: nil)
        // When
        let future = connect.request(Endpoint(), options: RequestOptions(middlewares: [auth]))
        // Then
        XCTAssertNotNil(try? result(of: future, timeout: 5)?.get())
        XCTAssertEqual(paths(fake.requests), ["/items", "/token", "/items"])
        assertEmpty(queue)
    }

    func testThirtyRequestsFromManyThreadsThroughAQueueOfThreeAllCompleteWithOneRefresh() {
        // Given: the 401s held back by a gate; the token answered on another thread
        let gate = Promise<Void>()
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new).released(by: gate.future))
        fake.stub(.post, "/token", with: FakeResponse.json(string: #"{"token":"new"}"#).delayed(by: 0))
        let queue = RequestQueue(maxConcurrentRequests: 3)
        let refreshes = Counter()
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient, calls: refreshes)
        let connect = Connect(transport: fake, middlewares: [queue, auth], retryPolicy: nil)
        let futures = Recorder<Future<Data>>()
        DispatchQueue.concurrentPerform(iterations: 30) { index in
            futures.append(connect.request(Endpoint(endpoint: "/items/\(index)")))
        }
        XCTAssertEqual(fake.requests.count, 3)
        // When
        DispatchQueue.global().async { gate.succeed(()) }
        // Then
        let all = Future<[Data]>.all(futures.values)
        XCTAssertEqual(try? result(of: all, timeout: 10)?.get().count, 30)
        XCTAssertEqual(refreshes.value, 1)
        XCTAssertEqual(fake.requests(to: "/token").count, 1)
        assertEmpty(queue)
    }

    // MARK: - Slots, order and cap

    /// A queue of one slot before an authentication middleware whose refresh goes through another client sharing
    /// that queue, over a transport the test answers request by request.
    private static func oneSlotClients() -> (transport: ManualTransport, queue: RequestQueue, connect: Connect) {
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let connect = Connect(
            transport: transport, middlewares: [queue, authentication(refreshingThrough: authClient)],
            retryPolicy: nil)
        return (transport, queue, connect)
    }

    func testWaitingRequestsGiveTheirSlotsBackAndTakeOneAgainAheadOfTheLineBeforeTheReplay() {
        // Given: one slot; a is rejected while b waits in the queue
        let (transport, queue, connect) = Self.oneSlotClients()
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        XCTAssertEqual(paths(transport.requests), ["/a"])
        // When: a is rejected
        respond(transport, to: 0, status: 401)
        // Then: a and b (which reached the middleware during the refresh) wait without a slot; the refresh has it
        XCTAssertEqual(paths(transport.requests), ["/a", "/token"])
        XCTAssertEqual(queue.runningCount, 1, "only the refresh call holds a slot")
        XCTAssertEqual(queue.pendingCount, 0)
        // When: the refresh succeeds while c waits in the queue behind nobody
        let c = connect.request(Endpoint(endpoint: "/c"))
        XCTAssertEqual(queue.pendingCount, 1)
        respond(transport, to: 1, body: Data(#"{"token":"new"}"#.utf8))
        // Then: a goes again first, one at a time, then b, then c
        XCTAssertEqual(paths(transport.requests), ["/a", "/token", "/a"])
        XCTAssertEqual(queue.runningCount, 1)
        respond(transport, to: 2)
        XCTAssertEqual(paths(transport.requests), ["/a", "/token", "/a", "/b"])
        respond(transport, to: 3)
        XCTAssertEqual(paths(transport.requests), ["/a", "/token", "/a", "/b", "/c"])
        respond(transport, to: 4)
        XCTAssertEqual(authorization(Array(transport.requests.dropFirst(2))), Array(repeating: "Bearer new", count: 3))
        for future in [a, b, c] { XCTAssertNotNil(try? result(of: future, timeout: 5)?.get()) }
        assertEmpty(queue)
    }

    func testAReplayWaitsForAFreeSlotEvenInAPausedQueueButIgnoresThePause() {
        // Given: a rejected, the refresh running; the queue is paused
        let (transport, queue, connect) = Self.oneSlotClients()
        let a = connect.request(Endpoint(endpoint: "/a"))
        respond(transport, to: 0, status: 401)
        XCTAssertEqual(paths(transport.requests), ["/a", "/token"])
        queue.pause()
        let b = connect.request(Endpoint(endpoint: "/b"))
        // When: the refresh succeeds
        respond(transport, to: 1, body: Data(#"{"token":"new"}"#.utf8))
        // Then: a, which had started, finishes; b, which had not, waits for resume()
        XCTAssertEqual(paths(transport.requests), ["/a", "/token", "/a"])
        respond(transport, to: 2)
        XCTAssertNotNil(try? result(of: a, timeout: 5)?.get())
        XCTAssertEqual(queue.pendingCount, 1)
        queue.resume()
        respond(transport, to: 3)
        XCTAssertNotNil(try? result(of: b, timeout: 5)?.get())
        XCTAssertEqual(paths(transport.requests), ["/a", "/token", "/a", "/b"])
        assertEmpty(queue)
    }

    // MARK: - Failure and cancellation

    func testAFailedRefreshFailsTheWaitingRequestsAndLeavesNoSlotTaken() throws {
        // Given: the token endpoint fails
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new))
        fake.stub(.post, "/token", with: .status(500))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let connect = Connect(
            transport: fake, middlewares: [queue, Self.authentication(refreshingThrough: authClient)],
            retryPolicy: nil)
        // When
        let failure = try XCTUnwrap(error(of: connect.request(Endpoint()), timeout: 5) as? ConnectError)
        // Then
        XCTAssertEqual(failure.kind, .authenticationFailed)
        XCTAssertEqual(failure.statusCode, 401)
        assertEmpty(queue)
        XCTAssertEqual(fake.requests(to: "/token").count, 1)
        // And the next request may refresh again, through the same queue
        let again = try XCTUnwrap(error(of: connect.request(Endpoint()), timeout: 5) as? ConnectError)
        XCTAssertEqual(again.kind, .authenticationFailed)
        XCTAssertEqual(fake.requests(to: "/token").count, 2)
        assertEmpty(queue)
    }

    func testCancellingARequestWaitingForTheRefreshFreesEverything() {
        // Given: a rejected and waiting for the refresh, which holds the only slot
        let (transport, queue, connect) = Self.oneSlotClients()
        let a = connect.request(Endpoint(endpoint: "/a"))
        respond(transport, to: 0, status: 401)
        let b = connect.request(Endpoint(endpoint: "/b"))
        XCTAssertEqual(queue.pendingCount, 1, "b waits for the refresh call's slot")
        // When
        a.cancel()
        connect.cancelAllRequests()
        respond(transport, to: 1, body: Data(#"{"token":"new"}"#.utf8))
        // Then
        XCTAssertEqual(connectError(of: a)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: b)?.kind, .cancelled)
        XCTAssertEqual(paths(transport.requests), ["/a", "/token"], "neither is sent again")
        assertEmpty(queue)
    }

    func testCancellingAReplayWaitingForASlotRemovesItAndFreesNothingItDoesNotHold() {
        // Given: a and b rejected; after the refresh a is replayed and b waits for a slot
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let stub = Promise<AuthorizationToken>()
        let connect = Connect(
            transport: transport,
            middlewares: [queue, AuthenticationMiddleware(credential: Self.old) { _ in stub.future }],
            retryPolicy: nil)
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        respond(transport, to: 0, status: 401)
        XCTAssertEqual(paths(transport.requests), ["/a"], "b waits for the refresh without being sent")
        XCTAssertEqual(queue.runningCount, 0)
        stub.succeed(Self.new)
        XCTAssertEqual(paths(transport.requests), ["/a", "/a"])
        XCTAssertEqual(queue.runningCount, 1)
        // When
        b.cancel()
        // Then
        XCTAssertEqual(connectError(of: b)?.kind, .cancelled)
        XCTAssertEqual(queue.runningCount, 1, "a keeps its slot")
        respond(transport, to: 1)
        XCTAssertNotNil(value(of: a))
        XCTAssertEqual(paths(transport.requests), ["/a", "/a"], "b is never sent")
        assertEmpty(queue)
    }

    /// Sends the request again, once, when the rest of the pipeline fails it: a retry between the queue and the
    /// authentication middleware.
    private struct RetryOnceOnFailure: Middleware {
        func intercept(_ request: URLRequest, context: RequestContext, next: @escaping Next) -> Future<ConnectResponse>
        {
            next(request).recover { _ in next(request) }
        }
    }

    func testARequestSentAgainAfterAFailedRefreshTakesItsSlotAgainFirst() {
        // Given: one slot; a is rejected and b, started in a's slot, waits for the refresh too
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let stub = Promise<AuthorizationToken>()
        let connect = Connect(
            transport: transport,
            middlewares: [
                queue, RetryOnceOnFailure(), AuthenticationMiddleware(credential: Self.old) { _ in stub.future },
            ],
            retryPolicy: nil)
        let a = connect.request(Endpoint(endpoint: "/a"))
        let b = connect.request(Endpoint(endpoint: "/b"))
        respond(transport, to: 0, status: 401)
        XCTAssertEqual(paths(transport.requests), ["/a"])
        XCTAssertEqual(queue.runningCount, 0, "both wait for the refresh without a slot")
        // When: the refresh fails, and the middleware between sends both again
        stub.fail(ConnectError(.transport, message: "no token"))
        // Then: one at a time, within the cap
        XCTAssertEqual(paths(transport.requests), ["/a", "/a"], "b waits for a's slot")
        XCTAssertEqual(queue.runningCount, 1)
        respond(transport, to: 1)
        XCTAssertEqual(paths(transport.requests), ["/a", "/a", "/b"])
        XCTAssertEqual(queue.runningCount, 1)
        respond(transport, to: 2)
        XCTAssertNotNil(value(of: a))
        XCTAssertNotNil(value(of: b))
        assertEmpty(queue)
    }

    /// A transport that rejects every request at once and, when freed, checks from another thread whether `queue`'s
    /// lock is free: code run by a deinit may use the queue, and would wait for ever if the queue freed it under
    /// its lock.
    private final class LockProbeTransport: Transport, Sendable {
        private let queue: RequestQueue
        /// Set when freed: whether another thread could read the queue's counts meanwhile.
        let lockWasFree: Protected<Bool?>

        init(queue: RequestQueue, lockWasFree: Protected<Bool?>) {
            self.queue = queue
            self.lockWasFree = lockWasFree
        }

        deinit {
            let read = DispatchSemaphore(value: 0)
            let queue = self.queue
            Thread.detachNewThread {
                _ = queue.pendingCount
                read.signal()
            }
            // Bounded: a queue lock held by this thread fails the test instead of hanging it.
            let wasFree = read.wait(timeout: .now() + 5) == .success
            lockWasFree.withLock { $0 = wasFree }
        }

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            Future(value: ConnectResponse(request: request, statusCode: 401, data: Data())!)
        }
    }

    func testARequestCancelledWhileWaitingForASlotAfterTheRefreshFreesItsPipelineOutsideTheQueuesLock() {
        // Given: one slot; a, of a client already released, is rejected and waits for the refresh, then for the slot
        // that a request of another client sharing the queue took meanwhile
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let lockWasFree = Protected<Bool?>(nil)
        let refresh = Promise<AuthorizationToken>()
        let other = ManualTransport()
        let otherClient = Connect(transport: other, retryPolicy: nil, requestQueue: queue)
        var a: Future<Data>?
        do {
            let connect = Connect(
                transport: LockProbeTransport(queue: queue, lockWasFree: lockWasFree),
                middlewares: [queue, AuthenticationMiddleware(credential: Self.old) { _ in refresh.future }],
                retryPolicy: nil)
            a = connect.request(Endpoint(endpoint: "/a"))
        }
        let b = otherClient.request(Endpoint(endpoint: "/b"))
        XCTAssertEqual(queue.runningCount, 1, "b took the slot a gave back")
        refresh.succeed(Self.new)
        XCTAssertNil(lockWasFree.snapshot, "a waits for the slot, its pipeline held by the queue alone")
        // When: a is cancelled, which frees the last reference to its pipeline and the transport
        a?.cancel()
        a = nil
        // Then
        XCTAssertEqual(lockWasFree.snapshot, true, "the transport was freed outside the queue's lock")
        respond(other, to: 0)
        XCTAssertNotNil(value(of: b))
        assertEmpty(queue)
    }

    // MARK: - A refresh sent through its own middleware

    func testARefreshSentThroughItsOwnClientBehindAQueueStillFailsFast() throws {
        // Given: two slots; the refresh call goes through the client it refreshes for
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let clients = Recorder<Connect>()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            clients.values[0].request(Self.token).map { _ in Self.new }
        }
        let connect = Connect(transport: fake, middlewares: [queue, auth], retryPolicy: nil)
        clients.append(connect)
        // When
        let error = try XCTUnwrap(error(of: connect.request(Endpoint()), timeout: 5) as? ConnectError)
        // Then
        XCTAssertEqual(error.kind, .authenticationFailed)
        XCTAssertEqual((error.underlyingError as? ConnectError)?.kind, .authenticationFailed)
        XCTAssertEqual(fake.requests(to: "/token").count, 0, "the refresh call was not sent")
        assertEmpty(queue)
    }
}

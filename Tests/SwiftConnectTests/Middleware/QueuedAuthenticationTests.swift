import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client with a ``RequestQueue`` and an ``AuthenticationMiddleware``, with the refresh sent through a client that
/// shares the queue: the queue sits after the middlewares, so requests waiting for the refresh hold no slot and the
/// refresh call gets one, however full the queue was. Every wait here is bounded, so a regression fails instead of
/// hanging the suite.
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

    func testAOneSlotQueueLetsTheRefreshThroughTheSharedQueue() {
        // Given: one slot; the refresh goes through another client sharing the queue
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient)
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil, requestQueue: queue)
        // When
        let outcome = result(of: connect.request(Endpoint()), timeout: 5)
        // Then
        XCTAssertNotNil(try? outcome?.get(), "the request completes")
        XCTAssertEqual(paths(fake.requests), ["/items", "/token", "/items"])
        XCTAssertEqual(authorization(fake.requests(to: "/items")), ["Bearer old", "Bearer new"])
        XCTAssertEqual(auth.credential, Self.new)
        assertEmpty(queue)
    }

    func testAFullQueueOfFourWhoseRequestsAreAllRejectedAtOnceSharesOneRefreshThroughIt() {
        // Given: 4 slots, 6 requests (4 running, 2 waiting in the queue, signed), the 401s held back by a gate
        let gate = Promise<Void>()
        let fake = Self.server(gate: gate.future)
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let refreshes = Counter()
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient, calls: refreshes)
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil, requestQueue: queue)
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
        XCTAssertEqual(signed.filter { $0 == "Bearer old" }.count, 6, "all six signed before the refresh")
        XCTAssertEqual(signed.filter { $0 == "Bearer new" }.count, 6, "each sent once with the new credential")
        assertEmpty(queue)
    }

    func testTheMiddlewareInACallsOptionsWithAQueueOfTheClient() {
        // Given: the queue among the client's middlewares, the auth middleware in the call's options
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let auth = Self.authentication(refreshingThrough: authClient)
        let connect = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
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
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil, requestQueue: queue)
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

    /// A queue of one slot and an authentication middleware whose refresh goes through another client sharing
    /// that queue, over a transport the test answers request by request.
    private static func oneSlotClients() -> (transport: ManualTransport, queue: RequestQueue, connect: Connect) {
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let connect = Connect(
            transport: transport, middlewares: [authentication(refreshingThrough: authClient)], retryPolicy: nil,
            requestQueue: queue)
        return (transport, queue, connect)
    }

    // MARK: - Failure and cancellation

    func testAFailedRefreshFailsTheWaitingRequestsAndLeavesNoSlotTaken() throws {
        // Given: the token endpoint fails
        let fake = FakeTransport(fallback: Self.accepting(only: Self.new))
        fake.stub(.post, "/token", with: .status(500))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let authClient = Connect(transport: fake, retryPolicy: nil, requestQueue: queue)
        let connect = Connect(
            transport: fake, middlewares: [Self.authentication(refreshingThrough: authClient)], retryPolicy: nil,
            requestQueue: queue)
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
        XCTAssertEqual(queue.pendingCount, 0, "b waits for the refresh without queueing")
        XCTAssertEqual(queue.runningCount, 1, "the refresh call holds the only slot")
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

    // MARK: - A refresh sent through its own middleware

    func testARefreshSentThroughItsOwnClientBehindAQueueStillFailsFast() throws {
        // Given: two slots; the refresh call goes through the client it refreshes for
        let fake = Self.server()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let clients = Recorder<Connect>()
        let auth = AuthenticationMiddleware(credential: Self.old) { _ in
            clients.values[0].request(Self.token).map { _ in Self.new }
        }
        let connect = Connect(transport: fake, middlewares: [auth], retryPolicy: nil, requestQueue: queue)
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

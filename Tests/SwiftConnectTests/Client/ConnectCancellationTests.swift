import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancelling requests: one future, the end of a chain, or all of a client's requests at once.
final class ConnectCancellationTests: XCTestCase {
    typealias Todo = ClientFixtures.Todo
    typealias TodoConnector = ClientFixtures.TodoConnector
    typealias Endpoint = ClientFixtures.Endpoint

    // MARK: - One request

    func testCancellingARequestFailsItWithCancelled() {
        // Given
        let fake = FakeTransport.answering(.never)
        let connect = Connect(transport: fake, retryPolicy: nil)
        let future = connect.request(Endpoint())
        XCTAssertFalse(future.isCompleted)
        // When
        future.cancel()
        // Then
        let error = connectError(of: future)
        XCTAssertEqual(error?.kind, .cancelled)
        XCTAssertTrue(future.isCancelled)
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testCancellingARequestCancelsTheTransportFuture() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let future = connect.request(Endpoint())
        XCTAssertEqual(transport.requests.count, 1)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(transport.cancellations.value, 1, "the transport's cancel handler runs once")
        XCTAssertEqual(transport.futures.first?.isCancelled, true)
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    /// The futures of a request, and everything chained on them, fail with `ConnectError` wherever the chain is
    /// cancelled or timed out: `Future` itself knows nothing of `ConnectError` (a plain future fails with
    /// `FutureError`), the response's futures name the error.
    func testFuturesChainedOnARequestFailWithConnectErrorWhereverTheChainEnds() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let body = connect.request(TodoConnector.get(id: 1))
        let decoded = body.decoded(toType: Todo.self)
        let title = decoded.map { $0.title }
        let received = title.receive(on: DispatchQueue(label: "ConnectCancellationTests.receive"))
        let typed = Future(value: ()).flatMap { connect.send(ClientFixtures.GetTodo(id: 2)) }.map { $0.id }
        // When
        received.cancel()
        typed.cancel()
        let limited = connect.send(ClientFixtures.GetTodo(id: 3)).map { $0.title }.timeout(after: 0.01)
        // Then
        XCTAssertEqual(connectError(of: body)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: decoded)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: title)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: received)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: typed)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: limited)?.kind, .timedOut)
        XCTAssertEqual(transport.cancellations.value, 3, "every request's transport future was cancelled")
    }

    /// A cancel or timeout that lands after the request's own stages completed (the answer decoded, the caller's
    /// `map` waiting on its `receive(on:)` queue) still fails with `ConnectError`, as README promises for "any future
    /// of a request's chain": a completed stage lets go of the stage before it, so the chain's type could not be
    /// found by walking back from where the cancel landed. (A request answered before its future was made, as a
    /// `FakeTransport` answers, is a future created complete, which keeps no chain: its later stages report
    /// `FutureError`.)
    func testACancelAfterTheAnswerWasDecodedFailsWithConnectError() throws {
        // Given: typed calls answered and decoded, their callers' `map`s waiting on a suspended queue (the callers
        // hear of the outcome on another queue)
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let held = DispatchQueue(label: "ConnectCancellationTests.held")
        held.suspend()
        defer { held.resume() }
        let caller = DispatchQueue(label: "ConnectCancellationTests.caller")
        let first = connect.send(ClientFixtures.GetTodo(id: 1))
        let title = first.receive(on: held).map { $0.title }.receive(on: caller)
        let second = connect.send(ClientFixtures.GetTodo(id: 2))
        let id = second.receive(on: held).map { $0.id }.receive(on: caller)
        let todo = Data(#"{"userId":1,"id":1,"title":"t","completed":false}"#.utf8)
        transport.respond(to: 0, headers: ["Content-Type": "application/json"], body: todo)
        transport.respond(to: 1, headers: ["Content-Type": "application/json"], body: todo)
        XCTAssertEqual(try first.wait(timeout: 10).id, 1)
        XCTAssertEqual(try second.wait(timeout: 10).id, 1)

        // When: one chain is cancelled, the other times out, before the queue delivers
        title.cancel()
        let limited = id.timeout(after: 0.01)

        // Then
        XCTAssertEqual(connectError(of: title)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: limited)?.kind, .timedOut)
    }

    func testCancellingTheDecodedEndOfTheChainCancelsTheTransport() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let todo = connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self)
        // When
        todo.cancel()
        // Then
        XCTAssertEqual(connectError(of: todo)?.kind, .cancelled)
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    /// The caller hears of a cancellation once the client has let go of the call: a callback on the end of the
    /// chain (what `await` and `wait()` resume from) sees no request in flight. The chain's callbacks ran from the
    /// caller's end up, so the caller woke while the client still counted the call, and `requestsInFlight` read
    /// 1 right after an `await` that threw the cancellation, when another thread cancelled.
    func testACancelledCallerSeesNoRequestInFlight() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let todo = connect.request(TodoConnector.get(id: 1)).decoded(toType: Todo.self).map { $0.title }
        let seen = Recorder<Int>()
        todo.observe { _ in seen.append(connect.requestsInFlight) }
        XCTAssertEqual(connect.requestsInFlight, 1)
        // When
        todo.cancel()
        // Then
        XCTAssertEqual(seen.values, [0])
    }

    func testCancellingThroughAMiddlewareReachesTheTransport() {
        // Given: a middleware that maps the response, so the client's future is derived from the transport's
        let transport = ManualTransport()
        let connect = Connect(
            transport: transport, middlewares: [RecordingMiddleware(name: "a", events: Recorder())], retryPolicy: nil)
        let future = connect.response(for: Endpoint())
        // When
        future.cancel()
        // Then
        XCTAssertEqual(transport.cancellations.value, 1)
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    func testAnswerArrivingAfterCancellationIsIgnored() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let future = connect.request(Endpoint())
        let completions = Counter()
        future.observe { _ in completions.increment() }
        future.cancel()
        // When
        transport.respond(to: 0, body: Data("late".utf8))
        // Then
        XCTAssertEqual(completions.value, 1)
        XCTAssertNil(future.result.flatMap { try? $0.get() }, "the late answer does not replace the cancellation")
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    func testCancellingOneRequestLeavesTheOthersRunning() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let first = connect.request(Endpoint())
        let second = connect.request(Endpoint())
        // When
        first.cancel()
        transport.respond(to: 1, body: Data("second".utf8))
        // Then
        XCTAssertEqual(connectError(of: first)?.kind, .cancelled)
        XCTAssertEqual(value(of: second), Data("second".utf8))
        XCTAssertEqual(transport.cancellations.value, 1)
    }

    // MARK: - All requests

    func testCancelAllRequestsCancelsFiftyPendingRequestsExactlyOnce() {
        // Given
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let count = 50
        let completions = (0..<count).map { _ in Counter() }
        let kinds = Recorder<ConnectError.Kind?>()
        let allDone = expectation(description: "every request completes")
        allDone.expectedFulfillmentCount = count
        let futures = (0..<count).map { index -> Future<Data> in
            let future = connect.request(Endpoint())
            future.observe { result in
                completions[index].increment()
                if case .failure(let error) = result {
                    kinds.append((error as? ConnectError)?.kind)
                } else {
                    kinds.append(nil)
                }
                allDone.fulfill()
            }
            return future
        }
        XCTAssertEqual(connect.requestsInFlight, count)
        // When
        connect.cancelAllRequests()
        // Then
        wait(for: [allDone], timeout: 10)
        XCTAssertEqual(connect.requestsInFlight, 0)
        XCTAssertEqual(kinds.values.count, count)
        XCTAssertTrue(kinds.values.allSatisfy { $0 == .cancelled }, "\(kinds.values)")
        XCTAssertEqual(transport.cancellations.value, count, "every network exchange is cancelled")
        XCTAssertTrue(futures.allSatisfy(\.isCompleted))
        // And late answers change nothing
        for index in 0..<count { transport.respond(to: index) }
        XCTAssertEqual(completions.map(\.value), Array(repeating: 1, count: count))
    }

    func testCancelAllRequestsWithFakeNeverStubs() {
        // Given
        let fake = FakeTransport.answering(.never)
        let connect = Connect(transport: fake, retryPolicy: nil)
        let futures = (0..<50).map { _ in connect.request(Endpoint()).decoded(toType: Todo.self) }
        // When
        connect.cancelAllRequests()
        // Then
        for future in futures { XCTAssertEqual(connectError(of: future)?.kind, .cancelled) }
        XCTAssertEqual(connect.requestsInFlight, 0)
        XCTAssertEqual(fake.requests.count, 50)
    }

    func testCancelAllRequestsLeavesOtherClientsAlone() {
        // Given
        let transport = ManualTransport()
        let mine = Connect(transport: transport, retryPolicy: nil)
        let theirs = Connect(transport: transport, retryPolicy: nil)
        let cancelled = mine.request(Endpoint())
        let untouched = theirs.request(Endpoint())
        // When
        mine.cancelAllRequests()
        transport.respond(to: 1, body: Data("ok".utf8))
        // Then
        XCTAssertEqual(connectError(of: cancelled)?.kind, .cancelled)
        XCTAssertEqual(value(of: untouched), Data("ok".utf8))
    }

    func testCancelAllRequestsCancelsARequestTheTransportHasBeforeTheClientTracksIt() {
        // Given a transport that, as it receives the request, lets cancelAllRequests() in before the client's
        // request(_:) has returned: what another thread's call does when it lands in that window
        let transport = CancelsAllRequestsOnSend()
        let connect = Connect(transport: transport, retryPolicy: nil)
        transport.client = connect
        // When
        let future = connect.request(Endpoint())
        // Then: the request started before the cancellation, so it is cancelled, not left running
        XCTAssertEqual(transport.cancellations.value, 1, "the network exchange is cancelled")
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(connect.requestsInFlight, 0)
        // And a request started after it is not
        transport.client = nil
        let later = connect.request(Endpoint())
        XCTAssertFalse(later.isCompleted)
        XCTAssertEqual(connect.requestsInFlight, 1)
        later.cancel()
    }

    func testCancelAllRequestsWhileAnUploadIsBuiltCancelsTheUpload() {
        // Given a connector that lets cancelAllRequests() in while the client builds its request: what another
        // thread's call does when it lands while an upload's body is being made
        let fake = FakeTransport.answering(.status(200))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let connector = CancelsAllRequestsWhileBuilt()
        connector.client = connect
        // When
        let file = File(name: "a.png", key: "a", mimeType: .png, data: Data("a".utf8))
        let upload = connect.upload(files: [file], to: connector)
        // Then: the upload began before the cancellation, so it is cancelled and never sent
        XCTAssertEqual(connectError(of: upload)?.kind, .cancelled)
        XCTAssertEqual(fake.requests.count, 0)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testARequestWhoseProcessorWaitsIsInFlightAndCancelledUntilTheProcessorIsDone() throws {
        // Given a processor that waits (a key store decrypting the body, say), holding the call after the answer
        let entered = Promise<Void>()
        let gate = Promise<Void>()
        let waiting = AnyResponseProcessor { response async throws -> ConnectResponse in
            entered.succeed(())
            _ = try? await gate.future.value
            return response
        }
        let connect = Connect(transport: FakeTransport.answering(.status(200)), retryPolicy: nil)
        let future = connect.request(Endpoint(), options: RequestOptions(processors: [waiting]))
        try entered.future.wait(timeout: 5)
        // Then the call is in flight while its processor runs
        XCTAssertEqual(connect.requestsInFlight, 1)
        // And cancelAllRequests() (a logout, say) reaches it
        connect.cancelAllRequests()
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        XCTAssertEqual(connect.requestsInFlight, 0)
        gate.succeed(())
    }

    func testCancelAllRequestsWithNothingInFlightDoesNothing() {
        // Given
        let connect = Connect(transport: FakeTransport.answering(.status(200)), retryPolicy: nil)
        _ = value(of: connect.request(Endpoint()))
        // When
        connect.cancelAllRequests()
        // Then
        XCTAssertEqual(connect.requestsInFlight, 0)
        XCTAssertEqual(value(of: connect.request(Endpoint())), Data(), "the client still works")
    }

    // MARK: - Requests in flight

    func testCompletedRequestIsRemovedFromRequestsInFlight() {
        // Given
        let gate = Promise<Void>()
        let fake = FakeTransport.answering(FakeResponse.json(Todo.sample).released(by: gate.future))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let future = connect.request(TodoConnector.get(id: 1))
        XCTAssertEqual(connect.requestsInFlight, 1)
        // When
        gate.succeed(())
        // Then
        XCTAssertNotNil(value(of: future))
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testFailedAndInvalidRequestsAreNotLeftInFlight() {
        // Given
        let gate = Promise<Void>()
        let fake = FakeTransport.answering(
            FakeResponse.failure(URLError(.cannotConnectToHost)).released(by: gate.future))
        let connect = Connect(transport: fake, retryPolicy: nil)
        let failing = connect.request(Endpoint())
        let invalid = connect.request(Endpoint(endpoint: "/x/{missing}"))
        XCTAssertEqual(connect.requestsInFlight, 1, "an invalid request is never in flight")
        // When
        gate.succeed(())
        // Then
        XCTAssertEqual(connectError(of: failing)?.kind, .cannotConnect)
        XCTAssertEqual(connectError(of: invalid)?.kind, .invalidRequest)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }
}

// MARK: - Cancelling the task that awaits

extension ConnectCancellationTests {
    /// The task is cancelled before it awaits: the request has gone to the transport (sending is synchronous),
    /// and is cancelled as soon as the task awaits it; the task throws `ConnectError.cancelled`.
    func testATaskCancelledBeforeItAwaitsCancelsTheRequest() async {
        let fake = FakeTransport.answering(.never)
        let connect = Connect(transport: fake)
        let started = Promise<Void>()
        let proceed = Promise<Void>()
        let task = Task {
            started.succeed(())
            _ = await proceed.future.resultValue
            return try await connect.send(ClientFixtures.GetTodo(id: 1)).value
        }
        _ = await started.future.resultValue
        task.cancel()
        proceed.succeed(())

        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled) }
        XCTAssertEqual(fake.requests.count, 1)
        XCTAssertEqual(fake.cancelledRequests.count, 1)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    /// The task is cancelled after the response arrived: nothing is left to cancel, and the value is returned.
    func testATaskCancelledAfterTheResponseGetsTheValue() async throws {
        let fake = FakeTransport.answering(.json(ClientFixtures.Todo.sample))
        let connect = Connect(transport: fake)
        let future = connect.send(ClientFixtures.GetTodo(id: 1))
        XCTAssertTrue(future.isCompleted)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await future.value
        }
        let todo = try await task.value
        XCTAssertEqual(todo, ClientFixtures.Todo.sample)
        XCTAssertEqual(fake.cancelledRequests.count, 0)
    }
}

/// Calls its client's `cancelAllRequests()` from inside `send`, after taking the request, then answers never.
private final class CancelsAllRequestsOnSend: Transport, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `weakClient`; `cancellations` is itself thread-safe.
    private let lock = NSLock()
    private weak var weakClient: Connect?
    /// How many times a returned future's cancel handler ran.
    let cancellations = Counter()

    var client: Connect? {
        get { lock.withLock { weakClient } }
        set { lock.withLock { weakClient = newValue } }
    }

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        let promise = Promise<ConnectResponse>()
        promise.setCancelHandler { [cancellations] in cancellations.increment() }
        client?.cancelAllRequests()
        return promise.future
    }
}

/// A connector whose headers, read as the client builds its request, call `cancelAllRequests()` on `client`.
private final class CancelsAllRequestsWhileBuilt: Connector, @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `weakClient`.
    private let lock = NSLock()
    private weak var weakClient: Connect?

    var client: Connect? {
        get { lock.withLock { weakClient } }
        set { lock.withLock { weakClient = newValue } }
    }

    var baseURL: URL { URL(string: "https://api.example.com")! }
    var endpoint: String { "/upload" }
    var method: HTTPMethod { .post }
    var headers: [HTTPHeader] {
        client?.cancelAllRequests()
        return []
    }
}

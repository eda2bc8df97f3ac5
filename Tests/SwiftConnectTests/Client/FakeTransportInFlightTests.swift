import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// FakeTransport while requests are in flight: waiting for a request to arrive, and seeing it cancelled.
final class FakeTransportInFlightTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    // MARK: - Waiting for requests

    func testRequestsReceivedCompletesWhenTheRequestArrives() throws {
        // Given
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let arrived = transport.requestsReceived(count: 2)
        XCTAssertFalse(arrived.isCompleted)
        // When: sent from another thread, as a view model's task would
        DispatchQueue.global().async {
            _ = connect.request(Endpoint(endpoint: "/a"))
            _ = connect.request(Endpoint(endpoint: "/b"))
        }
        // Then
        let requests = try arrived.wait(timeout: 10)
        XCTAssertEqual(requests.map(\.url?.path), ["/a", "/b"])
    }

    func testRequestsReceivedIsCompleteAtOnceWhenEnoughArrivedAlready() {
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, retryPolicy: nil)
        _ = connect.request(Endpoint(endpoint: "/a"))
        _ = connect.request(Endpoint(endpoint: "/b"))

        XCTAssertEqual(transport.requestsReceived(count: 1).result.flatMap { try? $0.get() }?.count, 1)
        XCTAssertEqual(transport.requestsReceived(count: 2).result.flatMap { try? $0.get() }?.count, 2)
        XCTAssertEqual(transport.requestsReceived(count: 0).result.flatMap { try? $0.get() }?.count, 0)
        XCTAssertFalse(transport.requestsReceived(count: 3).isCompleted)
    }

    func testRequestsReceivedFromManyThreads() throws {
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let arrived = transport.requestsReceived(count: 100)
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            _ = connect.request(Endpoint(endpoint: "/items/\(index)"))
        }
        XCTAssertEqual(try arrived.wait(timeout: 10).count, 100)
        XCTAssertEqual(Set(transport.requests.compactMap(\.url?.path)).count, 100)
    }

    func testRequestsReceivedAwaited() async throws {
        let transport = FakeTransport.answering(.never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let task = Task { try await connect.request(Endpoint()).value }
        let requests = try await transport.requestsReceived(count: 1).value(timeout: 10)
        XCTAssertEqual(requests.first?.url?.path, "/items")
        task.cancel()
        _ = await task.result
    }

    // MARK: - Cancellation

    func testCancellingAPendingAnswerIsRecorded() {
        // Given
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let future = connect.request(Endpoint(endpoint: "/slow"))
        XCTAssertEqual(transport.cancelledRequests.count, 0)
        // When
        future.cancel()
        // Then
        XCTAssertEqual(transport.cancelledRequests.map(\.url?.path), ["/slow"])
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    func testCancellingAGatedAnswerLeavesTheGateToOtherRequests() {
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(.get, "/items", with: FakeResponse.status(200).released(by: gate.future))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let cancelled = connect.request(Endpoint())
        let kept = connect.request(Endpoint())

        cancelled.cancel()
        gate.succeed(())

        XCTAssertEqual(connectError(of: cancelled)?.kind, .cancelled)
        XCTAssertNotNil(value(of: kept))
        XCTAssertEqual(transport.cancelledRequests.count, 1)
    }

    func testAnAnsweredRequestIsNotRecordedAsCancelled() {
        let transport = FakeTransport()
        let gate = Promise<Void>()
        transport.stub(.get, "/items", with: FakeResponse.status(200).released(by: gate.future))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let future = connect.request(Endpoint())
        gate.succeed(())
        XCTAssertNotNil(value(of: future))

        future.cancel()
        connect.request(Endpoint()).cancel()

        XCTAssertEqual(transport.cancelledRequests.count, 0, "both were answered before the cancel")
    }

    func testCancellingTheAwaitingTaskCancelsTheRequest() async throws {
        let transport = FakeTransport.answering(.never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let task = Task { try await connect.request(Endpoint()).value }
        _ = try await transport.requestsReceived(count: 1).value(timeout: 10)

        task.cancel()
        let result = await task.result

        XCTAssertThrowsError(try result.get()) { XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled) }
        XCTAssertEqual(transport.cancelledRequests.count, 1)
    }

    func testRemoveRecordedRequestsForgetsCancellationsToo() {
        let transport = FakeTransport.answering(.never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        connect.request(Endpoint()).cancel()
        XCTAssertEqual(transport.cancelledRequests.count, 1)
        transport.removeRecordedRequests()
        XCTAssertEqual(transport.cancelledRequests.count, 0)
        XCTAssertEqual(transport.requests.count, 0)
    }

    /// A real transport keeps its network tasks until they end; so does FakeTransport with the answers it has not
    /// given yet, so the client's cancellation reaches them even when nothing else keeps them (the retry stage
    /// holds the transport's future weakly).
    func testCancellingANeverAnsweredRequestWithTheDefaultRetryPolicy() {
        let transport = FakeTransport.answering(.never)
        let connect = Connect(transport: transport)
        let future = connect.send(ClientFixtures.GetTodo(id: 1))
        XCTAssertEqual(transport.requests.count, 1)

        future.cancel()

        XCTAssertEqual(transport.cancelledRequests.count, 1)
        XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
    }

    /// What the transport keeps is freed when its answer is given, and with the transport.
    func testPendingAnswersAreFreedWhenAnsweredOrWithTheTransport() {
        weak var answeredFuture: Future<ConnectResponse>?
        weak var neverFuture: Future<ConnectResponse>?
        weak var weakTransport: FakeTransport?
        do {
            let transport = FakeTransport.answering(.never)
            weakTransport = transport
            let gate = Promise<Void>()
            transport.stub(.get, "/gated", with: FakeResponse.status(200).released(by: gate.future))
            var request = URLRequest(url: URL(string: "https://api.example.com/gated")!)
            request.httpMethod = "GET"
            do {
                let answered = transport.send(request)
                answeredFuture = answered
                gate.succeed(())
                XCTAssertEqual(answered.result.flatMap { try? $0.get() }?.statusCode, 200)
            }
            XCTAssertNil(answeredFuture)
            request.url = URL(string: "https://api.example.com/never")!
            neverFuture = transport.send(request)
            XCTAssertNotNil(neverFuture, "kept while pending, as a real transport keeps its task")
        }
        XCTAssertNil(weakTransport)
        XCTAssertNil(neverFuture)
    }
}

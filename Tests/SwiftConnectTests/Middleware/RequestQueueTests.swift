import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RequestQueue`: the cap, the order, the counts, pausing and cancelling. Every response is held back by a
/// gate the test opens, so nothing depends on timing.
final class RequestQueueTests: XCTestCase {
    typealias Endpoint = ClientFixtures.Endpoint

    /// A fake transport whose request `i` goes to `/r/i` and is answered with `i` once `gates[i]` opens.
    private struct Gated {
        let transport = FakeTransport()
        let gates: [Promise<Void>]

        init(count: Int) {
            gates = (0..<count).map { _ in Promise<Void>() }
            for (index, gate) in gates.enumerated() {
                transport.stub(.get, "/r/\(index)", with: FakeResponse.json(index).released(by: gate.future))
            }
        }

        /// The paths the transport received, in order.
        var sentPaths: [String] { transport.requests.compactMap { $0.url?.path } }

        func release(_ index: Int) { gates[index].succeed(()) }
    }

    private func send(_ count: Int, through connect: Connect) -> [Future<Data>] {
        (0..<count).map { connect.request(Endpoint(endpoint: "/r/\($0)")) }
    }

    private func paths(_ indices: some Sequence<Int>) -> [String] {
        indices.map { "/r/\($0)" }
    }

    // MARK: - The cap

    func testNoMoreThanTheCapReachTheTransport() {
        // Given
        let gated = Gated(count: 6)
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        // When
        let futures = send(6, through: connect)
        // Then
        XCTAssertEqual(gated.transport.requests.count, 2)
        for index in 0..<6 {
            gated.release(index)
            XCTAssertEqual(futures[index].isCompleted, true, "request \(index) completes once released")
            XCTAssertEqual(gated.transport.requests.count, min(index + 3, 6), "each completion starts one more")
        }
        for (index, future) in futures.enumerated() {
            XCTAssertEqual(value(of: future), Data("\(index)".utf8))
        }
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    /// The cap changes while the queue runs (JustAPIs' `maxActiveRequests`): raised, waiting requests start at once;
    /// lowered, the running ones finish and no other starts until fewer than the new cap run.
    func testTheCapChangesWhileTheQueueRuns() {
        // Given: 2 of 6 running
        let gated = Gated(count: 6)
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(6, through: connect)
        XCTAssertEqual(gated.sentPaths, paths(0..<2))
        // When: raised to 4
        queue.maxConcurrentRequests = 4
        // Then: two more start, in order, before the setter returns
        XCTAssertEqual(gated.sentPaths, paths(0..<4))
        XCTAssertEqual(queue.runningCount, 4)
        // When: lowered to 1
        queue.maxConcurrentRequests = 1
        XCTAssertEqual(queue.maxConcurrentRequests, 1)
        // Then: none starts while 4, 3, then 1 run; the next starts once none does
        gated.release(0)
        gated.release(1)
        gated.release(2)
        XCTAssertEqual(gated.sentPaths, paths(0..<4))
        gated.release(3)
        XCTAssertEqual(gated.sentPaths, paths(0..<5))
        gated.release(4)
        XCTAssertEqual(gated.sentPaths, paths(0..<6))
        gated.release(5)
        for (index, future) in futures.enumerated() {
            XCTAssertEqual(value(of: future), Data("\(index)".utf8))
        }
        // And: below 1 is taken as 1
        queue.maxConcurrentRequests = 0
        XCTAssertEqual(queue.maxConcurrentRequests, 1)
    }

    func testRequestsReachTheTransportInArrivalOrder() {
        // Given
        let gated = Gated(count: 6)
        let connect = Connect(
            transport: gated.transport,
            retryPolicy: nil,
            requestQueue: RequestQueue(maxConcurrentRequests: 2)
        )
        let futures = send(6, through: connect)
        // When: the running requests complete in the reverse order of their start
        gated.release(1)
        gated.release(0)
        gated.release(3)
        gated.release(2)
        gated.release(5)
        gated.release(4)
        // Then
        XCTAssertEqual(gated.sentPaths, paths(0..<6))
        XCTAssertTrue(futures.allSatisfy(\.isCompleted))
    }

    func testACapBelowOneIsTreatedAsOne() {
        // Given
        let gated = Gated(count: 2)
        let queue = RequestQueue(maxConcurrentRequests: 0)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        // When
        _ = send(2, through: connect)
        // Then
        XCTAssertEqual(queue.maxConcurrentRequests, 1)
        XCTAssertEqual(gated.sentPaths, paths([0]))
        gated.release(0)
        XCTAssertEqual(gated.sentPaths, paths([0, 1]))
        gated.release(1)
    }

    func testCountsFollowWaitingAndRunningRequests() {
        // Given
        let gated = Gated(count: 5)
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(queue.runningCount, 0)
        // When
        _ = send(5, through: connect)
        // Then
        XCTAssertEqual(queue.runningCount, 2)
        XCTAssertEqual(queue.pendingCount, 3)
        gated.release(0)
        XCTAssertEqual(queue.runningCount, 2)
        XCTAssertEqual(queue.pendingCount, 2)
        gated.release(1)
        gated.release(2)
        XCTAssertEqual(queue.runningCount, 2)
        XCTAssertEqual(queue.pendingCount, 0)
        gated.release(3)
        XCTAssertEqual(queue.runningCount, 1)
        gated.release(4)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testTheNextRequestStartsOnTheThreadThatFreedTheSlot() {
        // Given
        let key = DispatchSpecificKey<Bool>()
        let completer = DispatchQueue(label: "RequestQueueTests.completer")
        completer.setSpecific(key: key, value: true)
        let startedOnCompleter = Recorder<Bool>()
        let gate = Promise<Void>()
        let transport = FakeTransport()
        transport.stub(.get, "/r/0", with: FakeResponse.status(200).released(by: gate.future))
        transport.stub(
            .get, "/r/1",
            with: .handler { request in
                startedOnCompleter.append(DispatchQueue.getSpecific(key: key) == true)
                return .success(ConnectResponse(request: request, statusCode: 200)!)
            })
        let connect = Connect(
            transport: transport, retryPolicy: nil, requestQueue: RequestQueue(maxConcurrentRequests: 1))
        let futures = send(2, through: connect)
        // When
        completer.sync { _ = gate.succeed(()) }
        // Then
        XCTAssertEqual(startedOnCompleter.values, [true])
        XCTAssertTrue(futures.allSatisfy(\.isCompleted))
    }

    // MARK: - Pause and resume

    func testPausedQueueStartsNothingAndResumeStartsWaitingRequestsInOrder() {
        // Given
        let gated = Gated(count: 4)
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        queue.pause()
        XCTAssertTrue(queue.isPaused)
        // When
        let futures = send(4, through: connect)
        // Then
        XCTAssertEqual(gated.transport.requests.count, 0)
        XCTAssertEqual(queue.pendingCount, 4)
        // When
        queue.resume()
        // Then
        XCTAssertFalse(queue.isPaused)
        XCTAssertEqual(gated.sentPaths, paths(0..<2), "up to the cap, oldest first")
        XCTAssertEqual(queue.pendingCount, 2)
        // When: paused again, running requests finish but nothing new starts
        queue.pause()
        gated.release(0)
        gated.release(1)
        // Then
        XCTAssertNotNil(value(of: futures[0]))
        XCTAssertNotNil(value(of: futures[1]))
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 2)
        XCTAssertEqual(gated.transport.requests.count, 2)
        // When
        queue.resume()
        gated.release(2)
        gated.release(3)
        // Then
        XCTAssertEqual(gated.sentPaths, paths(0..<4))
        XCTAssertNotNil(value(of: futures[2]))
        XCTAssertNotNil(value(of: futures[3]))
    }

    // MARK: - Cancellation

    func testCancelPendingFailsWaitingRequestsWithoutSendingThem() {
        // Given
        let gated = Gated(count: 4)
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(4, through: connect)
        // When
        queue.cancelPending()
        // Then
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(queue.runningCount, 1)
        for future in futures[1...] {
            XCTAssertEqual(connectError(of: future)?.kind, .cancelled)
        }
        gated.release(0)
        XCTAssertNotNil(value(of: futures[0]), "the running request is not affected")
        XCTAssertEqual(gated.sentPaths, paths([0]))
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(connect.requestsInFlight, 0)
    }

    func testCancellingAWaitingRequestRemovesItFromTheQueue() {
        // Given
        let gated = Gated(count: 3)
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: gated.transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(3, through: connect)
        // When
        futures[1].cancel()
        // Then
        XCTAssertEqual(connectError(of: futures[1])?.kind, .cancelled)
        XCTAssertEqual(queue.pendingCount, 1)
        XCTAssertEqual(queue.runningCount, 1, "a waiting request holds no slot")
        gated.release(0)
        gated.release(2)
        XCTAssertEqual(gated.sentPaths, paths([0, 2]), "the cancelled request is never sent")
        XCTAssertNotNil(value(of: futures[2]))
    }

    func testCancellingARunningRequestCancelsItAndStartsTheNext() {
        // Given
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(3, through: connect)
        XCTAssertEqual(transport.requests.count, 1)
        // When
        futures[0].cancel()
        // Then
        XCTAssertEqual(connectError(of: futures[0])?.kind, .cancelled)
        XCTAssertEqual(transport.cancellations.value, 1, "the transport call is cancelled")
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/r/0", "/r/1"])
        XCTAssertEqual(queue.runningCount, 1)
        XCTAssertEqual(queue.pendingCount, 1)
        transport.respond(to: 1)
        transport.respond(to: 2)
        XCTAssertNotNil(value(of: futures[1]))
        XCTAssertNotNil(value(of: futures[2]))
    }

    func testCancellingARunningRequestThatNeverAnswersFreesItsSlot() {
        // Given: nothing but the queue keeps the transport's future alive
        let transport = FakeTransport()
        transport.stub(.get, "/r/0", with: .never)
        transport.stub(.get, "/r/1", with: .status(200))
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(2, through: connect)
        // When
        futures[0].cancel()
        // Then
        XCTAssertEqual(connectError(of: futures[0])?.kind, .cancelled)
        XCTAssertNotNil(value(of: futures[1]))
        XCTAssertEqual(queue.runningCount, 0)
    }

    func testCancelAllRequestsEmptiesTheQueue() {
        // Given
        let transport = FakeTransport.answering(.never)
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = send(5, through: connect)
        // When: waiting requests first, so no freed slot starts one of them
        queue.cancelPending()
        connect.cancelAllRequests()
        // Then
        for future in futures { XCTAssertEqual(connectError(of: future)?.kind, .cancelled) }
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testCancelAllRequestsOfOneClientLeavesAnotherClientsWaitingRequestsInTheSharedQueue() {
        // Given: two clients share a queue of one slot; A's request runs, then B's and A's wait
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let clientA = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let clientB = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let runningA = clientA.request(Endpoint(endpoint: "/a/0"))
        let waitingB = clientB.request(Endpoint(endpoint: "/b/0"))
        let waitingA = clientA.request(Endpoint(endpoint: "/a/1"))
        XCTAssertEqual(queue.pendingCount, 2)
        // When
        clientA.cancelAllRequests()
        // Then: A's requests are cancelled, A's waiting one never sent; B's takes the freed slot
        XCTAssertEqual(connectError(of: runningA)?.kind, .cancelled)
        XCTAssertEqual(connectError(of: waitingA)?.kind, .cancelled)
        XCTAssertFalse(waitingB.isCompleted, "client B's request is not client A's to cancel")
        XCTAssertEqual(transport.requests.map(\.url?.path), ["/a/0", "/b/0"])
        XCTAssertEqual(queue.pendingCount, 0)
        XCTAssertEqual(queue.runningCount, 1)
        transport.respond(to: 1)
        XCTAssertNotNil(value(of: waitingB))
        XCTAssertEqual(clientB.requestsInFlight, 0)
    }

    func testCancelPendingStillFailsTheWaitingRequestsOfEveryClient() {
        // Given
        let transport = ManualTransport()
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let clientA = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let clientB = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let running = clientA.request(Endpoint(endpoint: "/a/0"))
        let waiting = [clientA.request(Endpoint(endpoint: "/a/1")), clientB.request(Endpoint(endpoint: "/b/0"))]
        // When: the queue's own method is queue-wide
        queue.cancelPending()
        // Then
        for future in waiting { XCTAssertEqual(connectError(of: future)?.kind, .cancelled) }
        XCTAssertFalse(running.isCompleted)
        transport.respond(to: 0)
        XCTAssertNotNil(value(of: running))
        XCTAssertEqual(transport.requests.count, 1)
    }

    // MARK: - Many requests that complete at once

    func testTenThousandImmediateRequestsStartedByResumeDoNotOverflowTheStack() {
        // Given
        let transport = FakeTransport.answering(.status(200))
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let completed = Counter()
        queue.pause()
        for _ in 0..<10_000 {
            connect.request(Endpoint()).onSuccess { _ in completed.increment() }
        }
        XCTAssertEqual(queue.pendingCount, 10_000)
        // When
        queue.resume()
        // Then
        XCTAssertEqual(completed.value, 10_000)
        XCTAssertEqual(transport.requests.count, 10_000)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }

    func testTenThousandImmediateRequestsStartedByACompletionDoNotOverflowTheStack() {
        // Given: four slow requests hold every slot while 10,000 immediate ones wait
        let gate = Promise<Void>()
        let transport = FakeTransport.answering(.status(200))
        transport.stub(.get, "/slow", with: FakeResponse.status(200).released(by: gate.future))
        let queue = RequestQueue(maxConcurrentRequests: 4)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let completed = Counter()
        let slow = (0..<4).map { _ in connect.request(Endpoint(endpoint: "/slow")) }
        for _ in 0..<10_000 {
            connect.request(Endpoint()).onSuccess { _ in completed.increment() }
        }
        XCTAssertEqual(queue.pendingCount, 10_000)
        // When
        gate.succeed(())
        // Then
        XCTAssertEqual(completed.value, 10_000)
        XCTAssertTrue(slow.allSatisfy(\.isCompleted))
        XCTAssertEqual(transport.requests.count, 10_004)
        XCTAssertEqual(queue.runningCount, 0)
    }

    func testRequestsFromManyThreadsAllComplete() {
        // Given
        let transport = FakeTransport.answering(FakeResponse.status(200).delayed(by: 0.001))
        let queue = RequestQueue(maxConcurrentRequests: 3)
        let connect = Connect(transport: transport, retryPolicy: nil, requestQueue: queue)
        let futures = Recorder<Future<Data>>()
        // When
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            futures.append(connect.request(Endpoint()))
        }
        // Then
        for future in futures.values { XCTAssertNotNil(value(of: future)) }
        XCTAssertEqual(transport.requests.count, 200)
        XCTAssertEqual(queue.runningCount, 0)
        XCTAssertEqual(queue.pendingCount, 0)
    }
}

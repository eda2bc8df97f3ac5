import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// `Future.race(_:)`: the first result wins, success or failure; the others are cancelled.
final class FutureRaceTests: XCTestCase {
    func testTheFirstSuccessWinsAndTheOthersAreCancelled() throws {
        let promises = (0..<3).map { _ in Promise<Int>() }
        let cancelled = Recorder<Int>()
        for (index, promise) in promises.enumerated() { promise.setCancelHandler { cancelled.append(index) } }
        let first = Future.race(promises.map(\.future))
        let events = Recorder<String>()
        first.observe { _ in events.append("observed after \(cancelled.values.count) cancellations") }
        XCTAssertFalse(first.isCompleted)

        promises[1].succeed(10)
        XCTAssertEqual(try first.wait(), 10)
        XCTAssertEqual(cancelled.values.sorted(), [0, 2], "the losers are cancelled")
        XCTAssertEqual(events.values, ["observed after 2 cancellations"], "before anyone hears of the winner")
        XCTAssertFalse(promises[1].future.isCancelled)
        XCTAssertFalse(first.isCancelled)
    }

    func testTheFirstFailureWinsToo() {
        let promises = (0..<2).map { _ in Promise<Int>() }
        let first = Future.race(promises.map(\.future))
        promises[0].fail(TestError(5))
        XCTAssertEqual(error(of: first) as? TestError, TestError(5))
        XCTAssertTrue(promises[1].future.isCancelled)
    }

    func testAFutureAlreadyCompleteWinsAtOnce() throws {
        let pending = Promise<Int>()
        let done = Promise<Int>()
        done.succeed(2)
        let first = Future.race([pending.future, Future(value: 1), done.future])
        XCTAssertEqual(try XCTUnwrap(first.result).get(), 1, "the first complete one in the array, before race returns")
        XCTAssertTrue(pending.future.isCancelled)
        XCTAssertFalse(done.future.isCancelled)
    }

    /// A complete input on a `receive(on:)` queue delivers its callback later, on that queue: it still wins over an
    /// input complete at once after it in the array.
    func testACompleteInputOnAQueueWinsOverOneLaterInTheArray() throws {
        let queue = DispatchQueue(label: "race-receiver")
        let onQueue = Future(value: 1).receive(on: queue)
        XCTAssertTrue(onQueue.isCompleted)
        let first = Future.race([onQueue, Future(value: 2)])
        XCTAssertEqual(try XCTUnwrap(first.result).get(), 1)
    }

    func testAnEmptyRaceFailsAtOnce() throws {
        let first = Future<Int>.race([])
        let result = try XCTUnwrap(first.result, "no hang: complete before race returns")
        XCTAssertThrowsError(try result.get()) { error in
            XCTAssertEqual(error as? FutureError, .emptyRace)
            XCTAssertTrue("\(error)".contains("race"), "\(error)")
        }
    }

    func testASingleFutureRaceFollowsIt() throws {
        let promise = Promise<String>()
        let first = Future.race([promise.future])
        promise.succeed("only")
        XCTAssertEqual(try first.wait(), "only")
    }

    func testCancellingTheRaceCancelsEveryPendingInput() {
        let promises = (0..<3).map { _ in Promise<Int>() }
        let handlerRuns = Counter()
        for promise in promises { promise.setCancelHandler { handlerRuns.increment() } }
        let first = Future.race(promises.map(\.future))
        first.cancel()
        XCTAssertEqual(handlerRuns.value, 3)
        XCTAssertTrue(promises.allSatisfy(\.future.isCancelled))
        XCTAssertTrue(first.isCancelled)
        XCTAssertEqual(error(of: first) as? FutureError, .cancelled)
    }

    /// A race of requests' futures is cancelled, and times out, with the client's error, as its documentation says.
    func testARaceOfRequestsIsCancelledAndTimesOutWithTheClientsError() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        func slow() -> Future<Data> { connect.request(ClientFixtures.Endpoint(endpoint: "/slow")) }

        let cancelled = Future.race([slow(), slow()])
        cancelled.cancel()
        XCTAssertEqual(
            (error(of: cancelled) as? ConnectError)?.kind, .cancelled, "\(String(describing: error(of: cancelled)))")

        let late = Future.race([slow(), slow()]).timeout(after: 0.01)
        XCTAssertEqual((error(of: late) as? ConnectError)?.kind, .timedOut, "\(String(describing: error(of: late)))")
        XCTAssertEqual(transport.cancelledRequests.count, 4, "every request of both races was cancelled")
    }

    /// Many inputs completing at once from many threads: exactly one result, which is the winner's, and every
    /// other input is complete (cancelled by the winner, or done before it heard).
    func testInputsCompletingConcurrentlyHaveExactlyOneWinner() throws {
        for _ in 0..<50 {
            let promises = (0..<16).map { _ in Promise<Int>() }
            let first = Future.race(promises.map(\.future))
            let callbacks = Counter()
            first.observe { _ in callbacks.increment() }
            DispatchQueue.concurrentPerform(iterations: promises.count) { index in
                promises[index].completeIfPending(with: .success(index))
            }
            let winner = try first.wait()
            XCTAssertEqual(callbacks.value, 1)
            XCTAssertEqual(try promises[winner].future.wait(), winner)
            XCTAssertTrue(promises.allSatisfy(\.future.isCompleted))
        }
    }

    func testAnAbandonedPendingRaceIsFreedWithItsInputs() {
        weak var weakInput: Future<Int>?
        weak var weakRace: Future<Int>?
        do {
            let first = Promise<Int>()
            let second = Promise<Int>()
            weakInput = first.future
            let race = Future.race([first.future, second.future])
            weakRace = race
        }
        XCTAssertNil(weakRace, "no retain cycle between the race and its inputs")
        XCTAssertNil(weakInput)
    }

    func testAFinishedRaceKeepsNoInputAlive() throws {
        weak var weakLoser: Future<Int>?
        weak var weakWinner: Future<Int>?
        var first: Future<Int>?
        do {
            let winner = Promise<Int>()
            let loser = Promise<Int>()
            weakWinner = winner.future
            weakLoser = loser.future
            first = Future.race([winner.future, loser.future])
            winner.succeed(1)
        }
        XCTAssertEqual(try first?.wait(), 1)
        XCTAssertNil(weakWinner)
        XCTAssertNil(weakLoser)
    }

    // MARK: requests

    /// `Future.race` of two requests: the answer wins, the request still pending is cancelled.
    func testARaceOfRequestsCancelsTheSlowerOne() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        transport.stub(.get, "/fast", with: .json(string: #"{"ok":true}"#))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let first = Future.race([
            connect.request(ClientFixtures.Endpoint(endpoint: "/slow")),
            connect.request(ClientFixtures.Endpoint(endpoint: "/fast")),
        ])
        // Read in a callback (`result(of:)`): the losers are cancelled before the callbacks run.
        let data = try XCTUnwrap(result(of: first)).get()
        XCTAssertEqual(String(decoding: data, as: UTF8.self), #"{"ok":true}"#)
        XCTAssertEqual(transport.cancelledRequests.map { $0.url?.path }, ["/slow"])
    }
}

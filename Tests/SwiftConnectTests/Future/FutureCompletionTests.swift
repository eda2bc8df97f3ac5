import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// How a future is created and completed: once, and only once.
final class FutureCompletionTests: XCTestCase {
    func testResolvedFuturesHoldTheirResult() throws {
        XCTAssertEqual(try Future(value: 1).wait(), 1)
        XCTAssertThrowsError(try Future<Int>(error: TestError(7)).wait()) { error in
            XCTAssertEqual(error as? TestError, TestError(7))
        }
        XCTAssertTrue(Future(value: 1).isCompleted)
    }

    func testPromiseCompletesItsFuture() throws {
        let promise = Promise<String>()
        XCTAssertFalse(promise.future.isCompleted)
        XCTAssertNil(promise.future.result)
        XCTAssertTrue(promise.succeed("done"))
        XCTAssertEqual(try promise.future.wait(), "done")
    }

    func testProducerInitializerHandsOverThePromise() throws {
        let future = Future<Int> { promise in
            DispatchQueue.global().async { promise.succeed(42) }
        }
        XCTAssertEqual(try future.wait(), 42)
    }

    func testSecondCompletionIsIgnoredAndReported() throws {
        let reports = Recorder<String>()
        FutureDiagnostics.handler = { reports.append($0) }
        defer { FutureDiagnostics.handler = nil }

        let promise = Promise<Int>()
        XCTAssertTrue(promise.succeed(1))
        XCTAssertFalse(promise.succeed(2))
        XCTAssertFalse(promise.fail(TestError()))
        XCTAssertEqual(try promise.future.wait(), 1)
        #if DEBUG
            XCTAssertEqual(reports.values.count, 2)
            XCTAssertTrue(reports.values.first?.contains("Promise<Int> completed more than once") ?? false)
            XCTAssertTrue(reports.values.first?.contains("FutureCompletionTests.swift") ?? false)
        #endif
    }

    func testCompleteIfPendingDoesNotReport() {
        let reports = Recorder<String>()
        FutureDiagnostics.handler = { reports.append($0) }
        defer { FutureDiagnostics.handler = nil }

        let promise = Promise<Int>()
        XCTAssertTrue(promise.completeIfPending(with: .success(1)))
        XCTAssertFalse(promise.completeIfPending(with: .success(2)))
        XCTAssertTrue(reports.values.isEmpty)
    }

    func testCompletingFromEightThreadsAtOnceCompletesExactlyOnce() throws {
        for _ in 0..<200 {
            let promise = Promise<Int>()
            let observed = Counter()
            promise.future.observe { _ in observed.increment() }
            let wins = Counter()
            let start = DispatchGroup()
            start.enter()
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if index == 0 { start.leave() }
                if promise.completeIfPending(with: .success(index)) { wins.increment() }
            }
            XCTAssertEqual(wins.value, 1)
            XCTAssertEqual(observed.value, 1)
            let value = try promise.future.wait()
            XCTAssertTrue((0..<8).contains(value))
        }
    }

    func testCompleteCatchingTurnsAThrowIntoAFailure() {
        let promise = Promise<Int>()
        promise.complete { throw TestError(3) }
        XCTAssertThrowsError(try promise.future.wait()) { XCTAssertEqual($0 as? TestError, TestError(3)) }
    }
}

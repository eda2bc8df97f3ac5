import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// map, flatMap, mapError, recover, zip, all.
final class FutureOperatorTests: XCTestCase {
    func testMapTransformsPendingAndResolvedValues() throws {
        XCTAssertEqual(try Future(value: 2).map { $0 * 10 }.wait(), 20)
        let promise = Promise<Int>()
        let mapped = promise.future.map { "\($0)" }
        promise.succeed(3)
        XCTAssertEqual(try mapped.wait(), "3")
    }

    func testErrorThrownInMapBecomesAFailure() {
        let pending = Promise<Int>()
        let failing = pending.future.map { _ -> Int in throw TestError(1) }
        pending.succeed(1)
        XCTAssertThrowsError(try failing.wait()) { XCTAssertEqual($0 as? TestError, TestError(1)) }
        XCTAssertThrowsError(try Future(value: 1).map { _ -> Int in throw TestError(2) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(2))
        }
    }

    func testMapSkipsTransformOnFailure() {
        let calls = Counter()
        let future = Future<Int>(error: TestError(4)).map { value -> Int in
            calls.increment()
            return value
        }
        XCTAssertThrowsError(try future.wait())
        XCTAssertEqual(calls.value, 0)
    }

    func testFlatMapFollowsTheNextFutureAcrossQueues() throws {
        let future = Future(value: 1).flatMap { value in
            Future<Int> { promise in DispatchQueue.global().async { promise.succeed(value + 1) } }
        }.flatMap { value in
            Future<String> { promise in DispatchQueue(label: "other").async { promise.succeed("v\(value)") } }
        }
        XCTAssertEqual(try future.wait(), "v2")
    }

    func testFlatMapPropagatesFailuresFromEitherSide() {
        XCTAssertThrowsError(try Future<Int>(error: TestError(1)).flatMap { Future(value: $0) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(1))
        }
        XCTAssertThrowsError(try Future(value: 1).flatMap { _ in Future<Int>(error: TestError(2)) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(2))
        }
        XCTAssertThrowsError(try Future(value: 1).flatMap { _ -> Future<Int> in throw TestError(3) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(3))
        }
    }

    func testMapErrorTransformsOnlyErrors() throws {
        XCTAssertEqual(try Future(value: 1).mapError { _ in TestError(9) }.wait(), 1)
        XCTAssertThrowsError(try Future<Int>(error: TestError(1)).mapError { _ in TestError(9) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(9))
        }
    }

    func testRecoverWithAValue() throws {
        XCTAssertEqual(try Future<Int>(error: TestError()).recover { _ in 7 }.wait(), 7)
        XCTAssertEqual(try Future(value: 1).recover { _ in 7 }.wait(), 1)
        XCTAssertThrowsError(try Future<Int>(error: TestError(1)).recover { _ -> Int in throw TestError(2) }.wait()) {
            XCTAssertEqual($0 as? TestError, TestError(2))
        }
    }

    func testRecoverWithAFuture() throws {
        let recovered = Future<Int>(error: TestError()).recover { _ in
            Future<Int> { promise in DispatchQueue.global().async { promise.succeed(8) } }
        }
        XCTAssertEqual(try recovered.wait(), 8)
    }

    func testZipWaitsForBothAndFailsOnTheFirstError() throws {
        let left = Promise<Int>()
        let right = Promise<String>()
        let zipped = left.future.zip(right.future)
        right.succeed("b")
        XCTAssertFalse(zipped.isCompleted)
        left.succeed(1)
        let pair = try zipped.wait()
        XCTAssertEqual(pair.0, 1)
        XCTAssertEqual(pair.1, "b")

        let never = Promise<Int>()
        let failing = never.future.zip(Future<Int>(error: TestError(5)))
        XCTAssertThrowsError(try failing.wait(timeout: 1)) { XCTAssertEqual($0 as? TestError, TestError(5)) }
        never.succeed(0)
    }

    func testAllKeepsOrderRegardlessOfCompletionOrder() throws {
        let promises = (0..<100).map { _ in Promise<Int>() }
        let all = Future.all(promises.map(\.future))
        for index in (0..<100).reversed() {
            XCTAssertFalse(all.isCompleted)
            promises[index].succeed(index)
        }
        XCTAssertEqual(try all.wait(), Array(0..<100))
    }

    func testAllFailsWithTheFirstError() {
        let promises = (0..<3).map { _ in Promise<Int>() }
        let all = Future.all(promises.map(\.future))
        promises[1].fail(TestError(1))
        promises[2].fail(TestError(2))
        promises[0].succeed(0)
        XCTAssertThrowsError(try all.wait()) { XCTAssertEqual($0 as? TestError, TestError(1)) }
    }

    func testAllOfNothingSucceedsAtOnce() throws {
        let all: Future<[Int]> = Future.all([])
        XCTAssertEqual(try all.wait(timeout: 0), [])
    }

    func testAllCompletedConcurrently() throws {
        let promises = (0..<1_000).map { _ in Promise<Int>() }
        let all = Future.all(promises.map(\.future))
        DispatchQueue.concurrentPerform(iterations: 1_000) { promises[$0].succeed($0) }
        XCTAssertEqual(try all.wait(), Array(0..<1_000))
    }

    func testAsVoidKeepsSuccessAndFailure() {
        XCTAssertNoThrow(try Future(value: 1).asVoid().wait())
        XCTAssertThrowsError(try Future<Int>(error: TestError()).asVoid().wait())
    }
}

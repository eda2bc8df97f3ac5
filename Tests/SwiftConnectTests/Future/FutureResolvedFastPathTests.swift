import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// The operators on a future created resolved take an inlinable fast path; it must behave like the general
/// path (the one a future resolved by a promise takes).
final class FutureResolvedFastPathTests: XCTestCase {
    /// The same result, once from a future created resolved and once from one resolved by a promise.
    private func bothKinds(_ result: Result<Int, any Error>) -> [Future<Int>] {
        let promise = Promise<Int>()
        promise.complete(with: result)
        return [Future(result: result), promise.future]
    }

    func testResultAndIsCompleted() throws {
        for future in bothKinds(.success(1)) {
            XCTAssertTrue(future.isCompleted)
            XCTAssertEqual(try future.result?.get(), 1)
            XCTAssertFalse(future.isCancelled)
        }
        let pending = Promise<Int>().future
        XCTAssertFalse(pending.isCompleted)
        XCTAssertNil(pending.result)
        XCTAssertThrowsError(try Future<Int>(error: TestError(1)).result?.get()) {
            XCTAssertEqual($0 as? TestError, TestError(1))
        }
    }

    func testMapRunsAtOnceAndTurnsAThrowIntoAFailure() throws {
        for future in bothKinds(.success(1)) {
            let mapped = future.map { $0 + 1 }
            XCTAssertEqual(try mapped.result?.get(), 2, "transformed before map returned")
            let failed = future.map { _ -> Int in throw TestError(2) }
            XCTAssertThrowsError(try failed.result?.get()) { XCTAssertEqual($0 as? TestError, TestError(2)) }
        }
        for future in bothKinds(.failure(TestError(3))) {
            let calls = Counter()
            let mapped = future.map { value -> Int in
                calls.increment()
                return value
            }
            XCTAssertThrowsError(try mapped.result?.get()) { XCTAssertEqual($0 as? TestError, TestError(3)) }
            XCTAssertEqual(calls.value, 0)
        }
    }

    func testMapErrorAndRecoverRunAtOnce() throws {
        for future in bothKinds(.success(1)) {
            XCTAssertEqual(try future.mapError { _ in TestError(9) }.result?.get(), 1)
            XCTAssertEqual(try future.recover { _ in 5 }.result?.get(), 1)
        }
        for future in bothKinds(.failure(TestError(1))) {
            XCTAssertThrowsError(try future.mapError { _ in TestError(9) }.result?.get()) {
                XCTAssertEqual($0 as? TestError, TestError(9))
            }
            XCTAssertEqual(try future.recover { _ in 5 }.result?.get(), 5)
            XCTAssertThrowsError(try future.recover { _ -> Int in throw TestError(7) }.result?.get()) {
                XCTAssertEqual($0 as? TestError, TestError(7))
            }
        }
    }

    func testFlatMapOnAResolvedSource() throws {
        for future in bothKinds(.success(1)) {
            XCTAssertEqual(try future.flatMap { Future(value: $0 + 1) }.result?.get(), 2)
            XCTAssertThrowsError(try future.flatMap { _ -> Future<Int> in throw TestError(2) }.result?.get()) {
                XCTAssertEqual($0 as? TestError, TestError(2))
            }
            let next = Promise<Int>()
            let chained = future.flatMap { _ in next.future }
            XCTAssertFalse(chained.isCompleted)
            next.succeed(3)
            XCTAssertEqual(try chained.result?.get(), 3)
        }
        for future in bothKinds(.failure(TestError(4))) {
            let calls = Counter()
            let chained = future.flatMap { value -> Future<Int> in
                calls.increment()
                return Future(value: value)
            }
            XCTAssertThrowsError(try chained.result?.get()) { XCTAssertEqual($0 as? TestError, TestError(4)) }
            XCTAssertEqual(calls.value, 0)
        }
    }

    func testCancellingAFlatMapOnAResolvedSourceCancelsTheNextFuture() {
        let next = Promise<Int>()
        let handlerRuns = Counter()
        next.setCancelHandler { handlerRuns.increment() }
        let chained = Future(value: 1).flatMap { _ in next.future }
        chained.cancel()
        XCTAssertEqual(handlerRuns.value, 1)
        XCTAssertTrue(next.future.isCancelled)
        XCTAssertThrowsError(try chained.wait()) { XCTAssertEqual($0 as? FutureError, .cancelled) }

        let resolved = Future(value: 1).flatMap { Future(value: $0) }
        resolved.cancel()
        XCTAssertFalse(resolved.isCancelled)
        XCTAssertEqual(try resolved.wait(), 1)
    }

    func testFlatMapOnAResolvedSourceKeepsTheQueueOfTheNextFuture() {
        let queue = DispatchQueue(label: "next")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "next")
        let seen = Recorder<String?>()
        let done = expectation(description: "observed")
        let release = DispatchSemaphore(value: 0)
        queue.async { release.wait() }  // holds the queue until the chain is built
        Future(value: 1).flatMap { Future(value: $0).receive(on: queue) }.map { $0 + 1 }.observe { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            done.fulfill()
        }
        release.signal()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["next"])
    }

    func testObserveOnAResolvedFuture() {
        let ran = Counter()
        Future<Int>(error: TestError(1)).observe { _ in ran.increment() }
        XCTAssertEqual(ran.value, 1, "ran synchronously, before observe returned")

        let queue = DispatchQueue(label: "chosen")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "chosen")
        let seen = Recorder<String?>()
        let done = expectation(description: "observed on the queue")
        Future(value: 1).observe(on: queue) { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            done.fulfill()
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["chosen"])
    }
}

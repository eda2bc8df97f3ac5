import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// `Future.allSettled(_:)`: every result, in input order, once all are complete; it never fails on its own.
final class FutureAllSettledTests: XCTestCase {
    func testEveryResultInInputOrderWhateverTheCompletionOrder() throws {
        let promises = (0..<4).map { _ in Promise<Int>() }
        let settled = Future.allSettled(promises.map(\.future))
        promises[3].succeed(3)
        promises[1].fail(TestError(1))
        promises[0].succeed(0)
        XCTAssertFalse(settled.isCompleted, "one failure does not end the wait")
        promises[2].fail(TestError(2))

        let results = try settled.wait()
        XCTAssertEqual(results.count, 4)
        XCTAssertEqual(try results[0].get(), 0)
        XCTAssertThrowsError(try results[1].get()) { XCTAssertEqual($0 as? TestError, TestError(1)) }
        XCTAssertThrowsError(try results[2].get()) { XCTAssertEqual($0 as? TestError, TestError(2)) }
        XCTAssertEqual(try results[3].get(), 3)
    }

    func testAnEmptyArraySucceedsAtOnce() throws {
        let settled = Future<[Result<Int, any Error>]>.allSettled([Future<Int>]())
        XCTAssertEqual(try XCTUnwrap(settled.result).get().count, 0)
    }

    func testInputsAlreadyCompleteSettleAtOnce() throws {
        let settled = Future.allSettled([Future(value: 1), Future(error: TestError(9))])
        let results = try XCTUnwrap(settled.result).get()
        XCTAssertEqual(try results[0].get(), 1)
        XCTAssertThrowsError(try results[1].get())
    }

    func testAnInputsCancellationIsOneOfTheResults() throws {
        let promises = (0..<2).map { _ in Promise<Int>() }
        let settled = Future.allSettled(promises.map(\.future))
        promises[0].future.cancel()
        promises[1].succeed(1)
        let results = try settled.wait()
        XCTAssertThrowsError(try results[0].get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
        XCTAssertEqual(try results[1].get(), 1)
    }

    func testCancellingItCancelsEveryPendingInput() {
        let promises = (0..<3).map { _ in Promise<Int>() }
        let handlerRuns = Counter()
        for promise in promises { promise.setCancelHandler { handlerRuns.increment() } }
        promises[0].succeed(0)
        let settled = Future.allSettled(promises.map(\.future))
        settled.cancel()
        XCTAssertEqual(handlerRuns.value, 2, "the complete input is left alone")
        XCTAssertFalse(promises[0].future.isCancelled)
        XCTAssertTrue(promises[1].future.isCancelled)
        XCTAssertTrue(promises[2].future.isCancelled)
        XCTAssertEqual(error(of: settled) as? FutureError, .cancelled)
    }

    func testInputsCompletingConcurrentlyFromManyThreads() throws {
        for _ in 0..<20 {
            let promises = (0..<200).map { _ in Promise<Int>() }
            let settled = Future.allSettled(promises.map(\.future))
            let callbacks = Counter()
            settled.observe { _ in callbacks.increment() }
            DispatchQueue.concurrentPerform(iterations: promises.count) { index in
                if index.isMultiple(of: 3) {
                    promises[index].fail(TestError(index))
                } else {
                    promises[index].succeed(index)
                }
            }
            let results = try settled.wait()
            XCTAssertEqual(callbacks.value, 1)
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let value): XCTAssertEqual(value, index)
                case .failure(let error): XCTAssertEqual(error as? TestError, TestError(index))
                }
            }
        }
    }

    func testAnAbandonedPendingAllSettledIsFreedWithItsInputs() {
        weak var weakInput: Future<Int>?
        weak var weakSettled: Future<[Result<Int, any Error>]>?
        do {
            let first = Promise<Int>()
            let second = Promise<Int>()
            weakInput = first.future
            let settled = Future.allSettled([first.future, second.future])
            weakSettled = settled
        }
        XCTAssertNil(weakSettled, "no retain cycle between allSettled and its inputs")
        XCTAssertNil(weakInput)
    }
}

import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Bridging to async/await, both ways.
final class FutureConcurrencyTests: XCTestCase {
    func testAwaitingTheValue() async throws {
        let value = try await Future<Int> { promise in
            DispatchQueue.global().async { promise.succeed(5) }
        }.value
        XCTAssertEqual(value, 5)
    }

    func testAwaitingAFailure() async {
        do {
            _ = try await Future<Int>(error: TestError(1)).value
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error as? TestError, TestError(1))
        }
    }

    func testFutureFromAnAsyncClosure() async throws {
        let future = Future { () async throws -> Int in
            await Task.yield()
            return 9
        }
        let value = try await future.value
        XCTAssertEqual(value, 9)
        let failing = Future { () async throws -> Int in throw TestError(2) }
        let result = await failing.resultValue
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? TestError, TestError(2)) }
    }

    func testCancellingTheAwaitingTaskCancelsTheFuture() async {
        let promise = Promise<Int>()
        let cancelled = expectation(description: "cancel handler ran")
        promise.setCancelHandler { cancelled.fulfill() }
        let task = Task { try await promise.future.value }
        task.cancel()
        await fulfillment(of: [cancelled], timeout: 5)
        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
    }

    func testCancellingTheFutureCancelsItsTask() async {
        let started = expectation(description: "operation started")
        let sawCancellation = expectation(description: "operation saw cancellation")
        let gate = Promise<Void>()
        let future = Future { () async throws -> Int in
            started.fulfill()
            // Wait until the test cancels, then report what the task saw.
            _ = await gate.future.resultValue
            if Task.isCancelled { sawCancellation.fulfill() }
            return 1
        }
        await fulfillment(of: [started], timeout: 5)
        future.cancel()
        gate.succeed(())
        await fulfillment(of: [sawCancellation], timeout: 5)
        XCTAssertTrue(future.isCancelled)
    }

    func testValueWithTimeoutGivesUp() async {
        let promise = Promise<Int>()
        do {
            _ = try await promise.future.value(timeout: 0.05)
            XCTFail("expected a timeout")
        } catch {
            XCTAssertTrue(error is FutureTimeoutError)
        }
        promise.succeed(1)
    }
}

// MARK: - A future awaited by several tasks

extension FutureConcurrencyTests {
    /// As `value` documents: a cancelled awaiting task cancels the future for every task awaiting it; awaiting a
    /// relay that follows the shared future cancels only the relay.
    func testCancellingOneAwaitingTaskCancelsASharedFutureUnlessAwaitedThroughARelay() async {
        let shared = Promise<Int>()
        let direct = Task { try await shared.future.value }
        let mine = Promise<Int>()
        shared.future.observe { mine.completeIfPending(with: $0) }
        let relayed = Task { try await mine.future.value }

        relayed.cancel()
        let relayedResult = await relayed.result
        XCTAssertThrowsError(try relayedResult.get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
        XCTAssertFalse(shared.future.isCompleted, "the relay's cancellation stays with the relay")

        let other = Task { try await shared.future.value }
        direct.cancel()
        let otherResult = await other.result
        XCTAssertThrowsError(try otherResult.get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
        XCTAssertTrue(shared.future.isCancelled)
    }
}

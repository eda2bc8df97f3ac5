import Dispatch
import Foundation
import XCTest

@testable import SwiftConnect

/// A step of `flatMap` or `recover` that returns a future waiting for the step's own result: the future it returned
/// itself, or one that follows it. Nothing could ever complete such a pair, so it fails at once with
/// an error that says so (`FutureCycleError`) instead of leaving its callers waiting for good.
final class FutureCycleTests: XCTestCase {
    func testFlatMapReturningItsOwnFutureFailsWithCycle() {
        // Given a flatMap whose step returns the very future flatMap returned
        let source = Promise<Int>()
        let own = FutureSlot<Int>()
        let future = source.future.flatMap { _ in own.future! }
        own.future = future

        // When the source succeeds and the step runs
        source.succeed(1)

        // Then the future fails with a typed error instead of staying pending for good
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testRecoverReturningItsOwnFutureFailsWithCycle() {
        let source = Promise<Int>()
        let own = FutureSlot<Int>()
        let future = source.future.recover { _ in own.future! }
        own.future = future

        source.fail(TestError(1))

        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testTwoFlatMapsThatFollowEachOtherBothFailWithCycle() {
        // Given two steps, each returning the other's future
        let first = Promise<Int>()
        let second = Promise<Int>()
        let firstFollows = FutureSlot<Int>()
        let secondFollows = FutureSlot<Int>()
        let a = first.future.flatMap { _ in firstFollows.future! }
        let b = second.future.flatMap { _ in secondFollows.future! }
        firstFollows.future = b
        secondFollows.future = a

        // When both steps run
        first.succeed(1)
        second.succeed(2)

        // Then the step that closed the loop fails, and the other, following it, fails alike
        XCTAssertEqual(error(of: a, timeout: 5) as? FutureCycleError, FutureCycleError())
        XCTAssertEqual(error(of: b, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningAFutureChainedOnItselfFailsWithCycle() {
        // Given a step that returns a later stage of its own chain
        let source = Promise<Int>()
        let own = FutureSlot<Int>()
        let future = source.future.flatMap { _ in own.future! }
        let later = future.map { $0 + 1 }
        own.future = later

        source.succeed(1)

        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
        XCTAssertEqual(error(of: later, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testCancellingAFlatMapThatReturnedItsOwnFutureReturns() {
        // Given a self-returning step that has run
        let source = Promise<Int>()
        let own = FutureSlot<Int>()
        let future = source.future.flatMap { _ in own.future! }
        own.future = future
        source.succeed(1)

        // When the future is cancelled from another thread (a walk up a looping chain would never return)
        let cancelled = expectation(description: "cancel() returns")
        DispatchQueue.global().async {
            future.cancel()
            cancelled.fulfill()
        }

        // Then cancel() returns, and the future keeps the failure it already had
        wait(for: [cancelled], timeout: 5)
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningAnotherPendingFutureStillFollowsIt() throws {
        // A next step that merely waits on the same source is no cycle.
        let source = Promise<Int>()
        let sibling = source.future.map { $0 * 10 }
        let future = source.future.flatMap { _ in sibling }
        source.succeed(2)
        XCTAssertEqual(try future.wait(timeout: 5), 20)
    }

    func testCycleErrorSaysWhatHappened() {
        let description = String(describing: FutureCycleError())
        XCTAssertTrue(description.contains("waits for the step's own result"), description)
    }
}

/// Where a test keeps a future for a step to return once the future exists (the step runs later).
private final class FutureSlot<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `lock` protects `stored`.
    private let lock = NSLock()
    private var stored: Future<Value>?

    var future: Future<Value>? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

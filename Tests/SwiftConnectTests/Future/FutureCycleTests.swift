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
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.flatMap { _ in own.withLock { $0 }! }
        own.withLock { $0 = future }

        // When the source succeeds and the step runs
        source.succeed(1)

        // Then the future fails with a typed error instead of staying pending for good
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testRecoverReturningItsOwnFutureFailsWithCycle() {
        let source = Promise<Int>()
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.recover { _ in own.withLock { $0 }! }
        own.withLock { $0 = future }

        source.fail(TestError(1))

        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testTwoFlatMapsThatFollowEachOtherBothFailWithCycle() {
        assertTwoStepsWaitingForEachOtherFail { $0 }
    }

    /// Two steps, each returning `wait(other)` of the other's future: both run, and both must fail with the loop
    /// (the step that closed it, and the other, following it).
    private func assertTwoStepsWaitingForEachOtherFail(
        through wait: @escaping @Sendable (Future<Int>) -> Future<Int>, line: UInt = #line
    ) {
        // Given two steps, each returning (a future waiting for) the other's future
        let first = Promise<Int>()
        let second = Promise<Int>()
        let firstWaitsFor = Guarded<Future<Int>?>(nil)
        let secondWaitsFor = Guarded<Future<Int>?>(nil)
        let a = first.future.flatMap { _ in wait(firstWaitsFor.withLock { $0 }!) }
        let b = second.future.flatMap { _ in wait(secondWaitsFor.withLock { $0 }!) }
        firstWaitsFor.withLock { $0 = b }
        secondWaitsFor.withLock { $0 = a }

        // When both steps run
        first.succeed(1)
        second.succeed(2)

        // Then both fail with the loop
        XCTAssertEqual(error(of: a, timeout: 5) as? FutureCycleError, FutureCycleError(), line: line)
        XCTAssertEqual(error(of: b, timeout: 5) as? FutureCycleError, FutureCycleError(), line: line)
    }

    func testFlatMapReturningAFutureChainedOnItselfFailsWithCycle() {
        // Given a step that returns a later stage of its own chain
        let source = Promise<Int>()
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.flatMap { _ in own.withLock { $0 }! }
        let later = future.map { $0 + 1 }
        own.withLock { $0 = later }

        source.succeed(1)

        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
        XCTAssertEqual(error(of: later, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningATimeoutOnItselfFailsWithCycleAtOnce() {
        // Given a step that returns a time limit put on its own future (when the limit passed, its walk up the
        // chain to report the timeout went round the loop for good)
        let source = Promise<Int>()
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.flatMap { _ in own.withLock { $0 }!.timeout(after: 60) }
        own.withLock { $0 = future }

        source.succeed(1)

        // Then it fails with the loop at once, not with a timeout a minute later
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testCancellingAFlatMapThatReturnedItsOwnFutureReturns() {
        // Given a self-returning step that has run
        let source = Promise<Int>()
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.flatMap { _ in own.withLock { $0 }! }
        own.withLock { $0 = future }
        source.succeed(1)

        assertCancellingFromAnotherThreadReturns(future)
    }

    /// Cancels `future`, a loop that failed with the cycle, from another thread: `cancel()` must return (a walk up a
    /// looping chain would never return), and the future keep the failure it already had.
    private func assertCancellingFromAnotherThreadReturns<T>(_ future: Future<T>, line: UInt = #line) {
        let cancelled = expectation(description: "cancel() returns")
        DispatchQueue.global().async {
            future.cancel()
            cancelled.fulfill()
        }
        wait(for: [cancelled], timeout: 5)
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError(), line: line)
    }

    // MARK: Loops through a combination

    func testFlatMapReturningAnAllThatWaitsForItFailsWithCycle() {
        // Given a step that returns `all` of a later stage of its own chain
        let source = Promise<Int>()
        let own = Guarded<Future<[Int]>?>(nil)
        let future = source.future.flatMap { _ in Future.all([own.withLock { $0 }!.map { $0.count }]) }
        own.withLock { $0 = future }

        // When the step runs
        source.succeed(1)

        // Then it fails with the loop instead of staying pending for good
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningAZipThatWaitsForItFailsWithCycle() {
        // Given a step that returns a pair of a pending future and the step's own future, when the step runs
        let (future, other) = stepRunning { own, other in other.zip(own).map { $0.1 } }

        // Then it fails with the loop, and the pending input is cancelled with the pair
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
        XCTAssertTrue(other.future.isCancelled)
    }

    func testFlatMapReturningAZipWithItFirstFailsWithCycle() {
        let (future, _) = stepRunning { own, other in own.zip(other).map { $0.0 } }

        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningAnAllSettledThatWaitsForItFailsWithCycle() {
        // Given a step that returns the settled results of its own future (and of another, pending)
        let (future, _) = stepRunning { own, other in Future.allSettled([other, own]).map { $0.count } }

        // Then the future fails with the loop (the settled results, once the other input completes, hold that failure)
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
    }

    func testFlatMapReturningARaceThatWaitsForItFailsWithCycle() {
        // Given a race whose first input is pending elsewhere, and whose second is the step's own future
        let (future, other) = stepRunning { own, other in Future.race([other, own]) }

        // Then it fails with the loop, and the race's other input, having lost, is cancelled
        XCTAssertEqual(error(of: future, timeout: 5) as? FutureCycleError, FutureCycleError())
        XCTAssertTrue(other.future.isCancelled)
    }

    /// A `flatMap` step that returns `combine(own, other)`, `own` being the future the `flatMap` returned and
    /// `other` a pending promise's, run: the future, and the promise.
    private func stepRunning(
        _ combine: @escaping @Sendable (_ own: Future<Int>, _ other: Future<Int>) -> Future<Int>
    ) -> (future: Future<Int>, other: Promise<Int>) {
        let source = Promise<Int>()
        let other = Promise<Int>()
        let own = Guarded<Future<Int>?>(nil)
        let future = source.future.flatMap { _ in combine(own.withLock { $0 }!, other.future) }
        own.withLock { $0 = future }
        source.succeed(1)
        return (future, other)
    }

    func testTwoFlatMapsThatWaitForEachOtherThroughAllBothFailWithCycle() {
        assertTwoStepsWaitingForEachOtherFail { Future.all([$0]).map { $0[0] } }
    }

    func testCancellingAFlatMapThatReturnedAnAllOfItselfReturns() {
        // Given a step that returned `all` of its own future (a loop the walk up a chain to report a cancellation
        // must not go round for good)
        let source = Promise<Int>()
        let own = Guarded<Future<[Int]>?>(nil)
        let future = source.future.flatMap { _ in Future.all([own.withLock { $0 }!.map { $0.count }]) }
        own.withLock { $0 = future }
        source.succeed(1)

        assertCancellingFromAnotherThreadReturns(future)
    }

    func testFlatMapReturningACombinationOfSharedPendingInputsStillFollowsIt() throws {
        // Inputs shared by several combinations (a diamond) are no loop: each is looked at once.
        let source = Promise<Int>()
        let leaf = Promise<Int>()
        var level = leaf.future
        for _ in 0..<40 { level = level.zip(level).map { $0.0 + $0.1 } }
        let shared = level
        let future = source.future.flatMap { _ in Future.all([shared, shared]).map { $0[0] } }

        source.succeed(1)
        leaf.succeed(1)

        XCTAssertEqual(try future.wait(timeout: 5), 1 << 40)
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

import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// cancel(): fails once, runs the cancel handler once, reaches the producer through the chain.
final class FutureCancellationTests: XCTestCase {
    func testCancelFailsWithCancellationAndRunsTheHandlerOnce() {
        let promise = Promise<Int>()
        let handlerRuns = Counter()
        let observed = Counter()
        promise.setCancelHandler { handlerRuns.increment() }
        promise.future.observe { _ in observed.increment() }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in promise.future.cancel() }
        XCTAssertEqual(handlerRuns.value, 1)
        XCTAssertEqual(observed.value, 1)
        XCTAssertTrue(promise.future.isCancelled)
        XCTAssertThrowsError(try promise.future.wait()) { error in
            XCTAssertEqual(error as? FutureError, .cancelled)
        }
    }

    func testWorkCompletingACancelledFutureIsIgnoredSilently() {
        let reports = Recorder<String>()
        FutureDiagnostics.handler = { reports.append($0) }
        defer { FutureDiagnostics.handler = nil }
        let promise = Promise<Int>()
        promise.future.cancel()
        XCTAssertFalse(promise.succeed(1))
        XCTAssertTrue(reports.values.isEmpty, "the cancelled work finishing later is not a bug")
    }

    func testCancelAfterCompletionDoesNothing() throws {
        let promise = Promise<Int>()
        let handlerRuns = Counter()
        promise.setCancelHandler { handlerRuns.increment() }
        promise.succeed(1)
        promise.future.cancel()
        XCTAssertEqual(handlerRuns.value, 0)
        XCTAssertEqual(try promise.future.wait(), 1)
        XCTAssertFalse(promise.future.isCancelled)
    }

    func testHandlerSetAfterCancellationRunsAtOnce() {
        let promise = Promise<Int>()
        promise.future.cancel()
        let handlerRuns = Counter()
        promise.setCancelHandler { handlerRuns.increment() }
        XCTAssertEqual(handlerRuns.value, 1)
    }

    func testCancellingTheEndOfAChainCancelsTheSource() {
        let promise = Promise<Int>()
        let handlerRuns = Counter()
        promise.setCancelHandler { handlerRuns.increment() }
        let end = promise.future.map { $0 + 1 }.flatMap { Future(value: $0) }.recover { _ in 0 }.map { $0 }
        end.cancel()
        XCTAssertEqual(handlerRuns.value, 1)
        XCTAssertTrue(promise.future.isCancelled)
        XCTAssertThrowsError(try end.wait()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
    }

    func testCancellingAfterFlatMapCancelsTheInnerFuture() {
        let outer = Promise<Int>()
        let inner = Promise<Int>()
        let innerCancelled = Counter()
        inner.setCancelHandler { innerCancelled.increment() }
        let chained = outer.future.flatMap { _ in inner.future }
        outer.succeed(1)
        chained.cancel()
        XCTAssertEqual(innerCancelled.value, 1)
        XCTAssertTrue(inner.future.isCancelled)
    }

    /// Cancelling the future `recover` returned cancels its source, whose failure (`cancelled`) must not then run
    /// the recovery: it would start new work (a request sent again, say) that nobody waits for any more.
    func testCancellingARecoveredFutureDoesNotRunTheRecovery() {
        let source = Promise<Int>()
        let recoveries = Counter()
        let recovered = source.future.recover { _ -> Future<Int> in
            recoveries.increment()
            return Future(value: 1)
        }
        let recoveredByValue = Promise<Int>()
        let byValue = recoveredByValue.future.recover { _ -> Int in
            recoveries.increment()
            return 1
        }
        recovered.cancel()
        byValue.cancel()
        XCTAssertTrue(source.future.isCancelled)
        XCTAssertTrue(recoveredByValue.future.isCancelled)
        XCTAssertEqual(recoveries.value, 0)
        XCTAssertEqual((recovered.result.flatMap { try? $0.get() }), nil)
        // A source cancelled by someone else is still recovered, as any failure is.
        let other = Promise<Int>()
        let rescued = other.future.recover { _ in 7 }
        other.future.cancel()
        XCTAssertEqual(try? rescued.wait(), 7)
    }

    /// A future cancelled after its source succeeded, while the source's callbacks wait on their `receive(on:)`
    /// queue, does not start the next step: `flatMap` would send a request nobody waits for.
    func testCancellingAChainWhoseSourceSucceededDoesNotStartTheNextStep() {
        let queue = DispatchQueue(label: "FutureCancellationTests.held")
        queue.suspend()
        let source = Promise<Int>()
        let starts = Counter()
        let chained = source.future.receive(on: queue).flatMap { _ -> Future<Int> in
            starts.increment()
            return Future(value: 1)
        }

        source.succeed(1)
        chained.cancel()
        queue.resume()
        queue.sync {}

        XCTAssertEqual(starts.value, 0)
        XCTAssertTrue(chained.isCancelled)
    }

    func testCancellingZipAndAllCancelsTheirInputs() {
        let first = Promise<Int>()
        let second = Promise<Int>()
        first.future.zip(second.future).cancel()
        XCTAssertTrue(first.future.isCancelled)
        XCTAssertTrue(second.future.isCancelled)

        let promises = (0..<3).map { _ in Promise<Int>() }
        promises[0].succeed(0)
        Future.all(promises.map(\.future)).cancel()
        XCTAssertFalse(promises[0].future.isCancelled)
        XCTAssertTrue(promises[1].future.isCancelled)
        XCTAssertTrue(promises[2].future.isCancelled)
    }

    func testCancellingAResolvedFutureDoesNothing() throws {
        let future = Future(value: 3)
        future.cancel()
        XCTAssertEqual(try future.wait(), 3)
    }
}

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

    /// A second `setCancelHandler` replaces the first: cancelling runs the last one set, once; the one it replaced
    /// never runs, and is released at once.
    func testTheLastCancelHandlerSetIsTheOneThatRuns() {
        // Given
        let promise = Promise<Int>()
        let events = Recorder<String>()
        do {
            let probe = ReleaseProbe { events.append("first released") }
            promise.setCancelHandler {
                _ = probe
                events.append("first ran")
            }
        }
        // When
        promise.setCancelHandler { events.append("second ran") }
        events.append("replaced")
        promise.future.cancel()
        promise.future.cancel()
        // Then
        XCTAssertEqual(events.values, ["first released", "replaced", "second ran"])
    }

    /// A cancel handler that another replaces is released outside the future's lock: what it held may use the future
    /// as it goes (a token that cancels the future when it is freed) instead of waiting for a lock its own thread holds.
    func testAReplacedCancelHandlerIsReleasedOutsideTheFuturesLock() {
        // Given: a handler holding the last reference to an object that reads the future when it is freed
        let promise = Promise<Int>()
        let future = promise.future
        let readTheFuture = Recorder<Bool>()
        do {
            let probe = ReleaseProbe {
                // Read on another thread: on this one, a lock still held would hang the test instead of failing it.
                let read = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    _ = future.isCompleted
                    read.signal()
                }
                readTheFuture.append(read.wait(timeout: .now() + 5) == .success)
            }
            promise.setCancelHandler { _ = probe }
        }
        // When
        promise.setCancelHandler {}
        // Then
        XCTAssertEqual(readTheFuture.values, [true], "the future's lock was free while the old handler was released")
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

    /// As for `flatMap`: a `map` stage cancelled after its source succeeded, while the source's callbacks wait on their
    /// `receive(on:)` queue, does not run its transform (a decode of a body nobody waits for, a side effect of the
    /// caller's), nor does `decoded(toType:)`, which maps.
    func testCancellingAMapWhoseSourceSucceededDoesNotRunTheTransform() {
        // Given: a map and a decode on a source whose callbacks wait on a suspended queue
        let queue = DispatchQueue(label: "FutureCancellationTests.held")
        queue.suspend()
        let source = Promise<Int>()
        let body = Promise<Data>()
        let transforms = Counter()
        let mapped = source.future.receive(on: queue).map { value -> Int in
            transforms.increment()
            return value + 1
        }
        let decoded = body.future.receive(on: queue).map { data -> Data in
            transforms.increment()
            return data
        }.decoded(toType: [Int].self)

        // When: the sources succeed, then the ends of the chains are cancelled before the queue delivers
        source.succeed(1)
        body.succeed(Data("[1]".utf8))
        mapped.cancel()
        decoded.cancel()
        queue.resume()
        queue.sync {}

        // Then
        XCTAssertEqual(transforms.value, 0, "no transform ran for a cancelled stage")
        XCTAssertTrue(mapped.isCancelled)
        XCTAssertEqual(error(of: mapped) as? FutureError, .cancelled)
        XCTAssertEqual(error(of: decoded) as? FutureError, .cancelled)
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

    /// `zip` fails as soon as either input fails, and then cancels the other, as a task group cancels its other tasks
    /// when one throws: its work is stopped before anyone hears of the failure. Either side may fail first.
    func testZipCancelsTheOtherInputWhenOneFails() {
        for failingSide in ["left", "right"] {
            // Given
            let left = Promise<Int>()
            let right = Promise<String>()
            let events = Recorder<String>()
            left.setCancelHandler { events.append("left cancelled") }
            right.setCancelHandler { events.append("right cancelled") }
            let zipped = left.future.zip(right.future)
            zipped.observe { _ in events.append("observed") }
            // When
            if failingSide == "left" { left.fail(TestError(1)) } else { right.fail(TestError(1)) }
            // Then
            XCTAssertThrowsError(try zipped.wait(timeout: 0)) { XCTAssertEqual($0 as? TestError, TestError(1)) }
            let other = failingSide == "left" ? "right" : "left"
            XCTAssertEqual(events.values, ["\(other) cancelled", "observed"], failingSide)
            XCTAssertEqual(failingSide == "left" ? right.future.isCancelled : left.future.isCancelled, true)
            XCTAssertFalse(zipped.isCancelled, "it failed with its input's error")
        }
    }

    /// `all` fails with the first error and then cancels every input still pending (an input that already succeeded
    /// keeps its value), before anyone hears of the failure.
    func testAllCancelsTheInputsStillPendingWhenOneFails() {
        // Given
        let promises = (0..<4).map { _ in Promise<Int>() }
        let events = Recorder<String>()
        for (index, promise) in promises.enumerated() {
            promise.setCancelHandler { events.append("\(index) cancelled") }
        }
        let all = Future.all(promises.map(\.future))
        all.observe { _ in events.append("observed") }
        promises[0].succeed(0)
        // When
        promises[2].fail(TestError(2))
        // Then
        XCTAssertThrowsError(try all.wait(timeout: 0)) { XCTAssertEqual($0 as? TestError, TestError(2)) }
        XCTAssertEqual(events.values, ["1 cancelled", "3 cancelled", "observed"])
        XCTAssertEqual(promises[0].future.result.flatMap { try? $0.get() }, 0)
        XCTAssertFalse(promises[2].future.isCancelled)
        XCTAssertFalse(promises[3].succeed(3), "its work was cancelled")
    }

    /// An input of `zip` or `all` that fails inside another future's cancellation (a cancel handler of your own cancels
    /// or fails it) still has the other inputs cancelled before anyone hears of the failure, as it has anywhere else.
    func testZipAndAllCancelTheOtherInputsFirstWhenOneFailsInsideACancellation() {
        for (combination, ending) in [("zip", "cancels"), ("zip", "fails"), ("all", "cancels"), ("all", "fails")] {
            // Given
            let failing = Promise<Int>()
            let other = Promise<Int>()
            let events = Recorder<String>()
            other.setCancelHandler { events.append("other cancelled") }
            let combined =
                combination == "zip"
                ? failing.future.zip(other.future).asVoid() : Future.all([failing.future, other.future]).asVoid()
            combined.observe { _ in events.append("observed") }
            let outer = Promise<Int>()
            outer.setCancelHandler {
                if ending == "cancels" { failing.future.cancel() } else { failing.fail(TestError(1)) }
            }
            // When
            outer.future.cancel()
            // Then
            XCTAssertEqual(events.values, ["other cancelled", "observed"], "\(combination): a handler that \(ending)")
            XCTAssertTrue(other.future.isCancelled, combination)
        }
    }

    /// The requests behind a `zip` and an `all` are cancelled on the network when another of them fails: a page that
    /// cannot be shown whole does not keep loading its other parts.
    func testTheOtherRequestsOfAFailedZipOrAllAreCancelled() {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        transport.stub(.get, "/broken", with: .status(500))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let slow = { connect.request(ClientFixtures.Endpoint(endpoint: "/slow")) }
        let broken = { connect.request(ClientFixtures.Endpoint(endpoint: "/broken")) }

        XCTAssertEqual(connectError(of: slow().zip(broken()))?.statusCode, 500)
        XCTAssertEqual(connectError(of: Future.all([slow(), broken()]))?.statusCode, 500)
        XCTAssertEqual(transport.cancelledRequests.map { $0.url?.path }, ["/slow", "/slow"])
    }

    func testCancellingAResolvedFutureDoesNothing() throws {
        let future = Future(value: 3)
        future.cancel()
        XCTAssertEqual(try future.wait(), 3)
    }
}

/// Runs `released` when it is freed.
private final class ReleaseProbe: Sendable {
    let released: @Sendable () -> Void

    init(released: @escaping @Sendable () -> Void) {
        self.released = released
    }

    deinit { released() }
}

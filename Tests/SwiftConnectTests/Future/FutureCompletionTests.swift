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

    /// A diagnostics handler that another replaces is released outside FutureDiagnostics' lock: what it held may read
    /// the handler as it goes, instead of waiting for a lock its own thread holds.
    func testAReplacedDiagnosticsHandlerIsReleasedOutsideTheLock() {
        // Given: a handler holding the last reference to an object that reads the handler when it is freed
        let readTheHandler = Recorder<Bool>()
        do {
            let probe = DiagnosticsReleaseProbe {
                // Read on another thread: on this one, a lock still held would hang the test instead of failing it.
                let read = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    _ = FutureDiagnostics.handler
                    read.signal()
                }
                readTheHandler.append(read.wait(timeout: .now() + 5) == .success)
            }
            FutureDiagnostics.handler = { _ in _ = probe }
        }
        // When
        FutureDiagnostics.handler = nil
        // Then
        XCTAssertEqual(readTheHandler.values, [true], "the lock was free while the old handler was released")
    }

    /// `complete` runs the callbacks already added before it returns, on its own thread, but one given a queue is only
    /// handed to the queue, as its documentation says.
    func testCompleteRunsCallbacksBeforeReturningExceptThoseGivenAQueue() {
        // Given: a callback on this thread and one on a queue held busy
        let queue = DispatchQueue(label: "FutureCompletionTests.busy")
        let busy = Gate()
        queue.async { busy.wait(timeout: 10) }
        let ran = Recorder<String>()
        let promise = Promise<Int>()
        promise.future.observe(on: queue) { _ in ran.append("on the queue") }
        promise.future.observe { _ in ran.append("here") }
        // When
        promise.complete(with: .success(1))
        // Then
        XCTAssertEqual(ran.values, ["here"])
        busy.open()
        XCTAssertTrue(ran.wait(forCount: 2))
        XCTAssertEqual(ran.values, ["here", "on the queue"])
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

/// Runs `released` when it is freed.
private final class DiagnosticsReleaseProbe: Sendable {
    let released: @Sendable () -> Void

    init(released: @escaping @Sendable () -> Void) {
        self.released = released
    }

    deinit { released() }
}

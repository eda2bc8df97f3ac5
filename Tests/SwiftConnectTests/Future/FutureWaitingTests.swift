import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// SwiftConnectTesting's waiting helpers: `wait(timeout:)`, `waitForResult(timeout:)`, `value(timeout:)`.
final class FutureWaitingTests: XCTestCase {
    // MARK: - The main thread

    /// A chain after `receive(on: .main)` completes on the main queue: waiting on the main thread must let that
    /// queue run, or the wait times out although the future has its result.
    func testWaitOnTheMainThreadForAFutureThatDeliversOnMain() throws {
        XCTAssertTrue(Thread.isMainThread)
        let promise = Promise<Int>()
        promise.succeed(6)
        // `map` after `receive(on: .main)` runs on the main queue, so `doubled` is pending until that queue runs.
        let doubled = promise.future.receive(on: .main).map { $0 * 2 }
        XCTAssertFalse(doubled.isCompleted)

        XCTAssertEqual(try doubled.wait(timeout: 5), 12)
    }

    func testWaitForResultOnTheMainThreadForAFutureThatDeliversOnMain() throws {
        let promise = Promise<Int>()
        let onMain = promise.future.receive(on: .main).map { $0 + 1 }
        DispatchQueue.global().async { promise.fail(TestError(4)) }

        let result = try onMain.waitForResult(timeout: 5)
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? TestError, TestError(4)) }
    }

    /// The usual case on the main thread: a future completed by another thread is seen as soon as it completes.
    func testWaitOnTheMainThreadForAFutureCompletedElsewhere() throws {
        let promise = Promise<String>()
        let gate = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            gate.wait()
            promise.succeed("done")
        }
        gate.signal()
        XCTAssertEqual(try promise.future.wait(timeout: 10), "done")
    }

    func testWaitOnTheMainThreadStillTimesOut() {
        let promise = Promise<Int>()
        XCTAssertThrowsError(try promise.future.receive(on: .main).wait(timeout: 0.01)) {
            XCTAssertTrue($0 is FutureTimeoutError)
        }
        promise.succeed(1)
    }

    /// Off the main thread nothing changes: the waiting thread blocks until the future completes.
    func testWaitOnABackgroundThread() {
        let promise = Promise<Int>()
        let waited = expectation(description: "wait returned")
        DispatchQueue.global().async {
            XCTAssertEqual(try? promise.future.map { $0 * 3 }.wait(timeout: 10), 21)
            waited.fulfill()
        }
        promise.succeed(7)
        wait(for: [waited], timeout: 10)
    }
}

extension FutureWaitingTests {
    /// Inside a block of the main queue the main queue cannot run again: the wait blocks, as it always did.
    func testWaitInsideABlockOfTheMainQueue() {
        let promise = Promise<Int>()
        let waited = expectation(description: "wait returned")
        DispatchQueue.main.async {
            DispatchQueue.global().async { promise.succeed(2) }
            let start = Date()
            XCTAssertEqual(try? promise.future.wait(timeout: 10), 2)
            XCTAssertLessThan(Date().timeIntervalSince(start), 5)
            waited.fulfill()
        }
        wait(for: [waited], timeout: 20)
    }
}

// MARK: - Timeouts that are not a number

extension FutureWaitingTests {
    /// `.nan` (say, a timeout computed from an unset value) gives up at once instead of waiting forever.
    func testWaitWithANaNTimeoutGivesUpAtOnce() {
        let promise = Promise<Int>()
        let waited = expectation(description: "wait returned")
        DispatchQueue.global().async {
            do {
                _ = try promise.future.wait(timeout: .nan)
                XCTFail("expected a timeout")
            } catch {
                XCTAssertTrue(error is FutureTimeoutError)
            }
            waited.fulfill()
        }
        wait(for: [waited], timeout: 10)
        promise.succeed(1)
    }

    func testWaitOnTheMainThreadWithANaNTimeoutGivesUpAtOnce() {
        let promise = Promise<Int>()
        XCTAssertThrowsError(try promise.future.receive(on: .main).wait(timeout: .nan)) {
            XCTAssertTrue($0 is FutureTimeoutError)
        }
        promise.succeed(1)
    }

    func testValueWithANaNTimeoutGivesUpAtOnce() async {
        let promise = Promise<Int>()
        let waiting = Task { try await promise.future.value(timeout: .nan) }
        let outcome = Promise<Result<Int, any Error>>()
        Task { outcome.succeed(await waiting.result) }
        // Bounded: a NaN deadline used to mean "never", and this wait would hang.
        let result = try? await outcome.future.value(timeout: 10)
        XCTAssertNotNil(result, "value(timeout: .nan) did not return")
        if let result {
            XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is FutureTimeoutError) }
        }
        waiting.cancel()
        promise.succeed(1)
    }

    /// The timer of `value(timeout:)` holds nothing once the wait is over: a wait of up to an hour that returns at once
    /// does not keep the value it returned (nor the timer's future) for that hour.
    func testValueWithATimeoutKeepsNothingOnceItReturns() async throws {
        let freed = Recorder<Void>()
        do {
            // Given: a wait for a future still pending when the wait begins
            let promise = Promise<TrackedValue>()
            let waiting = Task { try await promise.future.value(timeout: 3600) }
            await waitUntilObserved(promise.future)
            // When
            promise.succeed(TrackedValue { freed.append(()) })
            _ = try await waiting.value
        }
        // Then
        XCTAssertTrue(freed.wait(forCount: 1, timeout: 5), "the wait is over, yet something it made holds the value")
    }

    /// Returns once a callback waits on `future` (the wait under test has subscribed to it).
    private func waitUntilObserved<Value>(_ future: Future<Value>) async {
        while !(future.lock?.withLock({ future.holdsPendingCallbacks }) ?? true) { await Task.yield() }
    }

    /// Cancelling the task that awaits `value(timeout:)` cancels the request and throws its `ConnectError` of kind
    /// `.cancelled`, as `value` does: the helper's own wait was cancelled first and threw a `FutureError`.
    func testCancellingATaskAwaitingValueWithATimeoutThrowsTheRequestsCancellation() async throws {
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let future = connect.request(ClientFixtures.Endpoint())
        XCTAssertEqual(transport.requests.count, 1)
        let started = Promise<Void>()
        let waiting = Task {
            started.succeed(())
            return try await future.value(timeout: 30)
        }
        try await started.future.value
        // Awaiting by now (a marker call's attempt timeout of 0.2 s passes first), so that the task is cancelled
        // while it waits, where the helper's own wait answered first.
        let marker = Connect(
            transport: ManualTransport(),
            retryPolicy: RetryPolicy(maxAttempts: 1, attemptTimeout: 0.2, clock: ImmediateRetryClock()))
        _ = try? await marker.request(ClientFixtures.Endpoint(timeout: 10)).value
        waiting.cancel()
        let result = await waiting.result
        XCTAssertThrowsError(try result.get()) { error in
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        }
        XCTAssertEqual(transport.cancellations.value, 1, "the request was cancelled")
    }
}

/// A value that says when it is freed.
private final class TrackedValue: Sendable {
    let freed: @Sendable () -> Void

    init(freed: @escaping @Sendable () -> Void) {
        self.freed = freed
    }

    deinit { freed() }
}

import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// `timeout(after:on:)`: fails with `timedOut` and cancels the future when it is late; otherwise passes its result
/// on and disarms the timer at once. Timers that must fire are tiny on a promise never completed; timers that must
/// not fire are 60 s, and the future completes first: no outcome depends on the machine's speed.
final class FutureTimeoutTests: XCTestCase {
    /// Handlers of the test schedulers run here, one at a time.
    private let handlers = DispatchQueue(label: "FutureTimeoutTests.handlers")

    func testALateFutureTimesOutAndIsCancelledBeforeAnyoneHearsOfIt() throws {
        let promise = Promise<Int>()
        let events = Recorder<String>()
        promise.setCancelHandler { events.append("upstream cancelled") }
        let limited = promise.future.timeout(after: 0.01)
        limited.observe { _ in events.append("observed") }

        let error = try XCTUnwrap(error(of: limited) as? FutureError)
        XCTAssertEqual(error, .timedOut(after: 0.01))
        XCTAssertTrue(error.description.contains("0.01"), error.description)
        XCTAssertTrue(promise.future.isCancelled, "the late work is cancelled")
        XCTAssertFalse(limited.isCancelled, "the returned future timed out; it was not cancelled")
        XCTAssertEqual(events.values, ["upstream cancelled", "observed"])
        XCTAssertFalse(promise.succeed(1), "the cancelled work completing later changes nothing")
    }

    func testTheEndOfAChainTimingOutCancelsTheSource() throws {
        let promise = Promise<Int>()
        let cancelled = expectation(description: "source cancelled")
        promise.setCancelHandler { cancelled.fulfill() }
        let limited = promise.future.map { $0 + 1 }.flatMap { Future(value: $0) }.timeout(after: 0.01)
        wait(for: [cancelled], timeout: 10)
        XCTAssertTrue(isTimedOut(error(of: limited)))
    }

    func testAResultFirstWinsAndDisarmsTheTimer() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let promise = Promise<Int>()
        let limited = promise.future.timeout(after: 60, on: nil, scheduler: scheduler)
        XCTAssertEqual(scheduler.pendingCount, 1, "armed")
        DispatchQueue.global().async { promise.succeed(7) }

        XCTAssertEqual(try limited.wait(), 7)
        XCTAssertEqual(scheduler.pendingCount, 0, "disarmed and released as the result arrived, not 60 s later")
        XCTAssertFalse(promise.future.isCancelled)
    }

    func testAFailureFirstWinsToo() {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let promise = Promise<Int>()
        let limited = promise.future.timeout(after: 60, on: nil, scheduler: scheduler)
        promise.fail(TestError(3))
        XCTAssertEqual(error(of: limited) as? TestError, TestError(3))
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    /// The timer's handler holds nothing strongly: once the result is in, what it captured is gone even though
    /// the returned future is still held.
    func testTheTimerKeepsNothingAliveOnceTheResultIsIn() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        weak var weakSource: Future<Int>?
        var limited: Future<Int>?
        do {
            let promise = Promise<Int>()
            weakSource = promise.future
            limited = promise.future.timeout(after: 60, on: nil, scheduler: scheduler)
            promise.succeed(1)
        }
        XCTAssertNil(weakSource, "the source is not held by the timer nor by the returned future")
        XCTAssertEqual(scheduler.pendingCount, 0)
        XCTAssertEqual(try limited?.wait(), 1)
    }

    /// Abandoned while pending, a future with a time limit and its source are freed at once, and the timer with
    /// them: nothing waits for the 60 s to pass.
    func testAnAbandonedPendingTimeoutIsFreedWithItsTimer() {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        weak var weakSource: Future<Int>?
        weak var weakLimited: Future<Int>?
        do {
            let promise = Promise<Int>()
            weakSource = promise.future
            let limited = promise.future.map { $0 }.timeout(after: 60, on: nil, scheduler: scheduler)
            weakLimited = limited
            XCTAssertEqual(scheduler.pendingCount, 1)
        }
        XCTAssertNil(weakLimited)
        XCTAssertNil(weakSource)
        XCTAssertEqual(scheduler.pendingCount, 0, "the deadline was disarmed when it was freed")
    }

    /// The timer is kept by the returned future: held alone, its source's producer gone, it still times out.
    func testTheReturnedFutureTimesOutWhenItsSourceIsAbandoned() {
        weak var weakSource: Future<Int>?
        let limited: Future<Int>
        // The timer's handler waits on a suspended queue: it runs only once the source is gone.
        let held = DispatchQueue(label: "FutureTimeoutTests.held")
        held.suspend()
        do {
            let promise = Promise<Int>()
            weakSource = promise.future
            limited = promise.future.timeout(after: 0.01, on: nil, scheduler: DeadlineScheduler(handlerQueue: held))
        }
        XCTAssertNil(weakSource)
        held.resume()
        XCTAssertTrue(isTimedOut(error(of: limited)))
    }

    /// Held alone, its source's producer gone, a future whose type has an error of its own times out in that type:
    /// a future of responses with the client's error of kind `timedOut`.
    func testAnAbandonedSourceOfResponsesTimesOutAsTheClientsError() throws {
        weak var weakSource: Future<ConnectResponse>?
        let limited: Future<ConnectResponse>
        let held = DispatchQueue(label: "FutureTimeoutTests.held")
        held.suspend()
        do {
            let promise = Promise<ConnectResponse>()
            weakSource = promise.future
            limited = promise.future.timeout(after: 0.01, on: nil, scheduler: DeadlineScheduler(handlerQueue: held))
        }
        XCTAssertNil(weakSource)
        held.resume()
        let error = try XCTUnwrap(error(of: limited) as? ConnectError, "\(String(describing: error(of: limited)))")
        XCTAssertEqual(error.kind, .timedOut)
    }

    /// A limit at every stage of a long chain: the result passes through all of them and disarms every timer.
    /// (`timeout(after:)` used to look up the whole chain above it for the error type of a timeout, each stage
    /// again: 20,000 stages took 29 s in a debug build. It now looks only when its time is up.)
    func testALimitAtEveryStageOfALongChainPassesTheResultAndDisarmsEveryTimer() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let promise = Promise<Int>()
        var limited = promise.future
        for _ in 0..<20_000 {
            // A day: no timer fires while the chain is built, however slow the machine.
            limited = limited.map { $0 + 1 }.timeout(after: 86_400, on: nil, scheduler: scheduler)
        }
        XCTAssertEqual(scheduler.pendingCount, 20_000, "a timer per stage")
        promise.succeed(0)
        XCTAssertEqual(try limited.wait(), 20_000)
        XCTAssertEqual(scheduler.pendingCount, 0, "every timer disarmed as the result passed")
    }

    func testCancellingTheReturnedFutureCancelsTheSourceAndTheTimer() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let promise = Promise<Int>()
        let handlerRuns = Counter()
        promise.setCancelHandler { handlerRuns.increment() }
        let limited = promise.future.timeout(after: 60, on: nil, scheduler: scheduler)
        limited.cancel()

        XCTAssertEqual(handlerRuns.value, 1)
        XCTAssertTrue(promise.future.isCancelled)
        XCTAssertTrue(limited.isCancelled)
        XCTAssertEqual(scheduler.pendingCount, 0)
        XCTAssertEqual(error(of: limited) as? FutureError, .cancelled)
    }

    func testALimitAlreadyOverTimesOutAtOnce() throws {
        for seconds in [0, -1, -.infinity, .nan] as [TimeInterval] {
            let scheduler = DeadlineScheduler(handlerQueue: handlers)
            let promise = Promise<Int>()
            let limited = promise.future.timeout(after: seconds, on: nil, scheduler: scheduler)
            let result = try XCTUnwrap(limited.result, "\(seconds): complete before timeout(after:) returns")
            XCTAssertThrowsError(try result.get()) { error in
                XCTAssertTrue(isTimedOut(error), "\(seconds)")
            }
            XCTAssertTrue(promise.future.isCancelled, "\(seconds)")
            XCTAssertEqual(scheduler.pendingCount, 0, "\(seconds): no timer")
        }
    }

    func testALimitAlreadyOverIsReportedAsZeroSoThatTheErrorEqualsItself() throws {
        // `timedOut(after: .nan)` is not equal to itself: a caller could not match the error it got.
        for seconds in [0, -0.0, -1, -.infinity, .nan] as [TimeInterval] {
            let scheduler = DeadlineScheduler(handlerQueue: handlers)
            let limited = Promise<Int>().future.timeout(after: seconds, on: nil, scheduler: scheduler)
            let error = try XCTUnwrap(error(of: limited) as? FutureError, "\(seconds)")
            XCTAssertEqual(error, .timedOut(after: 0), "\(seconds)")
            XCTAssertEqual(error, error, "\(seconds)")
            XCTAssertFalse(error.description.contains("nan"), error.description)
        }
    }

    func testARequestsFutureReportsALimitAlreadyOverAsZeroSeconds() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let limited = connect.request(ClientFixtures.Endpoint(endpoint: "/slow")).timeout(after: .nan)
        let error = try XCTUnwrap(error(of: limited) as? ConnectError)
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertTrue(error.message.contains("time limit of 0.0 s"), error.message)
    }

    func testACompleteFutureKeepsItsResultWhateverTheLimit() throws {
        for seconds in [0, -1, .nan, 0.001, 60, .infinity] as [TimeInterval] {
            XCTAssertEqual(try Future(value: 1).timeout(after: seconds).wait(), 1, "\(seconds)")
            let promise = Promise<Int>()
            promise.succeed(2)
            XCTAssertEqual(try promise.future.timeout(after: seconds).wait(), 2, "\(seconds)")
            XCTAssertFalse(promise.future.isCancelled)
        }
    }

    func testAnInfiniteLimitIsNoLimit() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let promise = Promise<Int>()
        let limited = promise.future.timeout(after: .infinity, on: nil, scheduler: scheduler)
        XCTAssertTrue(limited === promise.future, "the future itself, as documented")
        XCTAssertEqual(scheduler.pendingCount, 0)
        promise.succeed(4)
        XCTAssertEqual(try limited.wait(), 4)
    }

    func testTheTimeoutHappensOnTheGivenQueue() throws {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "FutureTimeoutTests.timer")
        queue.setSpecific(key: key, value: "timer")
        let promise = Promise<Int>()
        let seen = Recorder<String?>()
        promise.setCancelHandler { seen.append(DispatchQueue.getSpecific(key: key)) }
        // Held until the callback is added: a timer that fired first would leave it to run on this thread.
        queue.suspend()
        let limited = promise.future.timeout(after: 0.01, on: queue)
        let observed = DispatchSemaphore(value: 0)
        limited.observe { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            observed.signal()
        }
        queue.resume()
        XCTAssertTrue(isTimedOut(error(of: limited)))
        // The result can be read before the callback has run on the queue: wait for the callback itself.
        XCTAssertEqual(observed.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.values, ["timer", "timer"], "the cancellation and the callbacks ran on the queue")
    }

    func testCallbacksAfterReceiveOnStayOnTheQueue() throws {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "FutureTimeoutTests.receive")
        queue.setSpecific(key: key, value: "receive")
        let promise = Promise<Int>()
        let limited = promise.future.receive(on: queue).timeout(after: 60)
        let seen = Recorder<String?>()
        let observed = DispatchSemaphore(value: 0)
        limited.observe { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            observed.signal()
        }
        promise.succeed(1)
        XCTAssertEqual(try limited.wait(), 1)
        // `wait()` returns as soon as the result is there, which can be before the callback runs on the queue (a
        // ThreadSanitizer run in CI saw it): wait for the callback itself.
        XCTAssertEqual(observed.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.values, ["receive"])
    }

    /// A source cancelled by its owner before the limit, whose callbacks still wait on its busy ``Future/receive(on:)``
    /// queue when the limit passes: the returned future fails with that cancellation, not with a timeout that did not
    /// end anything.
    func testASourceCancelledBeforeTheLimitIsNotReportedAsTimedOutWhenItsQueueIsLate() throws {
        // Given: a source delivering on a suspended queue, limited by a timer whose expiry runs on a suspended queue
        let receiveQueue = DispatchQueue(label: "FutureTimeoutTests.late.receive")
        let timerQueue = DispatchQueue(label: "FutureTimeoutTests.late.timer")
        let handlerQueue = DispatchQueue(label: "FutureTimeoutTests.late.handlers")
        let scheduler = DeadlineScheduler(handlerQueue: handlerQueue)
        let promise = Promise<Int>()
        let source = promise.future.receive(on: receiveQueue)
        receiveQueue.suspend()
        timerQueue.suspend()
        let limited = source.timeout(after: 0.001, on: timerQueue, scheduler: scheduler)
        // A later deadline on the same scheduler: when it fires, the limit's handler has been handed to the serial
        // handler queue before this hop, which then queues its signal after the limit's expiry.
        let expired = DispatchSemaphore(value: 0)
        let marker = try XCTUnwrap(TransportDeadline(seconds: 0.002, scheduler: scheduler))
        marker.start { handlerQueue.async { timerQueue.async { expired.signal() } } }
        // When: the owner cancels the source, then the limit passes, then the source's queue delivers
        source.cancel()
        timerQueue.resume()
        XCTAssertEqual(expired.wait(timeout: .now() + 10), .success)
        receiveQueue.resume()
        // Then
        let result = try limited.waitForResult(timeout: 10)
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
        withExtendedLifetime(marker) {}
    }

    /// The owner cancelling the source at the instant the limit passes, on either side of the instant the timer
    /// decides: the outcome is always one the two in turn would give. Cancelled while the timer works out its error,
    /// before it decides: the returned future fails with the owner's cancellation. Cancelled once the timer has
    /// decided, just before its own `cancel()` reaches the source: `timedOut`, as when the owner's cancel comes after
    /// (it then does nothing). Either way the source is cancelled, its work stopped once. (Made deterministic by a
    /// value type that runs the owner's `cancel()` when the timer asks how to report its error, or its cancellation.)
    /// The same whether the timer fires after the returned future started listening to the source or before: a
    /// limit already over expires at once, before it listens, as a 1 ms timer may on a loaded machine.
    func testAnOwnersCancellationAsTheLimitPassesHasAConsistentOutcome() throws {
        let interleavings: [(limit: TimeInterval, interrupted: FutureError, outcome: FutureError)] = [
            (0.001, .timedOut(after: 0), .cancelled), (0.001, .cancelled, .timedOut(after: 0.001)),
            (0, .timedOut(after: 0), .cancelled), (0, .cancelled, .timedOut(after: 0)),
        ]
        for (limit, interruptedReport, expected) in interleavings {
            // Given
            let scheduler = DeadlineScheduler(handlerQueue: handlers)
            let promise = Promise<OwnerCancelsMidReport>()
            let handlerRuns = Counter()
            promise.setCancelHandler { handlerRuns.increment() }
            let source = promise.future
            OwnerCancelsMidReport.interrupt(interruptedReport) { source.cancel() }
            // When
            let limited = source.timeout(after: limit, on: nil, scheduler: scheduler)
            // Then
            let error = try XCTUnwrap(limited.waitForResult(timeout: 10).failure as? FutureError)
            XCTAssertEqual(
                error, expected, "limit \(limit) s: the owner cancelled as the timer reported \(interruptedReport)")
            XCTAssertEqual(source.result?.failure as? FutureError, .cancelled)
            XCTAssertEqual(handlerRuns.value, 1)
            XCTAssertFalse(promise.succeed(OwnerCancelsMidReport()))
        }
    }

    /// A result and the timer arriving together, many times over on many threads: exactly one wins, and the
    /// outcome is consistent: the value with the source intact, or `timedOut` with the source cancelled. (Checked
    /// in a callback, which may be added after the returned future completed: the source is cancelled before the
    /// returned future fails.)
    func testAResultRacingTheTimerHasOneConsistentOutcome() {
        let scheduler = DeadlineScheduler()
        let outcomes = Recorder<(result: Result<Int, any Error>, source: Result<Int, any Error>?)>()
        let callbacks = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let promise = Promise<Int>()
            let limited = promise.future.timeout(after: 0.000_1, on: nil, scheduler: scheduler)
            callbacks.enter()
            limited.observe { result in
                outcomes.append((result, promise.future.result))
                callbacks.leave()
            }
            // Every other future completes only after the wait: those certainly time out.
            if index.isMultiple(of: 2) { promise.completeIfPending(with: .success(index)) }
            _ = try? limited.waitForResult(timeout: 10)
            promise.completeIfPending(with: .success(index))
        }
        XCTAssertEqual(callbacks.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(outcomes.values.count, 200, "each returned future completed exactly once")
        for outcome in outcomes.values {
            switch outcome.result {
            case .success(let value):
                guard case .success(let sourceValue)? = outcome.source else {
                    return XCTFail("the value won, yet the source is \(String(describing: outcome.source))")
                }
                XCTAssertEqual(sourceValue, value)
            case .failure(let error):
                XCTAssertTrue(isTimedOut(error))
                guard case .failure(let sourceError)? = outcome.source else {
                    return XCTFail("the timeout won, yet the source is \(String(describing: outcome.source))")
                }
                XCTAssertEqual(sourceError as? FutureError, .cancelled)
            }
        }
        // A timer that fired was forgotten as it fired; every other one was disarmed by its result.
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    // MARK: requests

    /// As documented: a request that does not answer in time fails with `timedOut`, and its network task (here,
    /// the fake transport's pending answer) is cancelled.
    func testARequestThatTakesTooLongIsCancelled() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let limited = connect.request(ClientFixtures.Endpoint(endpoint: "/slow")).timeout(after: 0.01)
        let error = try XCTUnwrap(error(of: limited) as? ConnectError, "a request's future times out as ConnectError")
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertNil(error.request, "a future's timeout has no request")
        XCTAssertNil(error.underlyingError, "nothing failed on the network: a retry policy does not retry it")
        XCTAssertTrue(error.message.contains("0.01"), error.message)
        XCTAssertEqual(transport.cancelledRequests.map { $0.url?.path }, ["/slow"])
    }
}

extension FutureTimeoutTests {
    /// The timeout is reported as the chain reports a cancellation when it fires: a chain that went on to follow a
    /// request (a token first, then the call) times out as the client's error, not as `FutureError`.
    func testAChainThatFollowsARequestByThenTimesOutAsTheClientsError() throws {
        let transport = FakeTransport()
        transport.stub(.get, "/slow", with: .never)
        let connect = Connect(transport: transport, retryPolicy: nil)
        let token = Promise<String>()
        // The timer's handler waits on a suspended queue: it runs only once the chain follows the request.
        let held = DispatchQueue(label: "FutureTimeoutTests.held")
        held.suspend()
        let limited = token.future.flatMap { _ in connect.request(ClientFixtures.Endpoint(endpoint: "/slow")) }
            .timeout(after: 0.01, on: nil, scheduler: DeadlineScheduler(handlerQueue: held))
        token.succeed("t")
        held.resume()
        let error = try XCTUnwrap(error(of: limited) as? ConnectError, "\(String(describing: error(of: limited)))")
        XCTAssertEqual(error.kind, .timedOut)
        XCTAssertEqual(transport.cancelledRequests.map { $0.url?.path }, ["/slow"])
    }
}

/// Whether `error` is the failure of `timeout(after:)` on a future that is not a request's (any limit, NaN too).
private func isTimedOut(_ error: (any Error)?) -> Bool {
    if case .timedOut? = error as? FutureError { return true }
    return false
}

/// A value whose futures report a ``FutureError`` through ``FutureErrorReporting``, running an owner's `cancel()` the
/// first time the report of a given error is asked for: the instant the timer of `timeout(after:)` works out its
/// error, or cancels the source.
private struct OwnerCancelsMidReport: FutureErrorReporting, Sendable {
    private static let pending = Guarded<(error: FutureError, cancel: @Sendable () -> Void)?>(nil)

    /// Runs `cancel` when the report of `error` (of `timedOut`, whatever its limit) is next asked for.
    static func interrupt(_ error: FutureError, with cancel: @escaping @Sendable () -> Void) {
        pending.withLock { $0 = (error, cancel) }
    }

    static func reportedError(for error: FutureError) -> any Error {
        let cancel = pending.withLock { pending -> (@Sendable () -> Void)? in
            guard let armed = pending else { return nil }
            switch (armed.error, error) {
            case (.cancelled, .cancelled), (.timedOut, .timedOut): break
            default: return nil
            }
            pending = nil
            return armed.cancel
        }
        cancel?()
        return error
    }
}

extension Result {
    /// The error of a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

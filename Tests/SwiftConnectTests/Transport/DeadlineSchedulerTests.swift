import Dispatch
import XCTest

@testable import SwiftConnect

/// Request deadlines share one timer: each fires once, after its time, unless cancelled; nothing is kept.
final class DeadlineSchedulerTests: XCTestCase {
    /// Handlers run here, one at a time, in the order the scheduler hands them out.
    private let handlers = DispatchQueue(label: "DeadlineSchedulerTests.handlers")

    func testADeadlineFiresOnceAfterItsTime() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let fired = expectation(description: "fired")
        let started = DispatchTime.now()
        let deadline = try XCTUnwrap(TransportDeadline(seconds: 0.05, scheduler: scheduler))
        let firedAt = Recorder<DispatchTime>()
        deadline.start {
            firedAt.append(.now())
            fired.fulfill()
        }
        wait(for: [fired], timeout: 10)

        let elapsed = try XCTUnwrap(firedAt.values.first).uptimeNanoseconds - started.uptimeNanoseconds
        XCTAssertGreaterThanOrEqual(elapsed, 50_000_000, "never before its time")
        XCTAssertEqual(scheduler.pendingCount, 0, "a fired deadline is forgotten")
        // A second expectation fulfilment would fail the test: `fired` allows exactly one.
        withExtendedLifetime(deadline) {}
    }

    func testACancelledDeadlineNeverFiresAndReleasesItsHandler() throws {
        // The timer held back until the deadline is cancelled: a machine slower than its 20 ms changes nothing.
        let timerQueue = DispatchQueue(label: "DeadlineSchedulerTests.timer")
        timerQueue.suspend()
        let scheduler = DeadlineScheduler(handlerQueue: handlers, timerQueue: timerQueue)
        let fired = Recorder<String>()
        weak var captured: Token?
        let cancelled = try XCTUnwrap(TransportDeadline(seconds: 0.02, scheduler: scheduler))
        do {
            let token = Token()
            captured = token
            cancelled.start { withExtendedLifetime(token) { fired.append("cancelled") } }
        }
        cancelled.cancel()
        XCTAssertNil(captured, "cancelling releases the handler at once")
        timerQueue.resume()

        // A later deadline on the same serial handler queue: once it has fired, the earlier one would have too.
        let later = expectation(description: "later")
        let sentinel = try XCTUnwrap(TransportDeadline(seconds: 0.06, scheduler: scheduler))
        sentinel.start {
            fired.append("sentinel")
            later.fulfill()
        }
        wait(for: [later], timeout: 10)
        XCTAssertEqual(fired.values, ["sentinel"])
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testAnEarlierDeadlineAddedLaterRearmsTheTimer() throws {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let fired = Recorder<String>()
        let early = expectation(description: "early")
        let long = try XCTUnwrap(TransportDeadline(seconds: 600, scheduler: scheduler))
        long.start { fired.append("long") }
        let short = try XCTUnwrap(TransportDeadline(seconds: 0.05, scheduler: scheduler))
        short.start {
            fired.append("short")
            early.fulfill()
        }

        // Then: the timer armed for 600 s was moved forward; the long deadline is still waiting.
        wait(for: [early], timeout: 10)
        XCTAssertEqual(fired.values, ["short"])
        XCTAssertEqual(scheduler.pendingCount, 1)
        long.cancel()
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testManyDeadlinesFireInTimeOrderAndDroppedOnesAreForgotten() throws {
        // The timer held back while the deadlines are made and half of them dropped (10 to 100 ms: a slow loop would
        // see some fire before it was done).
        let timerQueue = DispatchQueue(label: "DeadlineSchedulerTests.timer")
        timerQueue.suspend()
        let scheduler = DeadlineScheduler(handlerQueue: handlers, timerQueue: timerQueue)
        let fired = Recorder<Int>()
        let all = expectation(description: "all fired")
        all.expectedFulfillmentCount = 5
        var kept: [(index: Int, time: DispatchTime)] = []
        var deadlines: [TransportDeadline] = []
        for index in (0..<10).reversed() {
            let deadline = try XCTUnwrap(TransportDeadline(seconds: 0.01 * Double(index + 1), scheduler: scheduler))
            deadline.start {
                fired.append(index)
                all.fulfill()
            }
            // Every other one is dropped: releasing a deadline cancels it.
            if index.isMultiple(of: 2) {
                kept.append((index, deadline.time))
                deadlines.append(deadline)
            }
        }
        XCTAssertEqual(scheduler.pendingCount, 5)
        timerQueue.resume()
        wait(for: [all], timeout: 10)
        // In the order of their times (on a busy machine, a loop step slower than 10 ms swaps two neighbours' times;
        // a timer firing late finds several expired at once, and hands them out in that order too).
        XCTAssertEqual(fired.values, kept.sorted { $0.time < $1.time }.map(\.index))
        XCTAssertEqual(Set(fired.values), [0, 2, 4, 6, 8])
        XCTAssertEqual(scheduler.pendingCount, 0)
        withExtendedLifetime(deadlines) {}
    }

    func testDeadlinesExpiredTogetherAreHandedOutInTimeOrder() {
        let scheduler = DeadlineScheduler(handlerQueue: handlers)
        let fired = Recorder<Int>()
        let all = expectation(description: "all fired")
        all.expectedFulfillmentCount = 20
        // Twenty deadlines a nanosecond apart, added latest first: the timer, armed for the earliest, finds them all
        // (or nearly all) expired when it fires. However the fires split them, each hands out its own in time order.
        let keys = (0..<20).map { _ in Token() }
        let base = DispatchTime.now().uptimeNanoseconds + 50_000_000
        for index in (0..<20).reversed() {
            scheduler.add(ObjectIdentifier(keys[index]), at: DispatchTime(uptimeNanoseconds: base + UInt64(index))) {
                fired.append(index)
                all.fulfill()
            }
        }
        wait(for: [all], timeout: 10)
        XCTAssertEqual(fired.values, Array(0..<20))
        withExtendedLifetime(keys) {}
    }

    func testDeadlinesFromManyThreadsAllFireExactlyOnce() throws {
        let scheduler = DeadlineScheduler()
        let count = 400
        let all = expectation(description: "all fired")
        all.expectedFulfillmentCount = count
        let deadlines = Protected<[TransportDeadline]>([])
        DispatchQueue.concurrentPerform(iterations: count) { index in
            guard let deadline = TransportDeadline(seconds: 0.001 * Double(index % 40 + 1), scheduler: scheduler) else {
                return
            }
            deadline.start { all.fulfill() }
            deadlines.withLock { $0.append(deadline) }
        }
        wait(for: [all], timeout: 30)
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testNonPositiveOrInfiniteTimeoutsMakeNoDeadline() {
        XCTAssertNil(TransportDeadline(seconds: 0))
        XCTAssertNil(TransportDeadline(seconds: -1))
        XCTAssertNil(TransportDeadline(seconds: .infinity))
        XCTAssertNil(TransportDeadline(seconds: .nan))
        XCTAssertNotNil(
            TransportDeadline(seconds: .greatestFiniteMagnitude), "huge timeouts are capped, not overflowed")
    }
}

import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Observers: each runs exactly once, in order, on a documented thread.
final class FutureObserverTests: XCTestCase {
    func testObserversBeforeAndAfterCompletionEachRunExactlyOnce() {
        let promise = Promise<Int>()
        let before = Counter()
        let after = Counter()
        for _ in 0..<10 { promise.future.observe { _ in before.increment() } }
        promise.succeed(1)
        for _ in 0..<10 { promise.future.observe { _ in after.increment() } }
        promise.future.cancel()  // a completed future ignores cancel: no extra calls
        XCTAssertEqual(before.value, 10)
        XCTAssertEqual(after.value, 10)
    }

    func testObserversRunInRegistrationOrder() {
        let promise = Promise<Int>()
        let order = Recorder<Int>()
        for index in 0..<5 { promise.future.observe { _ in order.append(index) } }
        promise.succeed(0)
        XCTAssertEqual(order.values, [0, 1, 2, 3, 4])
    }

    func testObserversAddedConcurrentlyWithCompletionRunExactlyOnce() {
        for _ in 0..<100 {
            let promise = Promise<Int>()
            let calls = Counter()
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if index == 4 { promise.succeed(1) }
                promise.future.observe { _ in calls.increment() }
            }
            XCTAssertEqual(calls.value, 8)
        }
    }

    func testObserverAddingAnObserverDoesNotDeadlock() {
        let promise = Promise<Int>()
        let inner = Counter()
        promise.future.observe { _ in
            promise.future.observe { _ in inner.increment() }
            promise.future.map { $0 + 1 }.observe { _ in inner.increment() }
        }
        promise.succeed(1)
        XCTAssertEqual(inner.value, 2)

        let resolved = Future(value: 1)
        resolved.observe { _ in resolved.observe { _ in inner.increment() } }
        XCTAssertEqual(inner.value, 3)
    }

    func testCallbackRunsOnTheCompletingThread() {
        let promise = Promise<Int>()
        let queue = DispatchQueue(label: "completer")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "completer")
        let seen = Recorder<String?>()
        let done = expectation(description: "observed")
        promise.future.map { $0 * 2 }.observe { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            done.fulfill()
        }
        queue.async { promise.succeed(1) }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["completer"])
    }

    func testCallbackOnACompletedFutureRunsAtOnceOnTheCallingThread() {
        let ran = Counter()
        Future(value: 1).observe { _ in ran.increment() }
        XCTAssertEqual(ran.value, 1, "ran synchronously, before observe returned")
    }

    func testObserveOnQueueRunsThere() {
        let queue = DispatchQueue(label: "chosen")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "chosen")
        let done = expectation(description: "observed")
        let seen = Recorder<String?>()
        Future(value: 1).observe(on: queue) { _ in
            seen.append(DispatchQueue.getSpecific(key: key))
            done.fulfill()
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["chosen"])
    }

    func testReceiveOnMovesTheRestOfTheChainToTheQueue() {
        let queue = DispatchQueue(label: "receiver")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "receiver")
        let done = expectation(description: "observed")
        let seen = Recorder<String?>()
        Future(value: 1).receive(on: queue).map { value -> Int in
            seen.append(DispatchQueue.getSpecific(key: key))
            return value
        }.observe { _ in done.fulfill() }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["receiver"])
    }

    /// A combination is chained after its inputs: `zip` after `receive(on:)` delivers on the queue as `map` does,
    /// wherever the other input completes; `all`, `allSettled` and `race` do when every input has that queue.
    func testCombinatorsAfterReceiveOnDeliverOnTheQueue() {
        let queue = DispatchQueue(label: "receiver")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "receiver")
        let seen = Recorder<String>()
        let done = expectation(description: "observed")
        done.expectedFulfillmentCount = 5
        func record(_ name: String) -> @Sendable (Any) -> Void {
            { _ in
                seen.append("\(name): \(DispatchQueue.getSpecific(key: key) ?? "elsewhere")")
                done.fulfill()
            }
        }
        let first = Promise<Int>()
        let second = Promise<Int>()
        let other = Promise<Int>()
        let inputs = [first.future.receive(on: queue), second.future.receive(on: queue)]
        first.future.receive(on: queue).zip(other.future).observe(record("zip"))
        Future.all(inputs).observe(record("all"))
        Future.allSettled(inputs).observe(record("allSettled"))
        Future.race(inputs).observe(record("race"))
        let settled = Future.allSettled(inputs)
        // Inputs on different queues (or none) share none: the completing thread delivers
        Future.all([first.future.receive(on: queue), other.future]).observe(record("mixed"))

        first.succeed(1)
        second.succeed(2)
        // The queue has delivered the first two: the last input of `mixed` completes on this thread
        queue.sync {}
        other.succeed(3)
        wait(for: [done], timeout: 5)
        // A callback added once the combination is complete runs on the queue too, not on the adding thread
        let late = expectation(description: "observed late")
        settled.observe { _ in
            seen.append("late: \(DispatchQueue.getSpecific(key: key) ?? "elsewhere")")
            late.fulfill()
        }
        wait(for: [late], timeout: 5)
        XCTAssertEqual(
            seen.values.sorted(),
            [
                "all: receiver", "allSettled: receiver", "late: receiver", "mixed: elsewhere", "race: receiver",
                "zip: receiver",
            ])
    }

    /// `send(…).receive(on: .main).map { … }.onSuccess { … }` built on a background thread: the queue may run the
    /// `map` before `onSuccess` is added; `onSuccess` must still run on the queue, not on the adding thread.
    func testCallbacksAddedAfterAStageAfterReceiveOnCompletedStillRunOnTheQueue() {
        let queue = DispatchQueue(label: "receiver")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "receiver")
        let promise = Promise<Int>()
        let source = promise.future.receive(on: queue)
        let stages: [Future<Int>] = [
            source.map { $0 + 1 }, source.mapError { $0 }, source.recover { _ in 0 },
            source.flatMap { Future(value: $0) }, source.map { $0 }.map { $0 + 1 },
        ]
        promise.succeed(1)
        for stage in stages { XCTAssertNoThrow(try stage.waitForResult().get()) }  // the stages completed
        let seen = Recorder<String?>()
        let done = expectation(description: "observed")
        done.expectedFulfillmentCount = stages.count * 2
        for stage in stages {
            stage.observe { _ in
                seen.append(DispatchQueue.getSpecific(key: key))
                done.fulfill()
            }
            stage.map { $0 }.observe { _ in
                seen.append(DispatchQueue.getSpecific(key: key))
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, Array(repeating: "receiver", count: stages.count * 2))
    }

    func testAFlatMapAfterReceiveOnDeliversOnTheQueueWhenItsInnerFutureCompletesElsewhere() {
        // Given: the inner future of the flatMap is completed by this thread, not the queue
        let queue = DispatchQueue(label: "receiver")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "receiver")
        let source = Promise<Int>()
        let inner = Promise<Int>()
        let seen = Recorder<String?>()
        let done = expectation(description: "observed")
        let started = expectation(description: "the flatMap's step ran")
        source.future.receive(on: queue)
            .flatMap { _ in
                started.fulfill()
                return inner.future
            }
            .map { $0 + 1 }
            .observe { _ in
                seen.append(DispatchQueue.getSpecific(key: key))
                done.fulfill()
            }
        // When
        source.succeed(1)
        wait(for: [started], timeout: 5)
        inner.succeed(2)
        // Then
        wait(for: [done], timeout: 5)
        XCTAssertEqual(seen.values, ["receiver"])
    }

    /// A command-line program never runs the main run loop: callbacks must not depend on it.
    func testCallbacksArriveWhileTheMainThreadIsBlocked() {
        XCTAssertTrue(Thread.isMainThread)
        let semaphore = DispatchSemaphore(value: 0)
        let promise = Promise<Int>()
        promise.future.map { $0 + 1 }.observe { _ in semaphore.signal() }
        DispatchQueue.global().async { promise.succeed(1) }
        XCTAssertEqual(semaphore.wait(timeout: .now() + 5), .success)
    }

    func testTapsSeeValuesAndErrorsAndReturnTheSameFuture() {
        let successes = Recorder<Int>()
        let failures = Counter()
        let always = Counter()
        let future = Future(value: 5)
        XCTAssertTrue(
            future.onSuccess { successes.append($0) }.onFailure { _ in failures.increment() }.always {
                always.increment()
            } === future)
        Future<Int>(error: TestError()).onSuccess { successes.append($0) }.onFailure { _ in failures.increment() }
            .always { always.increment() }
        XCTAssertEqual(successes.values, [5])
        XCTAssertEqual(failures.value, 1)
        XCTAssertEqual(always.value, 2)
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Futures at their edges: callbacks that add callbacks, cancellation and release of very long
/// chains, many threads at once, and chains that must be freed.
final class FutureEdgeCaseTests: XCTestCase {
    // MARK: ordering

    /// As documented: a callback added to a complete future runs at once, on the thread that adds it, also from
    /// inside another callback of the same future (so a callback may wait for what it adds).
    func testCallbackAddedInsideCallbackRunsAtOnce() {
        let promise = Promise<Int>()
        let future = promise.future
        let events = Recorder<String>()
        future.observe { _ in
            events.append("A")
            future.observe { _ in events.append("C") }
            events.append("C ran: \(events.values.contains("C"))")
            XCTAssertEqual(future.flatMap { Future(value: $0 + 1) }.result.flatMap { try? $0.get() }, 2)
        }
        future.observe { _ in events.append("B") }
        promise.succeed(1)
        XCTAssertEqual(events.values, ["A", "C", "C ran: true", "B"])
    }

    func testCallbacksRunInRegistrationOrder() {
        let promise = Promise<Int>()
        let events = Recorder<Int>()
        for i in 0..<100 { promise.future.observe { _ in events.append(i) } }
        promise.succeed(1)
        promise.future.observe { _ in events.append(100) }
        XCTAssertEqual(events.values, Array(0...100))
    }

    // MARK: exactly once

    func testConcurrentCompletionRunsCallbacksExactlyOnce() {
        for _ in 0..<200 {
            let promise = Promise<Int>()
            let count = Counter()
            let mapped = promise.future.map { $0 + 1 }
            mapped.observe { _ in count.increment() }
            promise.future.observe { _ in count.increment() }
            let winners = Counter()
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                if i % 3 == 0 { promise.future.cancel() }
                if promise.completeIfPending(with: .success(i)) { winners.increment() }
                promise.future.observe { _ in count.increment() }
            }
            XCTAssertLessThanOrEqual(winners.value, 1)
            XCTAssertEqual(count.value, 10)
        }
    }

    func testThrowingTransformsFail() {
        let p = Promise<Int>()
        let m = p.future.map { _ -> Int in throw TestError(1) }
        let f = p.future.flatMap { _ -> Future<Int> in throw TestError(2) }
        let r = Future<Int>(error: TestError(0)).recover { (_: any Error) -> Int in throw TestError(3) }
        p.succeed(1)
        XCTAssertEqual(m.result.flatMap { try? $0.get() }, nil)
        XCTAssertEqual((error(of: m) as? TestError)?.code, 1)
        XCTAssertEqual((error(of: f) as? TestError)?.code, 2)
        XCTAssertEqual((error(of: r) as? TestError)?.code, 3)
    }

    // MARK: combining

    func testAllOfEmptySucceedsAtOnce() {
        let all = Future<[Int]>.all([Future<Int>]())
        XCTAssertEqual(try all.result?.get(), [])
    }

    func testCancellingZipCancelsBoth() {
        let a = Promise<Int>()
        let b = Promise<String>()
        let zipped = a.future.zip(b.future)
        zipped.cancel()
        XCTAssertTrue(a.future.isCancelled)
        XCTAssertTrue(b.future.isCancelled)
    }

    func testCancellingAllCancelsEvery() {
        let promises = (0..<5).map { _ in Promise<Int>() }
        let all = Future<[Int]>.all(promises.map(\.future))
        promises[0].succeed(1)
        all.cancel()
        for p in promises.dropFirst() { XCTAssertTrue(p.future.isCancelled) }
    }

    func testCancellingDerivedCancelsUpstreamThroughFlatMapAndReceive() {
        let upstream = Promise<Int>()
        let handler = Counter()
        upstream.setCancelHandler { handler.increment() }
        let inner = Promise<Int>()
        let innerHandler = Counter()
        inner.setCancelHandler { innerHandler.increment() }
        let chain = upstream.future.map { $0 }.flatMap { _ in inner.future }.receive(on: .global()).asVoid()
        upstream.succeed(1)
        chain.cancel()
        XCTAssertEqual(innerHandler.value, 1)
        XCTAssertEqual(handler.value, 0)
        XCTAssertTrue(inner.future.isCancelled)
    }

    // MARK: async bridging

    func testTaskCancellationCancelsAwaitedFuture() async {
        let promise = Promise<Int>()
        let cancelled = expectation(description: "cancel handler")
        promise.setCancelHandler { cancelled.fulfill() }
        let task = Task { try await promise.future.value }
        task.cancel()
        await fulfillment(of: [cancelled], timeout: 5)
        let result = await task.result
        XCTAssertThrowsError(try result.get())
    }

    func testCancellingFutureCancelsAsyncTask() {
        let started = expectation(description: "started")
        let sawCancel = expectation(description: "task saw cancellation")
        let future = Future<Int> {
            started.fulfill()
            while !Task.isCancelled { await Task.yield() }
            sawCancel.fulfill()
            return 1
        }
        wait(for: [started], timeout: 5)
        future.cancel()
        wait(for: [sawCancel], timeout: 5)
        XCTAssertTrue(future.isCancelled)
    }

    // MARK: long chains

    func testHundredThousandMapsComplete() {
        let promise = Promise<Int>()
        var f = promise.future
        for _ in 0..<100_000 { f = f.map { $0 + 1 } }
        promise.succeed(0)
        XCTAssertEqual(try f.result?.get(), 100_000)
    }

    func testHundredThousandMapsCancelledAtTheEnd() {
        let promise = Promise<Int>()
        var f = promise.future
        for _ in 0..<100_000 { f = f.map { $0 + 1 } }
        f.cancel()
        XCTAssertTrue(promise.future.isCancelled)
    }

    func testHundredThousandMapsDroppedWhilePending() {
        weak var weakHead: Future<Int>?
        do {
            let promise = Promise<Int>()
            weakHead = promise.future
            var f = promise.future
            for _ in 0..<100_000 { f = f.map { $0 + 1 } }
        }
        XCTAssertNil(weakHead)
    }

    func testHundredThousandFlatMapsComplete() {
        let promise = Promise<Int>()
        var f = promise.future
        for _ in 0..<100_000 { f = f.flatMap { Future(value: $0 + 1) } }
        promise.succeed(0)
        XCTAssertEqual(try f.result?.get(), 100_000)
    }

    func testHundredThousandReceiveOnComplete() {
        let promise = Promise<Int>()
        let queue = DispatchQueue(label: "FutureEdgeCaseTests")
        var f = promise.future
        for _ in 0..<10_000 { f = f.receive(on: queue).map { $0 + 1 } }
        promise.succeed(0)
        XCTAssertEqual(try f.wait(timeout: 30), 10_000)
    }

    // MARK: memory

    func testChainIsFreedAfterCompletionAndCancellation() {
        for cancel in [false, true] {
            weak var weakToken: Token?
            weak var weakDerived: Future<Int>?
            let promise = Promise<Int>()
            do {
                let token = Token()
                weakToken = token
                let derived = promise.future.map { v -> Int in
                    _ = token
                    return v
                }
                .flatMap { v in Future(value: v) }
                .zip(Future(value: 1)).map { $0.0 }
                .recover { (_: any Error) in 0 }
                weakDerived = derived
                derived.observe { _ in _ = token }
                if cancel { derived.cancel() }
            }
            if !cancel { promise.succeed(1) }
            XCTAssertNil(weakToken, "cancel=\(cancel)")
            XCTAssertNil(weakDerived, "cancel=\(cancel)")
        }
    }

}

extension FutureEdgeCaseTests {
    func testFiveThousandMapsDroppedWhilePendingOnBackgroundThread() {
        let done = expectation(description: "dropped")
        Thread.detachNewThread {
            do {
                let promise = Promise<Int>()
                var f = promise.future
                for _ in 0..<5_000 { f = f.map { $0 + 1 } }
            }
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
    }
}

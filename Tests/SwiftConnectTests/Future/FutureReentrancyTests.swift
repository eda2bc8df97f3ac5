import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Callbacks that complete other promises: the callbacks of a promise completed inside a callback run nested in it,
/// before its `complete` returns, and a long line of such promises must not take the stack with it.
final class FutureReentrancyTests: XCTestCase {
    func testAPromiseCompletedInsideACallbackRunsItsCallbacksBeforeCompleteReturns() {
        // Given: an observer of `outer` that completes `inner`, which has an observer of its own
        let outer = Promise<Int>()
        let inner = Promise<Int>()
        let events = Recorder<String>()
        inner.future.observe { _ in events.append("inner's observer") }
        outer.future.observe { _ in
            inner.succeed(1)
            events.append("inner.succeed returned")
        }
        // When
        outer.succeed(0)
        // Then
        XCTAssertEqual(events.values, ["inner's observer", "inner.succeed returned"])
    }

    func testTenThousandPromisesEachCompletedByTheObserverOfTheOneBeforeDoNotOverflowTheStack() {
        // Given: 10,000 promises, each completed by an observer of the one before (it crashed at a few hundred)
        let count = 10_000
        let promises = (0..<count).map { _ in Promise<Int>() }
        let order = Recorder<Int>()
        for index in 0..<(count - 1) {
            let next = promises[index + 1]
            promises[index].future.observe { result in
                order.append(index)
                next.complete(with: result.map { $0 + 1 })
            }
        }
        promises[count - 1].future.observe { _ in order.append(count - 1) }
        // When: the first completes on a thread with the stack of an Apple secondary thread (512 KiB)
        let returned = expectation(description: "the first completion returned")
        let thread = Thread {
            promises[0].succeed(0)
            returned.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [returned], timeout: 60)
        // Then: every observer ran once, in order, before the first completion returned
        XCTAssertEqual(order.values, Array(0..<count))
        XCTAssertEqual(try promises[count - 1].future.result?.get(), count - 1)
    }
}

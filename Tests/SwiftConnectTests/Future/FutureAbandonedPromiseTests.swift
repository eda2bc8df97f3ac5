import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// A promise dropped before it completes its future, as ``Promise`` documents it: the future stays pending, its
/// callbacks never run and are freed with it, and what waits on it gets out by cancelling or a time limit.
final class FutureAbandonedPromiseTests: XCTestCase {
    func testTheCallbacksOfAnAbandonedFutureNeverRunAndAreFreedWithIt() {
        // Given: an observer holding an object, on the future of a promise that is then dropped
        let calls = Counter()
        weak var weakCaptured: Token?
        weak var weakFuture: Future<Int>?
        do {
            let promise = Promise<Int>()
            let captured = Token()
            weakCaptured = captured
            weakFuture = promise.future
            promise.future.observe { _ in
                _ = captured
                calls.increment()
            }
        }
        // Then
        XCTAssertNil(weakFuture, "nothing holds the future of a dropped promise")
        XCTAssertNil(weakCaptured, "its callback, and what the callback holds, are freed")
        XCTAssertEqual(calls.value, 0, "the callback never ran")
    }

    func testATaskAwaitingAnAbandonedFutureGetsOutByBeingCancelled() async {
        // Given: a task awaiting the future of a promise nothing completes
        let promise = Promise<Int>()
        let future = promise.future
        let cancelled = expectation(description: "the future is cancelled")
        promise.setCancelHandler { cancelled.fulfill() }
        let task = Task { try await future.value }
        // When
        task.cancel()
        await fulfillment(of: [cancelled], timeout: 10)
        // Then
        let result = await task.result
        XCTAssertThrowsError(try result.get()) { XCTAssertEqual($0 as? FutureError, .cancelled) }
    }
}

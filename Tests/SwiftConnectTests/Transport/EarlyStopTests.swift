import XCTest

@testable import SwiftConnect

/// The URLSession hop's latch between a streamed body that fails and the task it stops (Apple platforms write the
/// body from a thread that starts before the task is made): the stop runs once it is both asked for and armed.
final class EarlyStopTests: XCTestCase {
    func testAStopAskedForBeforeItIsArmedRunsWhenArmed() {
        // Given: the body failed before the task was made
        let stops = Counter()
        let latch = EarlyStop()
        latch.request()
        XCTAssertEqual(stops.value, 0)
        // When
        latch.arm(with: { stops.increment() })
        // Then
        XCTAssertEqual(stops.value, 1, "a body that failed early left the task waiting for it until its deadline")
    }

    func testAStopArmedFirstRunsWhenAskedForAndNotBefore() {
        let stops = Counter()
        let latch = EarlyStop()
        latch.arm(with: { stops.increment() })
        XCTAssertEqual(stops.value, 0, "arming alone stops nothing")
        latch.request()
        XCTAssertEqual(stops.value, 1)
    }

    /// Asked for and armed at the same time from two threads, many times over: the stop runs exactly once.
    func testAStopAskedForWhileItIsArmedRunsOnce() {
        for _ in 0..<500 {
            let stops = Counter()
            let latch = EarlyStop()
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 { latch.request() } else { latch.arm(with: { stops.increment() }) }
            }
            XCTAssertEqual(stops.value, 1)
        }
    }
}

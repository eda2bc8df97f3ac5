import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Callbacks of one future run in the order they were added, also when one is added in the instant between the
/// future's completion and the run of the callbacks added before it (by another callback of the chain, or by
/// another thread).
final class FutureCallbackOrderTests: XCTestCase {
    /// A callback of the source adds one to a stage the source has just completed, whose own callbacks have not run
    /// yet: the new one runs after them, and still before the adding callback goes on (it ran at once).
    func testACallbackAddedToAStageCompletedJustBeforeRunsAfterTheStagesEarlierCallbacks() {
        // Given: a stage with a callback, and a later callback of the source that adds one to the stage
        let promise = Promise<Int>()
        let stage = promise.future.map { $0 + 1 }
        let events = Recorder<String>()
        stage.observe { _ in events.append("first") }
        promise.future.observe { _ in
            XCTAssertTrue(stage.isCompleted)
            stage.observe { _ in events.append("second") }
            events.append("adder returns")
        }
        // When
        promise.succeed(1)
        // Then
        XCTAssertEqual(events.values, ["first", "second", "adder returns"])
    }

    /// An operator added to such a stage is a callback too: its transform runs after the stage's earlier callbacks,
    /// not before them, and still before the adding callback goes on.
    func testAnOperatorAddedToAStageCompletedJustBeforeRunsAfterTheStagesEarlierCallbacks() {
        // Given: a stage with a callback, and a later callback of the source that chains operators on the stage
        let promise = Promise<Int>()
        let stage = promise.future.map { $0 + 1 }
        let events = Recorder<String>()
        stage.observe { _ in events.append("first") }
        promise.future.observe { _ in
            _ = stage.map { events.append("map \($0)") }
            _ = stage.flatMap { value -> Future<Int> in
                events.append("flatMap \(value)")
                return Future(value: value)
            }
            events.append("adder returns")
        }
        // When
        promise.succeed(1)
        // Then
        XCTAssertEqual(events.values, ["first", "map 2", "flatMap 2", "adder returns"])
    }

    /// The same for the operators that act on a failure.
    func testARecoveryAddedToAStageFailedJustBeforeRunsAfterTheStagesEarlierCallbacks() {
        // Given
        let promise = Promise<Int>()
        let stage = promise.future.map { _ -> Int in throw TestError(1) }
        let events = Recorder<String>()
        stage.observe { _ in events.append("first") }
        promise.future.observe { _ in
            _ = stage.mapError { error in
                events.append("mapError")
                return error
            }
            _ = stage.recover { _ -> Int in
                events.append("recover")
                return 0
            }
            _ = stage.recover { _ -> Future<Int> in
                events.append("recover with a future")
                return Future(value: 0)
            }
            events.append("adder returns")
        }
        // When
        promise.succeed(1)
        // Then
        XCTAssertEqual(events.values, ["first", "mapError", "recover", "recover with a future", "adder returns"])
    }

    /// The same after ``Future/receive(on:)``: on a serial queue, the callbacks of the stage run in the order they
    /// were added.
    func testOnASerialReceiveQueueTheCallbacksOfAStageRunInTheOrderAdded() {
        // Given
        let promise = Promise<Int>()
        let queue = DispatchQueue(label: "FutureCallbackOrderTests.serial")
        let stage = promise.future.receive(on: queue)
        let events = Recorder<String>()
        let done = expectation(description: "both callbacks ran")
        done.expectedFulfillmentCount = 2
        stage.observe { _ in
            events.append("first")
            done.fulfill()
        }
        promise.future.observe { _ in
            stage.observe { _ in
                events.append("second")
                done.fulfill()
            }
        }
        // When
        promise.succeed(1)
        // Then
        wait(for: [done], timeout: 10)
        XCTAssertEqual(events.values, ["first", "second"])
    }

    /// Cancelling the end of a chain completes every stage first, then runs the callbacks: one that adds a callback
    /// to an earlier stage sees it complete, and the callback it adds runs after the ones that stage already had.
    func testACallbackAddedDuringCancellationToAnEarlierStageRunsAfterItsEarlierCallbacks() {
        // Given
        let promise = Promise<Int>()
        let events = Recorder<String>()
        promise.future.observe { _ in events.append("first") }
        let stage = promise.future.map { $0 + 1 }
        stage.observe { _ in
            promise.future.observe { _ in events.append("second") }
        }
        // When
        stage.cancel()
        // Then
        XCTAssertEqual(events.values, ["first", "second"])
    }

    /// Many threads: a callback added by a thread that has seen the stage complete runs after the callback added
    /// before the completion, on a serial receive queue, every time; each runs exactly once.
    func testCallbacksAddedFromOtherThreadsAfterCompletionRunAfterEarlierOnesOnASerialQueue() {
        let queue = DispatchQueue(label: "FutureCallbackOrderTests.stress")
        for round in 0..<300 {
            // Given
            let promise = Promise<Int>()
            let stage = promise.future.receive(on: queue)
            let events = Recorder<String>()
            let done = DispatchGroup()
            done.enter()
            stage.observe { _ in
                events.append("before")
                done.leave()
            }
            // When: this thread completes the source while others add callbacks as soon as they see the stage
            // complete (they wait for that event, yielding their core)
            let adders = DispatchGroup()
            for _ in 0..<3 {
                done.enter()
                DispatchQueue.global().async(group: adders) {
                    while !stage.isCompleted { sched_yield() }
                    stage.observe { _ in
                        events.append("after")
                        done.leave()
                    }
                }
            }
            promise.succeed(round)
            XCTAssertEqual(adders.wait(timeout: .now() + 10), .success, "round \(round)")
            // Then
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "round \(round)")
            XCTAssertEqual(events.values.first, "before", "round \(round)")
            XCTAssertEqual(events.values.count, 4, "round \(round)")
        }
    }
}

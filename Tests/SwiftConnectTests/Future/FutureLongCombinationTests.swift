import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Long chains built of combinations (`zip`, `all`, `allSettled`, `race`), such as a fold of many futures into one:
/// completing, cancelling and freeing them takes no stack frame per stage, as it does not for `map` chains.
final class FutureLongCombinationTests: XCTestCase {
    /// Enough to overflow the stack of ``onASmallStack(_:)`` at one frame per stage.
    private static let stages = 10_000

    /// Runs `body` on a thread with a 256 KiB stack, and waits for it.
    private func onASmallStack(_ body: @escaping @Sendable () -> Void) {
        let done = expectation(description: "ran on a small stack")
        let thread = Thread {
            body()
            done.fulfill()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        wait(for: [done], timeout: 60)
    }

    /// A fold of futures into one, each stage combining the one before with the next input.
    private enum Fold: CaseIterable {
        case zip, all, allSettled, race

        func stage(after previous: Future<Int>, _ input: Future<Int>) -> Future<Int> {
            switch self {
            case .zip: previous.zip(input).map { $0.0 + $0.1 }
            case .all: Future.all([previous, input]).map { $0.reduce(0, +) }
            case .allSettled: Future.allSettled([previous, input]).map { $0.map { (try? $0.get()) ?? 0 }.reduce(0, +) }
            case .race: Future.race([previous, input])
            }
        }
    }

    func testCancellingTheEndOfManyCombinationsCancelsTheSourceWithoutRecursion() {
        for fold in Fold.allCases {
            onASmallStack {
                // Given: a fold whose every input is pending
                let source = Promise<Int>()
                var inputs: [Promise<Int>] = []
                inputs.reserveCapacity(Self.stages)
                var end = source.future
                for _ in 0..<Self.stages {
                    let input = Promise<Int>()
                    inputs.append(input)
                    end = fold.stage(after: end, input.future)
                }
                // When
                end.cancel()
                // Then
                XCTAssertTrue(end.isCancelled, "\(fold)")
                XCTAssertTrue(source.future.isCancelled, "\(fold): the cancellation reached the first stage")
                XCTAssertTrue(inputs[0].future.isCancelled, "\(fold)")
                XCTAssertTrue(inputs[Self.stages - 1].future.isCancelled, "\(fold)")
            }
        }
    }

    func testManyCombinationsCompleteWithoutRecursion() {
        for fold in Fold.allCases where fold != .race {
            onASmallStack {
                // Given: a fold whose inputs are complete, waiting on its source
                let source = Promise<Int>()
                var end = source.future
                for _ in 0..<Self.stages { end = fold.stage(after: end, Future(value: 1)) }
                // When
                source.succeed(0)
                // Then
                XCTAssertEqual(end.result.flatMap { try? $0.get() }, Self.stages, "\(fold)")
            }
        }
    }
}

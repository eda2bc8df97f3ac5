import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

/// Long chains and retention: nothing overflows, nothing outlives its completion.
final class FutureMemoryTests: XCTestCase {
    /// Completes a 10,000-stage chain on a thread with a deliberately small stack (256 KiB):
    /// recursion per stage would overflow it.
    func testTenThousandStageMapChainCompletesIterativelyAndFreesEverything() throws {
        weak var weakFirst: Future<Int>?
        weak var weakLast: Future<Int>?
        let promise = Promise<Int>()
        let done = DispatchSemaphore(value: 0)
        let observed = Recorder<Int>()
        do {
            var future = promise.future.map { $0 + 1 }
            weakFirst = future
            for _ in 1..<10_000 { future = future.map { $0 + 1 } }
            weakLast = future
            future.observe { result in
                if case .success(let value) = result { observed.append(value) }
                done.signal()
            }
        }
        let returned = DispatchSemaphore(value: 0)
        let thread = Thread {
            promise.succeed(0)
            returned.signal()  // `succeed` has returned: the drain loop and its locals are gone
        }
        thread.stackSize = 256 * 1024
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(returned.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(observed.values, [10_000])
        XCTAssertNil(weakFirst)
        XCTAssertNil(weakLast)
    }

    func testTenThousandStageChainOnAResolvedValue() throws {
        var future = Future(value: 0)
        for _ in 0..<10_000 { future = future.map { $0 + 1 } }
        XCTAssertEqual(try future.wait(), 10_000)
    }

    func testTenThousandStageFlatMapChainCompletesIteratively() throws {
        let promise = Promise<Int>()
        var future = promise.future
        for _ in 0..<10_000 { future = future.flatMap { Future(value: $0 + 1) } }
        let done = DispatchSemaphore(value: 0)
        future.observe { _ in done.signal() }
        let thread = Thread { promise.succeed(0) }
        thread.stackSize = 256 * 1024
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try future.wait(), 10_000)
    }

    func testNothingInACompletedChainIsRetained() throws {
        weak var weakSource: Future<Int>?
        weak var weakMapped: Future<Int>?
        weak var weakInner: Future<Int>?
        weak var weakCaptured: Token?
        let promise = Promise<Int>()
        var last: Future<String>?
        do {
            let captured = Token()
            weakCaptured = captured
            weakSource = promise.future
            let mapped = promise.future.map { value -> Int in
                _ = captured
                return value + 1
            }
            weakMapped = mapped
            let innerPromise = Promise<Int>()
            weakInner = innerPromise.future
            let chained = mapped.flatMap { value -> Future<Int> in
                innerPromise.future.map { $0 + value }
            }
            last = chained.recover { _ in 0 }.map { "\($0)" }
            last?.onSuccess { _ in _ = captured }
            // Given a chain waiting on both an outer and an inner producer, when both complete…
            promise.succeed(1)
            XCTAssertFalse(last?.isCompleted ?? true)
            innerPromise.succeed(10)
        }
        // …then only the end of the chain, held by `last`, and the source, held by its promise, remain.
        XCTAssertEqual(try last?.wait(), "12")
        last = nil
        XCTAssertNil(weakMapped, "a completed stage is not retained by anything")
        XCTAssertNil(weakInner)
        XCTAssertNil(weakCaptured, "closures are released once they ran")
        _ = promise
        XCTAssertNotNil(weakSource, "the promise still holds its own future")
    }

    func testCompletedFutureReleasesItsCancelHandler() {
        weak var weakCaptured: Token?
        let promise = Promise<Int>()
        do {
            let captured = Token()
            weakCaptured = captured
            promise.setCancelHandler { _ = captured }
        }
        XCTAssertNotNil(weakCaptured)
        promise.succeed(1)
        XCTAssertNil(weakCaptured)
    }

    func testPendingChainWithoutProducerIsFreed() {
        weak var weakMapped: Future<Int>?
        do {
            let promise = Promise<Int>()
            let mapped = promise.future.map { $0 }.flatMap { Future(value: $0) }
            weakMapped = mapped
        }
        XCTAssertNil(weakMapped, "an abandoned pending chain has no retain cycle")
    }

    /// A request's body recovered by a future that never completes, abandoned once the request failed, is freed with
    /// what its observers hold: the recovery's future held the chain that held it (through the response body it
    /// carries), a cycle nothing broke.
    func testARequestsRecoveryThatNeverCompletesIsFreedWhenAbandoned() {
        final class Screen: Sendable {}
        weak var weakRecovered: Future<Data>?
        weak var weakScreen: Screen?
        let transport = ManualTransport()
        let connect = Connect(transport: transport, retryPolicy: nil)
        do {
            let screen = Screen()
            weakScreen = screen
            let recovered = connect.request(ClientFixtures.Endpoint()).recover { _ in Promise<Data>().future }
            recovered.observe { _ in withExtendedLifetime(screen) {} }
            weakRecovered = recovered
            XCTAssertTrue(transport.wait(forRequests: 1))
            transport.respond(to: 0, status: 500)
        }
        XCTAssertNil(weakRecovered, "the recovered future")
        XCTAssertNil(weakScreen, "what its observer holds")
    }

    /// The same for `zip`, `all` and `decoded(toType:)`: abandoned while pending, they and their inputs are freed.
    func testPendingZipAllAndDecodedWithoutProducerAreFreed() {
        weak var weakInput: Future<Int>?
        weak var weakZipped: Future<(Int, Int)>?
        weak var weakAll: Future<[Int]>?
        weak var weakBody: Future<Data>?
        weak var weakDecoded: Future<Int>?
        do {
            let first = Promise<Int>()
            let second = Promise<Int>()
            let body = Promise<Data>()
            weakInput = first.future
            let zipped = first.future.zip(second.future)
            weakZipped = zipped
            let all = Future.all([first.future, second.future])
            weakAll = all
            weakBody = body.future
            let decoded = body.future.decoded(toType: Int.self)
            weakDecoded = decoded
        }
        XCTAssertNil(weakZipped, "zip")
        XCTAssertNil(weakAll, "all")
        XCTAssertNil(weakInput, "an input of zip and all")
        XCTAssertNil(weakDecoded, "decoded")
        XCTAssertNil(weakBody, "the body decoded(toType:) decodes")
    }
}

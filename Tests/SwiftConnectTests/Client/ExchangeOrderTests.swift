import Dispatch
import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// `send(_:)` on an exchange whose `sent` future is complete checks and decodes at once, compiled into the caller
/// (``Exchange/completedOutcome``). Like `Future`'s operators, that shortcut must wait its turn: a future is complete
/// before its callbacks run (the completing thread may still be busy with another callback of the chain), and the
/// callbacks added to `sent` before (the client's in-flight bookkeeping) run before what is added after.
final class ExchangeOrderTests: XCTestCase {
    /// What `Connect.send(_:)` does with an exchange, step for step: the shortcut when `completedOutcome` has an
    /// outcome, else `finish`.
    private static func decode(_ exchange: Exchange, recordingIn events: Recorder<String>) -> Future<Int> {
        guard let outcome = exchange.completedOutcome else {
            return exchange.finish { response in
                events.append("decoded")
                return response.statusCode
            }
        }
        return Future.resolved(outcome) { response in
            events.append("decoded")
            return response.statusCode
        }
    }

    private func response() throws -> ConnectResponse {
        let request = ConnectRequest(url: try XCTUnwrap(URL(string: "https://example.com/a")))
        return try XCTUnwrap(ConnectResponse(request: request, statusCode: 200))
    }

    /// A callback of the transport's future, run after the one that completed `sent`, sends on: `sent` is complete,
    /// its own callback still waits for this one to return. The decoding runs after it, at once.
    func testTheShortcutRunsAfterTheCallbacksSentStillHasToRun() throws {
        // Given: `sent`, completed by a stage of the transport's future, with a callback added while it was pending
        let transport = Promise<ConnectResponse>()
        let sent = transport.future.map { $0 }
        let events = Recorder<String>()
        sent.observe { _ in events.append("tracked") }
        let exchange = Exchange(sent: sent, check: nil)
        let decoded = Protected<Future<Int>?>(nil)
        transport.future.observe { _ in
            XCTAssertTrue(sent.isCompleted)
            decoded.withLock { $0 = Self.decode(exchange, recordingIn: events) }
            events.append("sender goes on")
        }
        // When
        transport.succeed(try response())
        // Then
        XCTAssertEqual(events.values, ["tracked", "decoded", "sender goes on"])
        XCTAssertEqual(try decoded.withLock { $0 }?.wait(), 200)
    }

    /// The same when another thread completes `sent` and is held, by a callback the test controls, before it runs
    /// `sent`'s callbacks: the thread that sends runs them first, then decodes.
    func testTheShortcutRunsAfterTheCallbacksTheCompletingThreadHasNotRunYet() throws {
        // Given: the completing thread, held in a callback of the transport's future once `sent` is complete
        let transport = Promise<ConnectResponse>()
        let sent = transport.future.map { $0 }
        let events = Recorder<String>()
        sent.observe { _ in events.append("tracked") }
        let exchange = Exchange(sent: sent, check: nil)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        transport.future.observe { _ in
            held.signal()
            release.wait()
        }
        let completed = DispatchGroup()
        let response = try response()
        DispatchQueue.global().async(group: completed) { transport.succeed(response) }
        XCTAssertEqual(held.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(sent.isCompleted)
        // When: this thread sends while the completing thread is held
        let decoded = Self.decode(exchange, recordingIn: events)
        events.append("sender goes on")
        release.signal()
        XCTAssertEqual(completed.wait(timeout: .now() + 10), .success)
        // Then
        XCTAssertEqual(events.values, ["tracked", "decoded", "sender goes on"])
        XCTAssertEqual(try decoded.wait(), 200)
    }
}

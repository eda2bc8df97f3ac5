import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The last reference to a `URLSessionTransport` let go from a callback of its own request, on the thread that
/// delivers it (for a plain request, the session's delegate queue): the transport goes and invalidates its session
/// without waiting for a queue the releasing thread holds, and URLSession goes on serving other requests.
final class TransportReleaseTests: XCTestCase {
    private var server: LocalServer!
    /// Lets `/gated` answer: signalled once the test has put its callback on the request.
    private let gate = DispatchSemaphore(value: 0)

    override func setUpWithError() throws {
        server = try LocalServer.started()
        let gate = gate
        server.route("GET", "/gated") { _ in
            _ = gate.wait(timeout: .now() + 30)
            return .text("gated")
        }
        server.route("GET", "/hello") { _ in .text("hello") }
    }

    override func tearDown() {
        gate.signal()
        server.stop()
    }

    private func url(_ path: String) -> URL { server.baseURL.appendingPathComponent(path) }

    /// Sends `/gated` with `send` on a transport the test holds only in a box, puts a callback on it that takes the
    /// transport out of the box and lets it go, then lets the server answer. Returns whether the callback ran on the
    /// transport's delegate queue, and checks that the transport went, and that a new transport is still answered.
    private func releaseInACallback(
        _ send: (URLSessionTransport) -> Future<ConnectResponse>, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Bool {
        let box = Protected<URLSessionTransport?>(URLSessionTransport())
        weak let weakTransport = box.snapshot
        let delegateQueue = try XCTUnwrap(box.snapshot).session.delegateQueue
        let released = expectation(description: "the callback let the transport go")
        let onDelegateQueue = Protected(false)
        let sent = send(try XCTUnwrap(box.snapshot))
        sent.observe { _ in
            onDelegateQueue.withLock { $0 = OperationQueue.current === delegateQueue }
            // Taken out of the box first: this is the last reference the test holds, let go outside the box's lock.
            let transport = box.withLock { box in
                defer { box = nil }
                return box
            }
            _ = transport
            released.fulfill()
        }
        gate.signal()

        // A hang shows here, as a wait that does not end.
        wait(for: [released], timeout: 10)
        assertGoes({ weakTransport }, "the transport outlived its last reference", file: file, line: line)
        let after = URLSessionTransport().send(URLRequest(url: url("hello")))
        XCTAssertEqual(
            String(decoding: try after.wait(timeout: 30).data, as: UTF8.self), "hello", file: file, line: line)
        return onDelegateQueue.snapshot
    }

    func testLettingTheLastReferenceGoFromAPlainRequestsCallbackOnTheDelegateQueue() throws {
        let onDelegateQueue = try releaseInACallback { $0.send(URLRequest(url: self.url("gated"))) }
        XCTAssertTrue(onDelegateQueue, "the callback did not run where the response is delivered")
    }

    func testLettingTheLastReferenceGoFromAnExchangesCallback() throws {
        // With a size limit: through the core's exchange, on Linux on a short-lived session of the hop's own.
        _ = try releaseInACallback {
            $0.send(
                ConnectRequest(method: .get, url: self.url("gated")), transfer: TransferOptions(maxResponseBytes: 1_000)
            )
        }
    }

    func testLettingTheLastReferenceGoWhileItsRequestIsInFlight() throws {
        // The request's task holds the transport until it ends: the last reference goes in its completion handler,
        // on the session's delegate queue.
        weak var weakTransport: URLSessionTransport?
        var sent: Future<ConnectResponse>?
        do {
            let transport = URLSessionTransport()
            weakTransport = transport
            sent = transport.send(URLRequest(url: url("gated")))
        }
        gate.signal()
        XCTAssertEqual(String(decoding: try XCTUnwrap(sent).wait(timeout: 10).data, as: UTF8.self), "gated")
        assertGoes({ weakTransport }, "the transport outlived its request")
    }

    /// Waits (10 s at most) for `object` to be gone. Not at once: the callback that lets the transport go runs inside
    /// URLSession's completion handler, whose closure holds the transport until it returns, after the callback.
    private func assertGoes(
        _ object: @escaping () -> AnyObject?, _ message: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let gone = XCTNSPredicateExpectation(predicate: NSPredicate { _, _ in object() == nil }, object: nil)
        XCTAssertEqual(XCTWaiter().wait(for: [gone], timeout: 10), .completed, message, file: file, line: line)
    }
}

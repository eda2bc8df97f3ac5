import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `LocalServer.waitUntilIdle(timeout:)` with timeouts that are not a number.
final class LocalServerWaitingTests: XCTestCase {
    /// A NaN timeout (Dispatch reads `now() + .nan` as "never") gives up at once instead of waiting for ever.
    func testWaitUntilIdleWithANaNTimeoutDoesNotWaitForEver() throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        server.route("GET", "/busy") { _ in
            entered.signal()
            release.wait()
            return .status(204)
        }
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let answered = expectation(description: "answered")
        session.dataTask(with: server.baseURL.appendingPathComponent("busy")) { _, _, _ in answered.fulfill() }.resume()
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success)

        let returned = expectation(description: "waitUntilIdle returned")
        DispatchQueue.global().async {
            XCTAssertFalse(server.waitUntilIdle(timeout: .nan), "a request is in flight")
            returned.fulfill()
        }
        wait(for: [returned], timeout: 10)

        release.signal()
        wait(for: [answered], timeout: 10)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10))
    }
}

// MARK: - Stopping with a handler that never returns

extension LocalServerWaitingTests {
    /// A handler blocked on something the test never signals (a failed assertion skipped the signal) used to make
    /// `stop()`, and so `defer { server.stop() }`, wait for ever: the whole test run hung. It gives up after a grace
    /// period; the handler's connection is already closed.
    func testStopReturnsWhenAHandlerNeverReturns() throws {
        let server = try LocalServer.started()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        server.route("GET", "/stuck") { _ in
            entered.signal()
            release.wait()
            return .status(204)
        }
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let answered = expectation(description: "the client hears the connection close")
        session.dataTask(with: server.baseURL.appendingPathComponent("stuck")) { _, _, error in
            XCTAssertNotNil(error)
            answered.fulfill()
        }.resume()
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success)

        let stopped = expectation(description: "stop() returned")
        DispatchQueue.global().async {
            server.stop()
            stopped.fulfill()
        }
        wait(for: [stopped, answered], timeout: 30)
        release.signal()
    }
}

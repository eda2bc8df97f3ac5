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

import Dispatch
import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `waitUntilIdle` keeps its promise whatever happens to the statistics meanwhile.
final class LocalServerIdleWaitTests: XCTestCase {
    func testResettingTheStatisticsKeepsThoseWaitingForIdle() throws {
        // Given: a request in flight, held by its handler, and someone waiting for the server to be idle
        let server = try LocalServer.started()
        defer { server.stop() }
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        server.route("GET", "/held") { _ in
            entered.signal()
            _ = release.wait(timeout: .now() + 10)
            return .status(200)
        }
        let answered = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: server.baseURL.appendingPathComponent("held")) { _, _, _ in
            answered.signal()
        }.resume()
        XCTAssertEqual(entered.wait(timeout: .now() + 10), .success, "the request never reached the server")
        let waiter = try XCTUnwrap(server.idleWaiter(), "a request is in flight")
        // When: the statistics are reset while it waits, then the request ends
        server.resetStatistics()
        release.signal()
        // Then: the waiter hears that the server went idle
        XCTAssertEqual(waiter.wait(timeout: .now() + 10), .success, "resetStatistics() dropped the waiter")
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success)
    }
}

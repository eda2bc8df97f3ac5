import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

/// The queue's arrival order keeps no more than a bounded number of ids of requests that left it.
final class RequestQueueOrderTests: XCTestCase {
    /// Requests that wait in a paused queue and are cancelled (screens that come and go) left their ids in the order
    /// for ever, and each start scanned them: the order now stays within twice the waiting requests plus 64.
    func testCancelledWaitingRequestsDoNotGrowTheOrder() throws {
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let connect = Connect(
            transport: FakeTransport.answering(.json(string: "{}")), retryPolicy: nil, requestQueue: queue)
        queue.pause()
        let kept = connect.request(ClientFixtures.Endpoint())
        for _ in 0..<1_000 { connect.request(ClientFixtures.Endpoint()).cancel() }
        XCTAssertEqual(queue.pendingCount, 1)
        XCTAssertLessThanOrEqual(queue.arrivalOrderLength, 2 * queue.pendingCount + 64)
        queue.resume()
        XCTAssertNotNil(try kept.wait(timeout: 10), "the request that stayed still starts, first")
    }
}

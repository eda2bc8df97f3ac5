import SwiftConnect
import SwiftConnectAsyncHTTPClient
import SwiftConnectTesting
import XCTest

/// `AsyncHTTPClientTransport` against the transport contract (`TransportConformance`), with no exception.
final class AsyncHTTPClientConformanceTests: XCTestCase {
    func testAsyncHTTPClientTransportKeepsTheWholeContract() {
        let outcomes = TransportConformance.run { AsyncHTTPClientTransport() }

        XCTAssertEqual(outcomes.count, TransportConformance.checks.count)
        for outcome in outcomes {
            print(outcome)
            XCTAssertTrue(outcome.isAsExpected, outcome.description)
        }
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The "sub-second deadline" check holds a transport to the deadline from both sides: a transport that gives up at
/// once with `timedOut`, whatever the request's deadline, passed it, as the check bounded only how late it ended.
final class TransportConformanceDeadlineTests: XCTestCase {
    /// Fails every request with `timedOut` at once: a deadline read as zero.
    private struct ImpatientTransport: Transport {
        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            Future(error: ConnectError(.timedOut, message: "gave up at once"))
        }
    }

    func testATransportThatTimesOutAtOnceFailsTheSubSecondDeadlineCheck() {
        // When
        let outcomes = TransportConformance.run(only: ["sub-second deadline"]) { ImpatientTransport() }
        // Then
        XCTAssertEqual(outcomes.map(\.check), ["sub-second deadline"])
        let failure = outcomes.first?.failure
        XCTAssertNotNil(failure, "a transport that times out at once passed")
        XCTAssertTrue(failure?.contains("before it was due") == true, failure ?? "")
    }
}

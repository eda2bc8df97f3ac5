import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

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

    /// Times out only when no byte came for the request's timeout (URLSession's reading of `timeoutInterval`): the
    /// core's idle timeout in place of its deadline.
    private struct IdleTimeoutTransport: Transport {
        let inner = URLSessionTransport()

        func send(_ request: URLRequest) -> Future<ConnectResponse> {
            send(request, transfer: TransferOptions())
        }

        func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
            var request = request
            var transfer = transfer
            transfer.idleTimeout = request.timeoutInterval
            request.timeoutInterval = 60
            return inner.send(request, transfer: transfer)
        }
    }

    /// A server that goes silent cannot tell an idle timeout from the exchange's deadline; a body that keeps coming
    /// can: the idle timer never fires.
    func testATransportWhoseTimeoutIsAnIdleTimeoutFailsTheTricklingBodyCheck() {
        // When
        let outcomes = TransportConformance.run(only: ["deadline ends a trickling body"]) { IdleTimeoutTransport() }
        // Then
        XCTAssertEqual(outcomes.map(\.check), ["deadline ends a trickling body"])
        XCTAssertNotNil(outcomes.first?.failure, "a transport whose timeout is an idle timeout passed")
    }
}

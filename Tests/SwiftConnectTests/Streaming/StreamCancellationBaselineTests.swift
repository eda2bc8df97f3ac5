import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An event source is one call for `cancelAllRequests()`: its reconnections go on its first connection's count of
/// cancellations, so that one that lands while nothing of the source is in flight (a reconnection wait just over, its
/// task not yet resumed) still stops the next connection. The window itself is one task resumption, which no test
/// lands in without timing luck; these tests hold the piece the source relies on.
final class StreamCancellationBaselineTests: XCTestCase {
    private struct Feed: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/events" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    private func answering() -> FakeTransport {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: .stream([Data("data: a\n\n".utf8)], headers: ["Content-Type": "text/event-stream"]))
        return transport
    }

    /// A stream started on a count taken before a `cancelAllRequests()` is cancelled, nothing sent: the source's next
    /// connection after one that landed between its connections.
    func testAStreamOnAnEarlierCountIsCancelledUnsent() async throws {
        let transport = answering()
        let connect = Connect(transport: transport, retryPolicy: nil)
        let firstConnection = connect.inFlightCancellations
        connect.cancelAllRequests()

        let stream = connect.stream(
            Feed(), options: RequestOptions(), streaming: StreamingOptions(), startedAfter: firstConnection
        ) { _ in }

        do {
            _ = try await stream.response
            XCTFail("the stream started")
        } catch {
            XCTAssertEqual((error as? ConnectError)?.kind, .cancelled, "\(error)")
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }

    /// Without an earlier count, a stream goes on the count when it starts: a cancellation before it does not stop it.
    func testAStreamOnItsOwnCountIsNotStoppedByAnEarlierCancellation() async throws {
        let transport = answering()
        let connect = Connect(transport: transport, retryPolicy: nil)
        connect.cancelAllRequests()

        let stream = connect.stream(Feed(), options: RequestOptions(), streaming: StreamingOptions()) { _ in }

        let response = try await stream.response
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(transport.requests.count, 1)
        stream.cancel()
    }
}

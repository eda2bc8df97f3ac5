import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server's `retry:` sets the wait before reconnecting, within bounds: WHATWG takes only ASCII digits, and a huge
/// value (`retry: 99999999999`, or one past `Int`'s range) would make the source wait for ever. The wait it sets is
/// read from the iterator as the event arrives, without waiting it out.
final class EventSourceRetryBoundTests: XCTestCase {
    private struct Feed: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/events" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    /// The wait the iterator would take before its next reconnection after reading the first event of a stream
    /// that sends `text`, under `reconnection`.
    private func delay(
        after text: String, reconnection: EventSourceReconnection = EventSourceReconnection()
    ) async throws -> TimeInterval {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: .stream([Data(text.utf8)], headers: ["Content-Type": "text/event-stream"], endingWith: nil))
        let connect = Connect(transport: transport, retryPolicy: nil)
        var events = connect.eventSource(Feed(), reconnection: reconnection).makeAsyncIterator()
        let event = try await events.next()
        XCTAssertEqual(event?.data, "a", text)
        // Stops the wait the source would begin once the stream ends: nothing here waits for it.
        connect.cancelAllRequests()
        return events.reconnectionDelay
    }

    func testAServersRetryWithinTheBoundIsKept() async throws {
        let delay = try await delay(after: "retry: 120000\ndata: a\n\n")
        XCTAssertEqual(delay, 120)
    }

    /// A huge `retry:` is held to an hour (or the app's own delay, when longer), and one past `Int`'s range too.
    func testAHugeServerRetryIsHeldToTheBound() async throws {
        for value in ["99999999999", "9223372036854775807", "99999999999999999999999999999"] {
            let delay = try await delay(after: "retry: \(value)\ndata: a\n\n")
            XCTAssertEqual(delay, 3600, value)
            XCTAssertEqual(EventSource.AsyncIterator.wait(delay, failures: 20), 3600, "the back-off stays there")
        }
        let longer = try await delay(
            after: "retry: 99999999999\ndata: a\n\n", reconnection: EventSourceReconnection(delay: 7200))
        XCTAssertEqual(longer, 7200, "the app's own longer delay is the bound")
    }

    /// WHATWG: a `retry:` value that is not all ASCII digits is ignored, and the wait stays as it was.
    func testARetryThatIsNotAllDigitsIsIgnored() async throws {
        for value in ["-5000", "+5000", "5000 ", "5e3", "5000ms", "", "٥٠٠٠", "0x10"] {
            let delay = try await delay(after: "retry: 2000\nretry: \(value)\ndata: a\n\n")
            XCTAssertEqual(delay, 2, "retry: \(value)")
        }
    }
}

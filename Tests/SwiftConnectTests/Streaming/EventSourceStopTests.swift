import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What stops a `Connect.eventSource` and what keeps it going, at the edges `EventSourceTests` and
/// `EventSourceLifecycleTests` leave: a cancellation between events of one chunk, and the idle timeout.
final class EventSourceStopTests: XCTestCase {
    private let eventStream = ["Content-Type": "text/event-stream"]
    private let base = URL(string: "https://api.example.com")!

    /// A task cancelled between two events that came in one chunk gets `.cancelled` from the next `next()`, not
    /// the rest of the chunk, as a browser's `EventSource` dispatches nothing once closed; the last event ID stays
    /// that of the last event handed out, and the transfer stops, though the iterator is still held.
    func testACancellationBetweenEventsOfOneChunkStopsTheSourceAtOnce() async throws {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        transport.stub(
            .get, "/events",
            with: .stream(headers: eventStream) { body in
                guard await body.send(Data("id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\n".utf8)) else {
                    stopped.succeed(())
                    return
                }
                // Heartbeats until the reader stops the transfer.
                while await body.send(Data(": ping\n".utf8)) {}
                stopped.succeed(())
            })
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        let reading = Task { () -> (outcomes: [String], lastEventID: String, stoppedWhileHeld: Bool) in
            var events = source.makeAsyncIterator()
            var outcomes: [String] = []
            for _ in 0..<3 {
                do {
                    outcomes.append(try await events.next().map { "event \($0.data)" } ?? "end")
                } catch let error as ConnectError {
                    outcomes.append("\(error.kind)")
                } catch {
                    outcomes.append("\(type(of: error))")
                }
                if outcomes.count == 1 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            // The iterator is still held while the transfer is awaited (in a task this cancellation does not reach).
            let stoppedWhileHeld = await Task.detached { (try? await stopped.future.value(timeout: 10)) != nil }.value
            return (outcomes, events.lastEventID, stoppedWhileHeld)
        }
        let (outcomes, lastEventID, stoppedWhileHeld) = await reading.value
        XCTAssertEqual(outcomes, ["event a", "\(ConnectError.Kind.cancelled)", "end"])
        XCTAssertEqual(lastEventID, "1", "the ID to resume from is that of the last event handed out")
        XCTAssertTrue(stoppedWhileHeld, "the transfer went on after the cancellation")
        XCTAssertEqual(transport.requests.count, 1, "a request went out after the cancellation")
    }

    /// A feed that goes quiet for longer than the idle timeout is cut and reconnected from the last event ID, as a
    /// network drop is: `.timedOut` from the idle timer is no reason to end the source.
    func testAFeedQuietPastTheIdleTimeoutIsReconnectedFromTheLastEventID() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                .stream(headers: eventStream) { body in
                    guard await body.send(Data("id: 7\ndata: a\n\n".utf8)) else { return }
                    // Then nothing, until the stream ends (its idle timer fails it).
                    await withCheckedContinuation { ended in body.whenEnded { ended.resume() } }
                },
                .stream([Data("data: b\n\n".utf8)], headers: eventStream),
                .status(204),
            ])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        for try await event in connect.eventSource(
            // 1 s: the first producer, started in a task of its own, sends its event well within it on a busy machine.
            Route("/events", baseURL: base), streaming: StreamingOptions(idleTimeout: 1),
            reconnection: EventSourceReconnection(delay: 0))
        {
            received.append("\(event.id ?? "-") \(event.data)")
        }
        XCTAssertEqual(received, ["7 a", "7 b"])
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests.dropFirst().first?.value(forHTTPHeaderField: "Last-Event-ID"), "7")
    }
}

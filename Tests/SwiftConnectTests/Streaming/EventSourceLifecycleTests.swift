import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect.eventSource` as the WHATWG "server-sent events" processing model has it, at the edges
/// `EventSourceTests` leaves: what ends the source for good, what a reconnection carries, and what its answer
/// must be.
final class EventSourceLifecycleTests: XCTestCase {
    private let eventStream = ["Content-Type": "text/event-stream"]
    private let base = URL(string: "https://api.example.com")!

    private func sse(_ text: String, endingWith failure: (any Error)? = nil) -> FakeResponse {
        .stream([Data(text.utf8)], headers: eventStream, endingWith: failure)
    }

    /// A cancellation while a reconnection waits for its answer ends the source for good, as one during the wait
    /// before it does: a later `next()` sends nothing.
    func testACancellationWhileAReconnectionWaitsForItsHeadEndsTheSourceForGood() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("data: a\n\n"), .never])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        let reading = Task { () -> [String] in
            var outcomes: [String] = []
            var events = source.makeAsyncIterator()
            for _ in 0..<3 {
                do {
                    outcomes.append(try await events.next().map { "event \($0.data)" } ?? "end")
                } catch let error as ConnectError {
                    outcomes.append("\(error.kind)")
                } catch {
                    outcomes.append("\(type(of: error))")
                }
            }
            return outcomes
        }
        _ = try await transport.requestsReceived(count: 2).value(timeout: 10)
        reading.cancel()
        let outcomes = await reading.value
        XCTAssertEqual(outcomes, ["event a", "\(ConnectError.Kind.cancelled)", "end"])
        XCTAssertEqual(transport.requests.count, 2, "a request went out after the cancellation")
    }

    /// A source iterated in a task already cancelled sends nothing.
    func testASourceReadInACancelledTaskSendsNoRequest() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: sse("data: a\n\n"))
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        let outcome = await Task { () -> String in
            withUnsafeCurrentTask { $0?.cancel() }
            var events = source.makeAsyncIterator()
            do {
                return try await events.next().map { "event \($0.data)" } ?? "end"
            } catch let error as ConnectError {
                return "\(error.kind)"
            } catch {
                return "\(type(of: error))"
            }
        }.value
        XCTAssertEqual(outcome, "\(ConnectError.Kind.cancelled)")
        XCTAssertEqual(transport.requests.count, 0)
    }

    /// The `id` of a block without data still becomes the last event ID (the standard sets it at every blank
    /// line): the reconnection resumes after it.
    func testTheIDOfATrailingBlockWithoutDataIsSentOnReconnection() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("id: 1\ndata: a\n\nid: 2\n\n"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        for try await event in connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        {
            received.append(event.data)
        }
        XCTAssertEqual(received, ["a"])
        XCTAssertEqual(transport.requests.count, 2)
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Last-Event-ID"), "2")
    }

    /// An `id` in an event not ended by a blank line when the stream ends is dropped with it: the reconnection
    /// resumes after the last event dispatched.
    func testTheIDOfAnUndispatchedBlockIsNotSentOnReconnection() async throws {
        let transport = FakeTransport()
        transport.stub(.get, "/events", with: [sse("id: 1\ndata: a\n\nid: 2\ndata: b"), .status(204)])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        for try await event in connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        {
            received.append(event.data)
        }
        XCTAssertEqual(received, ["a"])
        XCTAssertEqual(transport.requests.last?.value(forHTTPHeaderField: "Last-Event-ID"), "1")
    }

    /// A reconnection answered with something else than a `200 text/event-stream` fails the source, as the first
    /// connection's answer would: no more reconnections.
    func testAReconnectionAnsweredWithAnErrorOrAnotherTypeFailsTheSource() async throws {
        let answers: [(FakeResponse, ConnectError.Kind)] = [
            (.json(["error": "gone"], status: 503), .serverMessage),
            (.json(["not": "events"]), .rejected),
            (.data(Data("data: x\n\n".utf8), status: 200, headers: ["Content-Type": "text/plain"]), .rejected),
        ]
        for (answer, kind) in answers {
            let transport = FakeTransport()
            transport.stub(.get, "/events", with: [sse("id: 1\ndata: a\n\n"), answer, sse("data: b\n\n")])
            let connect = Connect(transport: transport, retryPolicy: nil)
            var received: [String] = []
            do {
                for try await event in connect.eventSource(
                    Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
                {
                    received.append(event.data)
                }
                XCTFail("the source must fail")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, kind, "\(error)")
            }
            XCTAssertEqual(received, ["a"])
            XCTAssertEqual(transport.requests.count, 2)
        }
    }

    /// The media type is compared as the standard compares it: case aside, parameters aside.
    func testAnEventStreamTypeWithParametersAndCapitalsIsAccepted() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                .stream(
                    [Data("data: a\n\n".utf8)], headers: ["Content-Type": "Text/Event-Stream; charset=utf-8"]),
                .status(204),
            ])
        let connect = Connect(transport: transport, retryPolicy: nil)
        var received: [String] = []
        for try await event in connect.eventSource(
            Route("/events", baseURL: base), reconnection: EventSourceReconnection(delay: 0))
        {
            received.append(event.data)
        }
        XCTAssertEqual(received, ["a"])
    }

    /// The connector's timeout bounds each connection: a stream it cuts is reconnected from the last event ID, and
    /// the events of the next connection come (its own deadline starts with it).
    func testTheDeadlineOfAConnectionCutsItAndTheSourceResumesAfterIt() async throws {
        let transport = FakeTransport()
        transport.stub(
            .get, "/events",
            with: [
                .stream(headers: eventStream) { body in
                    guard await body.send(Data("id: 1\ndata: a\n\n".utf8)) else { return }
                    // Then nothing: the producer waits until the deadline stops the transfer (which cancels it).
                    await waitUntilCancelled()
                },
                sse("id: 2\ndata: b\n\n"),
                .status(204),
            ])
        let connect = Connect(transport: transport, retryPolicy: nil)
        let source = connect.eventSource(
            Route("/events", baseURL: base, timeout: 0.5), reconnection: EventSourceReconnection(delay: 0))
        let done = Promise<[String]>()
        let reading = Task {
            var received: [String] = []
            do {
                for try await event in source { received.append(event.data) }
            } catch {
                received.append("\(error)")
            }
            done.succeed(received)
        }
        defer { reading.cancel() }
        // Bounded: a connection the deadline does not cut keeps the source waiting.
        let received = try await done.future.value(timeout: 10)
        XCTAssertEqual(received, ["a", "b"])
        XCTAssertEqual(transport.requests.count, 3)
        XCTAssertEqual(transport.requests[1].value(forHTTPHeaderField: "Last-Event-ID"), "1")
    }

    /// A reconnection that fails for good, the same way each time (a redirect loop: the server answers, and would
    /// answer so again), fails the source with that error, as an answer that is not an event stream does; only a
    /// failure of the network (no connection, a timeout) is tried again. The loop was reconnected to until
    /// `maxAttempts` ran out, for ever without one.
    func testAReconnectionThatMeetsARedirectLoopFailsTheSourceInsteadOfReconnecting() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let connections = Guarded(0)
        server.route("GET", "/feed") { _ in
            let connection = connections.withLock { count -> Int in
                count += 1
                return count
            }
            guard connection == 1 else { return .redirect(to: "/feed", status: 302) }
            return .text("id: 1\ndata: a\n\n", contentType: "text/event-stream")
        }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        var options = RequestOptions()
        options.maxRedirects = 2
        var received: [String] = []

        do {
            let source = connect.eventSource(
                Route("/feed", baseURL: server.baseURL, timeout: 10), options: options,
                reconnection: EventSourceReconnection(delay: 0, maxAttempts: 3))
            for try await event in source { received.append(event.data) }
            XCTFail("a redirect loop must fail the source")
        } catch let error as ConnectError {
            XCTAssertEqual((error.underlyingError as? URLError)?.code, .httpTooManyRedirects, "\(error)")
            XCTAssertFalse(error.message.contains("gave up"), "reconnected after the loop: \(error.message)")
        }
        XCTAssertEqual(received, ["a"])
        // The first connection, then one reconnection: its request and the two redirects it followed.
        XCTAssertEqual(server.requestCount(for: "GET", path: "/feed"), 4)
    }

}

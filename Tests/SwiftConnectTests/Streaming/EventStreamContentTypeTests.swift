import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A ``ResponseStream`` read as server-sent events checks what the response declares, as ``EventSource`` does: a
/// page of another type is no event stream, and reading it as one gave no event and a clean end.
final class EventStreamContentTypeTests: XCTestCase {
    private struct Feed: Connector {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/feed" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
        var timeout: TimeInterval { .infinity }
    }

    private let page = Data("<html><body>data: not an event\n\nSign in</body></html>\n".utf8)

    /// A transport whose `/feed` answers `page` 20,000 times (1 MiB, over the stream's pause threshold) as
    /// `contentType`, then ends; `stopped` completes if its reader stops it before that.
    private func feed(_ contentType: String?) -> (FakeTransport, stopped: Promise<Void>) {
        let transport = FakeTransport()
        let stopped = Promise<Void>()
        let body = page
        transport.stub(
            .get, "/feed",
            with: .stream(headers: contentType.map { ["Content-Type": $0] } ?? [:]) { stream in
                for _ in 0..<20_000 {
                    guard await stream.send(body) else {
                        stopped.completeIfPending(with: .success(()))
                        return
                    }
                }
                stream.finish(throwing: nil)
            })
        return (transport, stopped)
    }

    /// A 200 `text/html` page read as events fails with a typed error naming the type, and its transfer stops: it
    /// ended as an empty stream, or here (a page that happens to hold `data:` lines) gave its text as events.
    func testEventsOfAResponseOfAnotherTypeFailNamingTheType() async throws {
        let (transport, stopped) = feed("text/html; charset=utf-8")
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())

        do {
            for try await event in stream.events {
                XCTFail("a text/html page gave an event: \(event)")
                break
            }
            XCTFail("a text/html page must fail the events")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertTrue(error.message.contains("text/html"), error.message)
            XCTAssertTrue(error.message.contains("text/event-stream"), error.message)
            XCTAssertEqual(error.statusCode, 200)
            try await stopped.future.value(timeout: 10)
        }
    }

    /// The same through the batches and through the callbacks.
    func testBatchesAndCallbacksOfAResponseOfAnotherTypeFailToo() async throws {
        let (transport, stopped) = feed("application/json")
        let connect = Connect(transport: transport, retryPolicy: nil)

        do {
            for try await batch in connect.stream(Feed()).events.batches {
                XCTFail("a JSON answer gave a batch of \(batch.count) events")
                break
            }
            XCTFail("a JSON answer must fail the batches")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertTrue(error.message.contains("application/json"), error.message)
            try await stopped.future.value(timeout: 10)
        }

        let outcome = Promise<Result<Void, any Error>>()
        let events = Recorder<ServerSentEvent>()
        connect.stream(Feed()).observeEvents({ events.append($0) }, completion: { outcome.succeed($0) })
        let result = try await outcome.future.value(timeout: 10)
        XCTAssertEqual(events.values, [])
        guard case .failure(let error as ConnectError) = result else {
            return XCTFail("a JSON answer must fail the callbacks: \(result)")
        }
        XCTAssertEqual(error.kind, .rejected)
    }

    /// `ResponseEvents` made over a `ResponseStream` by hand checks the type as `events` does.
    func testEventsMadeOverAStreamByHandCheckTheTypeToo() async throws {
        let (transport, _) = feed("text/plain")
        let stream = Connect(transport: transport, retryPolicy: nil).stream(Feed())

        do {
            for try await _ in ResponseEvents(stream) {}
            XCTFail("a text/plain answer must fail the events")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .rejected)
            XCTAssertTrue(error.message.contains("text/plain"), error.message)
        }
    }

    /// An event stream declared with parameters and capitals is one; a response that declares no type is read as
    /// events (a server that forgot the header); the raw chunks and the lines of a page are read as they are.
    func testAnEventStreamOrAnUndeclaredTypeIsReadAndOtherViewsAreUnchecked() async throws {
        let transport = FakeTransport()
        let events = [Data("data: one\n\n".utf8)]
        let eventStream = ["Content-Type": "Text/Event-Stream; charset=utf-8"]
        transport.stub(.get, "/typed", with: .stream(events, headers: eventStream))
        transport.stub(.get, "/untyped", with: .stream(events))
        transport.stub(.get, "/page", with: .stream([page], headers: ["Content-Type": "text/html"]))
        let connect = Connect(transport: transport, retryPolicy: nil)

        var typed: [String] = []
        for try await event in connect.stream(Route("/typed", baseURL: Feed().baseURL)).events {
            typed.append(event.data)
        }
        var untyped: [String] = []
        for try await event in connect.stream(Route("/untyped", baseURL: Feed().baseURL)).events {
            untyped.append(event.data)
        }
        var lines = 0
        for try await _ in connect.stream(Route("/page", baseURL: Feed().baseURL)).lines { lines += 1 }

        XCTAssertEqual(typed, ["one"])
        XCTAssertEqual(untyped, ["one"])
        XCTAssertEqual(lines, 3)
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Connect.stream` through a real engine to a `LocalServer`: bytes as they arrive, server-sent events, lines,
/// error statuses, and a consumer that stops reading (issue 25). Runs over every engine (`TransportUnderTest`).
final class StreamingIntegrationTests: IntegrationTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    private func client() -> Connect {
        Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
    }

    /// The second chunk is only sent once the client has the first: a transport that waited for the whole body
    /// would never get it.
    func testChunksArriveAsTheServerSendsThem() async throws {
        let firstReceived = DispatchSemaphore(value: 0)
        let serverWaited = Guarded<Bool?>(nil)
        server.route("GET", "/live") { _ in
            .stream(contentLength: nil, contentType: "text/plain") { write in
                guard write(Data("first\n".utf8)) else { return }
                serverWaited.withLock { $0 = firstReceived.wait(timeout: .now() + 10) == .success }
                _ = write(Data("second\n".utf8))
            }
        }
        let stream = client().stream(Route("/live", baseURL: server.baseURL))
        var received = ""
        for try await chunk in stream {
            if received.isEmpty { firstReceived.signal() }
            received += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertEqual(received, "first\nsecond\n")
        XCTAssertEqual(serverWaited.snapshot, true, "the client got the first chunk only with the rest of the body")
    }

    /// A streamed call's progress goes on after its head (which completes its future), to the body's end, as
    /// `RequestOptions.progress` says: the server sends the rest of the body only once the client has the head.
    func testAStreamsProgressGoesOnAfterItsHeadToTheBodysEnd() async throws {
        let headReceived = DispatchSemaphore(value: 0)
        server.route("GET", "/live") { _ in
            .stream(contentLength: 20_000, contentType: "application/octet-stream") { write in
                guard write(Data(count: 10_000)) else { return }
                guard headReceived.wait(timeout: .now() + 10) == .success else { return }
                _ = write(Data(count: 10_000))
            }
        }
        let reports = Recorder<TransferProgress>()
        let stream = client().stream(
            Route("/live", baseURL: server.baseURL), options: RequestOptions(progress: { reports.append($0) }))
        _ = try await stream.response
        let atHead = reports.values.count
        XCTAssertFalse(reports.values.contains { $0.downloadFraction == 1 }, "the body's end before it was sent")
        headReceived.signal()
        var received = 0
        for try await chunk in stream { received += chunk.count }
        XCTAssertEqual(received, 20_000)
        XCTAssertGreaterThan(reports.values.count, atHead)
        XCTAssertEqual(reports.values.last?.downloadFraction, 1)
    }

    func testServerSentEventsAndLinesOverTheWire() async throws {
        let events = [
            ServerSentEvent(data: "Hel", id: "1"), ServerSentEvent(data: "lo,\nworld", id: "2"),
            ServerSentEvent(event: "done", data: "[DONE]", id: "3"),
        ]
        server.route("GET", "/chat") { _ in .serverSentEvents(events) }
        server.route("GET", "/log") { _ in
            .stream(contentLength: nil, contentType: "application/x-ndjson") { write in
                for n in 1...3 { guard write(Data(#"{"n":\#(n)}"#.utf8 + [0x0D, 0x0A])) else { return } }
            }
        }
        let connect = client()

        var received: [ServerSentEvent] = []
        for try await event in connect.stream(Route("/chat", baseURL: server.baseURL)).events { received.append(event) }
        XCTAssertEqual(received, events)

        struct Entry: Decodable, Equatable { let n: Int }
        var entries: [Entry] = []
        for try await entry in connect.stream(Route("/log", baseURL: server.baseURL)).jsonLines(of: Entry.self) {
            entries.append(entry)
        }
        XCTAssertEqual(entries, [Entry(n: 1), Entry(n: 2), Entry(n: 3)])
    }

    /// The event stream format has no way to carry a CR in data: a CR or a CRLF in an event's data is a line end,
    /// as the parser reads one, so `serverSentEvents` writes the data's lines at CR, LF and CRLF alike and the client
    /// reads each as an LF. Written as they were (split at LF only), the text after a CR became a field of its own,
    /// which the client ignored: "one" arrived for "one\r\ntwo".
    func testServerSentEventsWithCRAndCRLFInTheirDataArriveWithEveryLine() async throws {
        let sent = [
            ServerSentEvent(data: "one\r\ntwo"), ServerSentEvent(data: "three\rfour\n\rfive"),
            ServerSentEvent(data: "six\r"),
        ]
        server.route("GET", "/lines") { _ in .serverSentEvents(sent) }

        var received: [String] = []
        for try await event in client().stream(Route("/lines", baseURL: server.baseURL)).events {
            received.append(event.data)
        }

        XCTAssertEqual(received, ["one\ntwo", "three\nfour\n\nfive", "six\n"])
    }

    func testAnErrorStatusFailsTheStreamWithTheServersMessage() async throws {
        server.route("GET", "/chat") { _ in .json(["error": "model overloaded"], status: 503) }
        do {
            for try await _ in client().stream(Route("/chat", baseURL: server.baseURL)) {}
            XCTFail("a 503 must fail the stream")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .serverMessage)
            XCTAssertEqual(error.message, "model overloaded")
            XCTAssertEqual(error.statusCode, 503)
        }
    }

    /// A reader that stops early stops the transfer: the server's writes start failing.
    func testBreakingOutOfTheLoopClosesTheConnection() async throws {
        let (closed, limit) = endlessRoute()
        let started = Date()
        for try await _ in client().stream(Route("/endless", baseURL: server.baseURL)) { break }
        let stoppedAt = Date()
        let written = try await closed.future.value(timeout: 20)
        let delay = Date().timeIntervalSince(stoppedAt)
        let ended = written == limit ? "reached its end" : "saw the close"
        print(
            "StreamingIntegrationTests: the server \(ended) \(Int(delay * 1000)) ms after the break, having written",
            "\(written) chunks of 16 KiB; the break came \(Int(stoppedAt.timeIntervalSince(started) * 1000)) ms in")
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the connection stayed open")
        if !TransportUnderTest.isURLSession {
            XCTAssertLessThan(delay, 1, "the transfer went on after the reader stopped")
        }
        // FoundationNetworking (libcurl) stops a transfer under way only once libcurl has caught up with the
        // sender: until then the body goes on arriving, and is dropped. Known defect; see SECURITY.md and
        // `MemoryBoundTests`, which bounds what it costs in memory.
    }

    /// A stream released before anyone read it stops its transfer once the head has arrived: the server's writes
    /// start failing and the connection closes, long before the call's deadline.
    func testReleasingAnUnreadStreamClosesTheConnection() async throws {
        let (closed, limit) = endlessRoute()
        var stream: ResponseStream? = client().stream(Route("/endless", baseURL: server.baseURL))
        _ = try await stream?.head.value(timeout: 10)

        stream = nil

        let written = try await closed.future.value(timeout: 20)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the connection stayed open")
        if !TransportUnderTest.isURLSession {
            XCTAssertLessThan(written, limit, "the server wrote to its end")
        }
    }

    /// `/endless`: 16 KiB chunks until a write fails (or, over URLSession, `limit` of them), then `closed` tells how
    /// many were written.
    private func endlessRoute() -> (closed: Promise<Int>, limit: Int) {
        let closed = Promise<Int>()
        // FoundationNetworking goes on reading a stopped transfer (see `testBreakingOutOfTheLoopClosesTheConnection`):
        // there the body ends after 64 MiB, or the runaway transfer would take both cores from the tests that follow
        // for as long as it runs.
        let limit = TransportUnderTest.isURLSession ? 4096 : Int.max
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil, contentType: "text/plain") { write in
                var chunks = 0
                while chunks < limit, write(Data(repeating: 0x61, count: 16 * 1024)) { chunks += 1 }
                closed.succeed(chunks)
            }
        }
        return (closed, limit)
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A streamed response's life on the real engines (`TransportUnderTest`, so both): an `EventSource` reading the
/// corner cases of the WHATWG format off the wire and resuming with a `Last-Event-ID` that is not ASCII, lines before
/// a broken body, and a reader that leaves a stream that has gone quiet or one whose engine it has paused: the
/// transfer stops, the reader gets `.cancelled`, and nothing of the stream is kept.
final class StreamLifecycleTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// The connector's `timeout` bounds a stream from the call's start on the real engines too: an attempt answered
    /// 503 and retried after a 1.5 s wait gets what is left of a 2.5 s timeout for its body, not a whole timeout from
    /// its send (which ended the stream at about 4 s). Wide margins: the failure is expected within 3.5 s.
    func testAStreamsDeadlineCountsTheRetriesWaitOnTheEngines() async throws {
        let calls = Guarded(0)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        server.route("GET", "/retried-feed") { _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            guard call > 1 else { return .status(503) }
            return .stream(contentLength: nil, contentType: "text/event-stream") { write in
                _ = write(Data("data: first\n\n".utf8))
                _ = release.wait(timeout: .now() + 10)
            }
        }
        let connect = Connect(
            transport: TransportUnderTest.make(),
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 1.5, jitter: RetryPolicy.noJitter))
        let started = Date()
        var received: [String] = []
        var failure: ConnectError?
        do {
            for try await event in connect.stream(Route("/retried-feed", baseURL: server.baseURL, timeout: 2.5)).events
            {
                received.append(event.data)
            }
        } catch {
            failure = error as? ConnectError
        }
        XCTAssertEqual(received, ["first"])
        XCTAssertEqual(failure?.kind, .timedOut, "\(String(describing: failure))")
        XCTAssertEqual(calls.withLock { $0 }, 2)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.5, "the body had a whole timeout after the retry")
    }

    /// A byte order mark, CR and CRLF line ends, a comment, a `retry` with junk, an `id` with NUL, an empty `data`
    /// line and an event left unterminated when the body ends: the source hands out what a browser's would, and
    /// resumes from the last event dispatched, not from the `id` of the event it dropped.
    func testAnEventSourceReadsTheFormatsCornerCasesOffTheWire() async throws {
        let first =
            Data([0xEF, 0xBB, 0xBF])
            + Data(
                ": hello\r\nretry: 1x\r\nid: 1\0bad\r\nid: 7\rdata: a\r\n\r\ndata:\r\n\r\nid: 8\ndata: lost".utf8)
        let calls = Guarded(0)
        // The first connection ends after the unterminated event, the second after one event, the third is a 204.
        server.route("GET", "/events") { _ in
            switch calls.withLock({
                $0 += 1
                return $0
            }) {
            case 1:
                return LocalServer.Response(
                    status: 200, headers: [("Content-Type", "text/event-stream; charset=utf-8")], body: first)
            case 2:
                return LocalServer.Response(
                    status: 200, headers: [("Content-Type", "text/event-stream")], body: Data("data: b\n\n".utf8))
            default:
                return .status(204)
            }
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var received: [ServerSentEvent] = []
        for try await event in connect.eventSource(
            Route("/events", baseURL: server.baseURL, timeout: 10),
            reconnection: EventSourceReconnection(delay: 0, maxAttempts: 3))
        {
            received.append(event)
        }
        XCTAssertEqual(
            received,
            [
                ServerSentEvent(data: "a", id: "7"), ServerSentEvent(data: "", id: "7"),
                ServerSentEvent(data: "b", id: "7"),
            ])
        XCTAssertEqual(server.requests.map { $0.header("Last-Event-ID") ?? "-" }, ["-", "7", "7"])
    }

    /// A reader waiting on a stream that has gone quiet is cancelled: it gets `.cancelled` at once, and the
    /// connection closes.
    func testCancellingAReaderOfAQuietStreamStopsIt() async throws {
        server.route("GET", "/quiet") { _ in
            var response = LocalServer.Response.status(200).withFault(
                .trickle(chunk: Data("data: x\n\n".utf8), interval: 60))
            response.headers = [("Content-Type", "text/event-stream")]
            return response
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let got = Promise<Void>()
        let route = Route("/quiet", baseURL: server.baseURL, timeout: .infinity)
        let task = Task {
            var count = 0
            for try await _ in connect.stream(route).events {
                count += 1
                got.succeed(())
            }
            return count
        }
        try await got.future.value(timeout: 10)
        let started = Date()
        task.cancel()
        do {
            let count = try await task.value
            XCTFail("ended without error after \(count)")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled)
        }
        // The next chunk comes in 60 s: the reader did not wait for it.
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the connection stayed open")
    }

    /// Breaking out of the loop over a quiet stream closes the connection and lets the stream and its body go.
    func testBreakingOutOfAQuietStreamLetsItGo() async throws {
        server.route("GET", "/quiet") { _ in
            var response = LocalServer.Response.status(200).withFault(
                .trickle(chunk: Data("data: x\n\n".utf8), interval: 60))
            response.headers = [("Content-Type", "text/event-stream")]
            return response
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        weak var weakStream: ResponseStream?
        weak var weakBody: ResponseBodyStream?
        do {
            let stream = connect.stream(Route("/quiet", baseURL: server.baseURL, timeout: .infinity))
            weakStream = stream
            weakBody = try await stream.response.bodyStream
            XCTAssertNotNil(weakBody, "a streamed answer has a body stream")
            for try await _ in stream.events { break }
        }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the connection stayed open")
        let deadline = Date().addingTimeInterval(5)
        while (weakStream != nil || weakBody != nil) && Date() < deadline { await Task.yield() }
        XCTAssertNil(weakStream, "stream leaked")
        XCTAssertNil(weakBody, "body leaked")
    }

    /// A body cut short by a close: the complete lines come first, the line it cut does not, then `.connectionLost`.
    func testTheLinesBeforeABreakComeThenConnectionLost() async throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"
        server.route("GET", "/lines") { _ in .status(200).withFault(.raw(Data((head + "one\ntwo\r\nthr").utf8))) }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var lines: [String] = []
        do {
            for try await line in connect.stream(Route("/lines", baseURL: server.baseURL, timeout: 10)).lines {
                lines.append(line)
            }
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .connectionLost, "\(error)")
        }
        XCTAssertEqual(lines, ["one", "two"])
    }
}

extension StreamLifecycleTests {
    /// A reader that stops reading a fast stream (the engine paused, or buffering) and is then cancelled gets
    /// `.cancelled`, and the server's writes start failing.
    func testCancellingAReaderThatFellBehindStopsTheTransfer() async throws {
        let written = Guarded(0)
        let megabyte = Promise<Void>()
        let closed = Promise<Int>()
        let limit = TransportUnderTest.isURLSession ? 4096 : Int.max
        server.route("GET", "/endless") { _ in
            .stream(contentLength: nil, contentType: "text/event-stream") { write in
                var chunks = 0
                let chunk = Data(("data: " + String(repeating: "a", count: 16 * 1024 - 8) + "\n\n").utf8)
                while chunks < limit, write(chunk) {
                    chunks += 1
                    let total = written.withLock {
                        $0 += chunk.count
                        return $0
                    }
                    if total >= 1 << 20 { megabyte.completeIfPending(with: .success(())) }
                }
                closed.succeed(chunks)
            }
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let route = Route("/endless", baseURL: server.baseURL, timeout: .infinity)
        let first = Promise<Void>()
        let task = Task {
            for try await _ in connect.stream(route).events {
                first.completeIfPending(with: .success(()))
                try await megabyte.future.value
            }
        }
        try await first.future.value(timeout: 10)
        try await megabyte.future.value(timeout: 10)
        task.cancel()
        do {
            try await task.value
            XCTFail("no error")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .cancelled, "\(error)")
        }
        let chunks = try await closed.future.value(timeout: 20)
        if !TransportUnderTest.isURLSession {
            // FoundationNetworking reads on until libcurl has caught up (StreamingIntegrationTests says more).
            XCTAssertLessThan(chunks, 4096, "the server wrote on after the reader left")
        }
        XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the connection stayed open")
    }
}

extension StreamLifecycleTests {
    /// An event ID that is not ASCII is not sent back in `Last-Event-ID`, which the core sends in no field (engines
    /// send such text differently), as an ID with a control character is not: the source reconnects without it
    /// rather than fail.
    func testANonASCIIEventIDIsNotSentBackAndTheSourceReconnects() async throws {
        let calls = Guarded(0)
        server.route("GET", "/events") { request in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            guard call == 1 else { return .status(204) }
            return LocalServer.Response(
                status: 200, headers: [("Content-Type", "text/event-stream")], body: Data("id: é✓ 1\ndata: a\n\n".utf8))
        }
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        var received: [String] = []
        for try await event in connect.eventSource(
            Route("/events", baseURL: server.baseURL, timeout: 10),
            reconnection: EventSourceReconnection(delay: 0, maxAttempts: 3))
        {
            received.append(event.data)
        }
        XCTAssertEqual(received, ["a"])
        XCTAssertEqual(server.requests.map { $0.header("Last-Event-ID") ?? "-" }, ["-", "-"])
    }
}

// MARK: - The idle timeout measures the network, not the reader

extension StreamLifecycleTests {
    /// A route whose answer is one event, then nothing for 60 s.
    private func routeQuietFeed(_ path: String) {
        server.route("GET", path) { _ in
            var response = LocalServer.Response.status(200).withFault(
                .trickle(chunk: Data("data: x\n\n".utf8), interval: 60))
            response.headers = [("Content-Type", "text/event-stream")]
            return response
        }
    }

    /// A reader slow on bytes the server has sent is not the network going quiet: a stream whose reader stays away
    /// while two quiet streams of the same idle timeout, opened one after the other once its server had sent
    /// everything, time out, still hands over every byte, and ends cleanly.
    func testAReaderSlowOnBytesAlreadySentIsNotTimedOut() async throws {
        let piece = Data(repeating: 0x61, count: 64 << 10)
        let pieces = 16  // 1 MiB: more than the stream holds before it pauses the engine, less than its buffer limit
        let sent = Promise<Void>()
        server.route("GET", "/fast") { _ in
            .stream(contentLength: nil) { write in
                for _ in 0..<pieces {
                    guard write(piece) else { return }
                }
                sent.succeed(())
            }
        }
        routeQuietFeed("/quiet")
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let idle = StreamingOptions(idleTimeout: 0.3)
        let fast = connect.stream(Route("/fast", baseURL: server.baseURL, timeout: .infinity), streaming: idle)
        var iterator = fast.makeAsyncIterator()
        var received = try await iterator.next()?.count ?? 0
        try await sent.future.value(timeout: 30)

        // The clock: two quiet streams in a row, each timed out by the same idle timeout, while the reader of the
        // fast one reads nothing.
        for _ in 0..<2 {
            do {
                for try await _ in connect.stream(
                    Route("/quiet", baseURL: server.baseURL, timeout: .infinity), streaming: idle)
                {}
                XCTFail("a quiet stream must time out")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .timedOut, "\(error)")
            }
        }

        while let chunk = try await iterator.next() { received += chunk.count }
        XCTAssertEqual(received, pieces * piece.count)
    }

    /// The network going quiet times a stream out even while its reader is busy elsewhere with nothing unread: the
    /// transfer stops (the server sees the connection close), and the reader's next read gets `.timedOut`.
    func testAQuietServerTimesTheStreamOutWhileItsReaderIsBusy() async throws {
        routeQuietFeed("/quiet")
        let connect = Connect(transport: TransportUnderTest.make(), retryPolicy: nil)
        let stream = connect.stream(
            Route("/quiet", baseURL: server.baseURL, timeout: .infinity), streaming: StreamingOptions(idleTimeout: 0.3))
        var iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertEqual(first.map { String(decoding: $0, as: UTF8.self) }, "data: x\n\n")

        // The reader reads nothing more until the server has seen the connection close.
        XCTAssertTrue(server.waitUntilIdle(timeout: 30), "the idle timeout did not stop the transfer")
        do {
            let chunk = try await iterator.next()
            XCTFail("a stream quiet past its idle timeout must fail, got \(String(describing: chunk))")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .timedOut, "\(error)")
            XCTAssertTrue(error.message.contains("StreamingOptions.idleTimeout"), error.message)
        }
    }
}

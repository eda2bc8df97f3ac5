import Foundation
import NIOConcurrencyHelpers
import SwiftConnect
import SwiftConnectAsyncHTTPClient
import XCTest

/// A connection that ends in the middle of a body: every byte that reached the engine before the end reaches the
/// reader before the failure does, so an ``SwiftConnect/EventSource`` resumes from the last event really delivered.
/// Each test breaks a connection 100 times: the loss it guards against was a race (2 runs in 7).
final class BrokenBodyTests: XCTestCase {
    private static let breaks = 100

    private var transport: AsyncHTTPClientTransport!

    override func setUp() {
        transport = AsyncHTTPClientTransport()
    }

    override func tearDown() async throws {
        try await transport.shutdown()
    }

    /// Five complete events through `Connect.stream(_:)`, then a close in the middle of the sixth chunk: the reader
    /// gets the five events, then `.connectionLost`.
    func testEveryEventSentBeforeACloseMidChunkReachesTheReader() async throws {
        let server = try BrokenBodyServer { _ in (Self.eventsCutMidChunk(1...5), .close) }
        defer { server.stop() }
        let connect = Connect(transport: transport, retryPolicy: nil)

        for run in 1...Self.breaks {
            let ids = await eventIDsBeforeTheBreak(from: server, through: connect, run: run)
            XCTAssertEqual(ids, ["1", "2", "3", "4", "5"], "run \(run): events lost before the close")
            if ids.count != 5 { break }
        }
    }

    /// An event source whose connection breaks after every fifth event, 100 times: each reconnection carries the
    /// ID of the last event sent (`Last-Event-ID`), and the reader gets every event once, in order.
    func testAnEventSourceResumesFromTheLastEventAfterEveryBreak() async throws {
        let total = 5 * Self.breaks
        let resumedFrom = NIOLockedValueBox<[String]>([])
        let server = try BrokenBodyServer { head in
            let last = BrokenBodyServer.field("Last-Event-ID", in: head)
            resumedFrom.withLockedValue { $0.append(last ?? "") }
            let next = Int(last ?? "0") ?? 0
            guard next < total else {
                return (Data("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".utf8), .close)
            }
            return (Self.eventsCutMidChunk(next + 1...next + 5), .close)
        }
        defer { server.stop() }
        let connect = Connect(transport: transport, retryPolicy: nil)

        var ids: [Int] = []
        let source = connect.eventSource(
            Route("/events", baseURL: server.baseURL, timeout: 10),
            reconnection: EventSourceReconnection(delay: 0, maxAttempts: 1))
        for try await event in source {
            ids.append(Int(event.id ?? "") ?? -1)
        }

        XCTAssertEqual(ids, Array(1...total), "events lost or repeated")
        let expected = [""] + stride(from: 5, through: total, by: 5).map(String.init)
        XCTAssertEqual(resumedFrom.withLockedValue { $0 }, expected, "a reconnection resumed from a stale event")
    }

    /// A kept-alive answer followed by more bytes than its `Content-Length` (here a whole second answer, "evil"): the
    /// answer ends at its length, and the surplus never becomes the answer to the next request. AsyncHTTPClient 1.37
    /// hands that connection to the next request before its parser has refused the surplus and closed it, so the next
    /// call on it may fail with `.connectionLost`, which a GET's retry answers on a new connection.
    func testBytesPastAContentLengthNeverBecomeTheNextAnswer() throws {
        let surplus = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"
        let server = try BrokenBodyServer { head in
            let answer = head.hasPrefix("GET /first") ? surplus : "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"
            return (Data(answer.utf8), .keepOpen)
        }
        defer { server.stop() }
        var configuration = AsyncHTTPClientTransport.defaultConfiguration
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        let transport = AsyncHTTPClientTransport(configuration: configuration)
        let retrying = Connect(transport: transport, retryPolicy: RetryPolicy(baseDelay: 0))
        let once = Connect(transport: transport, retryPolicy: nil)

        for run in 1...20 {
            let first = try retrying.request(Route("/first", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            XCTAssertEqual(String(decoding: first, as: UTF8.self), "abc", "run \(run)")
            let next = try once.request(Route("/next", baseURL: server.baseURL, timeout: 10)).waitForResult(timeout: 20)
            switch next {
            case .success(let body):
                XCTAssertEqual(String(decoding: body, as: UTF8.self), "good", "run \(run): the surplus was the answer")
            case .failure(let error):
                XCTAssertEqual((error as? ConnectError)?.kind, .connectionLost, "run \(run): \(error)")
            }
            _ = try retrying.request(Route("/first", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            let retried = try retrying.request(Route("/next", baseURL: server.baseURL, timeout: 10)).wait(timeout: 20)
            XCTAssertEqual(String(decoding: retried, as: UTF8.self), "good", "run \(run)")
        }
    }

    /// A plain streamed body (`Content-Length` framing) cut short by a close: every byte sent arrives, in order,
    /// before `.connectionLost`.
    func testEveryByteSentBeforeACloseMidBodyReachesTheReader() async throws {
        let sent = Data((0..<60_000).map { UInt8($0 % 251) })
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
        let server = try BrokenBodyServer { _ in (Data(head.utf8) + sent, .close) }
        defer { server.stop() }
        let connect = Connect(transport: transport, retryPolicy: nil)

        for run in 1...Self.breaks {
            var received = Data()
            do {
                for try await chunk in connect.stream(Route("/bytes", baseURL: server.baseURL, timeout: 10)) {
                    received.append(chunk)
                }
                XCTFail("run \(run): the stream ended without the failure")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .connectionLost, "run \(run): \(error)")
            }
            XCTAssertEqual(received.count, sent.count, "run \(run): bytes lost before the close")
            XCTAssertEqual(received, sent, "run \(run)")
            if received != sent { break }
        }
    }

    /// A reset (RST) instead of a close: the kernel may discard bytes the engine has not read yet, so the reader
    /// gets the events the engine read (never a partial one, never out of order), then `.connectionLost`.
    func testAResetMidChunkDeliversTheEventsReadThenConnectionLost() async throws {
        let server = try BrokenBodyServer { _ in (Self.eventsCutMidChunk(1...5), .reset) }
        defer { server.stop() }
        let connect = Connect(transport: transport, retryPolicy: nil)

        var complete = 0
        for run in 1...Self.breaks {
            let ids = await eventIDsBeforeTheBreak(from: server, through: connect, run: run)
            XCTAssertEqual(ids, Array(["1", "2", "3", "4", "5"].prefix(ids.count)), "run \(run)")
            if ids.count == 5 { complete += 1 }
        }
        // A figure for the record: how often the kernel kept every byte.
        print("a reset mid-chunk: all five events read in \(complete) of \(Self.breaks) runs")
    }

    /// A chunked `text/event-stream` answer carrying the events `ids`, each in a chunk of its own, then a chunk
    /// that announces 64 bytes, of which only the start of the next event comes. Each event carries 8 KiB, so that
    /// the events take more than one read of the socket.
    private static func eventsCutMidChunk(_ ids: ClosedRange<Int>) -> Data {
        var answer = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        let padding = String(repeating: "x", count: 8 << 10)
        for id in ids {
            let event = "id: \(id)\ndata: event \(id) \(padding)\n\n"
            answer += String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n"
        }
        answer += "40\r\nid: \(ids.upperBound + 1)\ndata: half"
        return Data(answer.utf8)
    }

    /// The IDs of the events read from `server`'s `/events` before the stream failed, as it must, with
    /// `.connectionLost`.
    private func eventIDsBeforeTheBreak(from server: BrokenBodyServer, through connect: Connect, run: Int) async
        -> [String]
    {
        var ids: [String] = []
        do {
            for try await event in connect.stream(Route("/events", baseURL: server.baseURL, timeout: 10)).events {
                ids.append(event.id ?? "")
            }
            XCTFail("run \(run): the stream ended without the failure")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .connectionLost, "run \(run): \(error)")
        } catch {
            XCTFail("run \(run): \(error)")
        }
        return ids
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 41, item 2, on `URLSessionTransport`: a connection that closes in the middle of a body. Every byte that
/// reached the engine before the close reaches the reader before the failure does, and an `EventSource` resumes
/// from the last event delivered. Each test breaks a connection 100 times (the AsyncHTTPClient engine's loss was a
/// race), through the real engine to a loopback server that writes its answer and closes in one go.
final class URLSessionBrokenBodyTests: XCTestCase {
    private static let breaks = 100
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// Five complete events, then a close in the middle of the sixth chunk: the reader gets the five events, then
    /// `.connectionLost`.
    func testEveryEventSentBeforeACloseMidChunkReachesTheReader() async throws {
        server.route("GET", "/events") { _ in .status(200).withFault(.raw(Self.eventsCutMidChunk(1...5))) }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        for run in 1...Self.breaks {
            var ids: [String] = []
            do {
                let route = Route("/events", baseURL: server.baseURL, timeout: 10)
                for try await event in connect.stream(route).events { ids.append(event.id ?? "") }
                XCTFail("run \(run): the stream ended without the failure")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .connectionLost, "run \(run): \(error)")
            }
            XCTAssertEqual(ids, ["1", "2", "3", "4", "5"], "run \(run): events lost before the close")
            if ids.count != 5 { break }
        }
    }

    /// An event source whose connection breaks after every fifth event, 100 times: each reconnection carries the
    /// ID of the last event sent, and the reader gets every event once, in order.
    func testAnEventSourceResumesFromTheLastEventAfterEveryBreak() async throws {
        let total = 5 * Self.breaks
        server.route("GET", "/events") { request in
            let next = Int(request.header("Last-Event-ID") ?? "0") ?? 0
            guard next < total else { return .status(204) }
            return .status(200).withFault(.raw(Self.eventsCutMidChunk(next + 1...next + 5)))
        }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        var ids: [Int] = []
        let source = connect.eventSource(
            Route("/events", baseURL: server.baseURL, timeout: 10),
            reconnection: EventSourceReconnection(delay: 0, maxAttempts: 1))
        for try await event in source { ids.append(Int(event.id ?? "") ?? -1) }

        XCTAssertEqual(ids, Array(1...total), "events lost or repeated")
        let resumedFrom = server.requests.map { $0.header("Last-Event-ID") ?? "" }
        XCTAssertEqual(
            resumedFrom, [""] + stride(from: 5, through: total, by: 5).map(String.init),
            "a reconnection resumed from a stale event")
    }

    /// A streamed body with a `Content-Length`, cut short by a close: every byte sent arrives, in order, before
    /// `.connectionLost`.
    func testEveryByteSentBeforeACloseMidBodyReachesTheReader() async throws {
        let sent = Data((0..<60_000).map { UInt8($0 % 251) })
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n"
        server.route("GET", "/bytes") { _ in .status(200).withFault(.raw(Data(head.utf8) + sent)) }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
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
            XCTAssertEqual(received, sent, "run \(run): \(received.count) of \(sent.count) bytes before the close")
            if received != sent { break }
        }
    }

    /// A chunked `text/event-stream` answer carrying the events `ids`, each in a chunk of its own (8 KiB each, so
    /// that they take more than one read), then a chunk announcing 64 bytes of which only the start comes.
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
}

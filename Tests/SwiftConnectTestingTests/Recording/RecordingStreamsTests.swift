import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Streams under `RecordingTransport`: a streamed answer recorded piece by piece with each piece's time, a stream
/// that broke, a one-shot request body; replayed with the server gone.
final class RecordingStreamsTests: XCTestCase {
    private var server: LocalServer!
    private var folder: URL!

    override func setUpWithError() throws {
        server = try LocalServer.started()
        folder = try makeRecordingFolder(for: self)
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private func transport(_ mode: RecordingMode, latencies: Bool = false) -> RecordingTransport {
        RecordingTransport(
            fileURL: folder.appendingPathComponent("streams.har"),
            wrapping: mode == .replay ? nil : URLSessionTransport(), mode: mode, replaysLatencies: latencies)
    }

    private func events(_ connect: Connect) -> ResponseStream {
        connect.stream(Route("/events", baseURL: server.baseURL, timeout: 20))
    }

    /// Three events, each written only once the reader has the one before: three pieces, whatever the engine.
    private func serveGatedEvents() -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        server.route("GET", "/events") { _ in
            .stream(contentLength: nil, contentType: "text/event-stream") { write in
                for id in 1...3 {
                    guard write(Data("id: \(id)\ndata: event \(id)\n\n".utf8)) else { return }
                    if id < 3, gate.wait(timeout: .now() + 10) == .timedOut { return }
                }
            }
        }
        return gate
    }

    func testServerSentEventsAreRecordedPieceByPieceAndReplayedWithTheServerGone() async throws {
        // Given: three events recorded as the reader took them
        let gate = serveGatedEvents()
        let recorder = transport(.record)
        var recorded: [String] = []
        for try await event in events(Connect(transport: recorder, retryPolicy: nil)).events {
            recorded.append(event.data)
            gate.signal()
        }
        server.stop()
        // Then: the file has each piece, in order, with its time
        let entry = try XCTUnwrap(recorder.entries.first)
        let chunks = try XCTUnwrap(entry.chunks)
        XCTAssertEqual(chunks.count, 3)
        XCTAssertEqual(chunks.map(\.size).reduce(0, +), entry.response.content.data?.count)
        XCTAssertEqual(chunks.map(\.time), chunks.map(\.time).sorted())
        XCTAssertNil(entry.bodyFailure)
        // When: replayed by a transport that sends nothing
        let replayer = transport(.replay)
        var pieces: [String] = []
        for try await chunk in events(Connect(transport: replayer, retryPolicy: nil)) {
            pieces.append(String(decoding: chunk, as: UTF8.self))
        }
        // Then: the same events, in the same pieces
        XCTAssertEqual(recorded, ["event 1", "event 2", "event 3"])
        XCTAssertEqual(pieces, (1...3).map { "id: \($0)\ndata: event \($0)\n\n" })
        XCTAssertNoThrow(try replayer.verifyAllRecordingsUsed())
    }

    /// An event whose token the file hides is shorter, or longer, as recorded than as it came: each piece is sized in
    /// the recorded body, so that a replay hands the events over in the pieces they came in, each at its time.
    func testPiecesWhoseSecretsAreHiddenReplayInTheirOwnPieces() async throws {
        // Given: a first event with a long token and a second with a short one, each its own piece
        let long = String(repeating: "L", count: 300)
        let bodies = [
            "data: {\"access_token\":\"\(long)\"}\n\n", "data: {\"refresh_token\":\"s3cr3t-42\"}\n\n",
            "data: {\"n\":3}\n\n",
        ]
        let gate = DispatchSemaphore(value: 0)
        server.route("GET", "/events") { _ in
            .stream(contentLength: nil, contentType: "text/event-stream") { write in
                for (index, body) in bodies.enumerated() {
                    guard write(Data(body.utf8)) else { return }
                    if index < 2, gate.wait(timeout: .now() + 10) == .timedOut { return }
                }
            }
        }
        let recorder = transport(.record)
        for try await _ in events(Connect(transport: recorder, retryPolicy: nil)).events { gate.signal() }
        server.stop()
        let entry = try XCTUnwrap(recorder.entries.first)
        XCTAssertEqual(entry.chunks?.count, 3)
        XCTAssertEqual(entry.chunks?.map(\.size).reduce(0, +), entry.response.content.data?.count)
        // When
        let replayer = transport(.replay)
        var pieces: [String] = []
        for try await chunk in events(Connect(transport: replayer, retryPolicy: nil)) {
            pieces.append(String(decoding: chunk, as: UTF8.self))
        }
        // Then: each piece is one whole event, its secret hidden
        XCTAssertEqual(pieces.count, 3, "\(pieces)")
        XCTAssertTrue(pieces.allSatisfy { $0.hasPrefix("data: {") && $0.hasSuffix("}\n\n") }, "\(pieces)")
        XCTAssertEqual(pieces.last, bodies.last)
        XCTAssertFalse(pieces.joined().contains(long))
        XCTAssertFalse(pieces.joined().contains("s3cr3t-42"))
    }

    func testReplayWithLatenciesHandsEachPieceOverNoEarlierThanItCame() async throws {
        // Given: a recording whose pieces came 0, 150 and 300 ms after the request (edited, as a person may)
        let gate = serveGatedEvents()
        let recorder = transport(.record)
        for try await _ in events(Connect(transport: recorder, retryPolicy: nil)).events { gate.signal() }
        server.stop()
        var entry = try XCTUnwrap(recorder.entries.first)
        let sizes = try XCTUnwrap(entry.chunks).map(\.size)
        entry.chunks = zip([0.0, 150, 300], sizes).map { HAR.Chunk(time: $0, size: $1) }
        try HAR(entries: [entry]).encoded().write(to: folder.appendingPathComponent("streams.har"))
        // When: replayed at once, then with the recorded latencies
        let arrivals = { (replayer: RecordingTransport) async throws -> [Double] in
            let start = DispatchTime.now().uptimeNanoseconds
            var arrivals: [Double] = []
            for try await _ in self.events(Connect(transport: replayer, retryPolicy: nil)) {
                arrivals.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
            }
            return arrivals
        }
        let instant = try await arrivals(transport(.replay))
        let paced = try await arrivals(transport(.replay, latencies: true))
        // Then: paced, each piece at or after its recorded moment (a lower bound: a timer never fires early);
        // replayed at once, the same three pieces
        XCTAssertEqual(paced.count, 3)
        for (arrival, due) in zip(paced, [0.0, 150, 300]) {
            XCTAssertGreaterThanOrEqual(arrival, due, "\(paced)")
        }
        XCTAssertEqual(instant.count, 3)
    }

    func testAStreamThatBrokeReplaysItsPiecesThenTheSameError() async throws {
        // Given: two events, then the connection closes mid-chunk
        var raw = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        for id in 1...2 {
            let event = "id: \(id)\ndata: event \(id)\n\n"
            raw += String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n"
        }
        raw += "40\r\nid: 3\ndata: half"
        let cut = Data(raw.utf8)
        server.route("GET", "/events") { _ in .status(200).withFault(.raw(cut)) }
        let read = { (connect: Connect) async -> ([String], ConnectError?) in
            var ids: [String] = []
            do {
                for try await event in self.events(connect).events { ids.append(event.id ?? "") }
                return (ids, nil)
            } catch {
                return (ids, error as? ConnectError)
            }
        }
        let recorder = transport(.record)
        let (liveIDs, liveError) = await read(Connect(transport: recorder, retryPolicy: nil))
        server.stop()
        // When
        let (replayedIDs, replayedError) = await read(Connect(transport: transport(.replay), retryPolicy: nil))
        // Then
        XCTAssertEqual(liveIDs, ["1", "2"])
        XCTAssertEqual(liveError?.kind, .connectionLost, "\(String(describing: liveError))")
        XCTAssertEqual(recorder.entries.first?.bodyFailure?.kind, ConnectError.Kind.connectionLost.rawValue)
        XCTAssertEqual(replayedIDs, liveIDs)
        XCTAssertEqual(replayedError?.kind, .connectionLost, "\(String(describing: replayedError))")
    }

    /// A JSON Lines stream that broke mid-line was recorded whole as `<redacted: unreadable JSON body>` (its last line
    /// does not parse), and replayed that placeholder as its first line. Its complete lines are kept, redacted as
    /// ever, and the cut line's secrets hidden: the replay hands over the same values, then the same error.
    func testAJSONLinesStreamThatBrokeMidLineReplaysItsLinesThenTheSameError() async throws {
        // Given: two lines, then a third cut in a token, then the connection closes
        let lines = #"{"n":1}"# + "\n" + #"{"n":2}"# + "\n" + #"{"n":3,"access_token":"tok-CUT-918273"#
        let raw =
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "80\r\n" + lines
        server.route("GET", "/events") { _ in .status(200).withFault(.raw(Data(raw.utf8))) }
        struct Line: Decodable, Sendable { let n: Int }
        let read = { (connect: Connect) async -> ([Int], ConnectError?) in
            var values: [Int] = []
            do {
                for try await line in self.events(connect).jsonLines(of: Line.self) { values.append(line.n) }
                return (values, nil)
            } catch {
                return (values, error as? ConnectError)
            }
        }
        let recorder = transport(.record)
        let (live, liveError) = await read(Connect(transport: recorder, retryPolicy: nil))
        server.stop()
        // When
        let (replayed, replayedError) = await read(Connect(transport: transport(.replay), retryPolicy: nil))
        // Then
        XCTAssertEqual(live, [1, 2])
        XCTAssertEqual(liveError?.kind, .connectionLost, "\(String(describing: liveError))")
        XCTAssertEqual(replayed, live)
        XCTAssertEqual(replayedError?.kind, .connectionLost, "\(String(describing: replayedError))")
        let file = try String(contentsOf: folder.appendingPathComponent("streams.har"), encoding: .utf8)
        XCTAssertFalse(file.contains("tok-CUT-918273"), file)
    }

    func testAOneShotRequestBodyIsRecordedAndMatchedByItsBytes() throws {
        // Given: a body made by an async sequence, recorded
        server.route("POST", "/ingest") { request in .text("got \(request.body.count) bytes") }
        let url = server.baseURL.appendingPathComponent("ingest")
        let rows = { (text: String) -> ConnectRequest in
            let chunks = AsyncStream<Data> { continuation in
                for line in text.split(separator: "\n") { continuation.yield(Data((line + "\n").utf8)) }
                continuation.finish()
            }
            return ConnectRequest(method: .post, url: url, body: .stream(ConnectRequest.OneShotStream(chunks)))
        }
        let recorder = transport(.record)
        let live = try Connect(transport: recorder, retryPolicy: nil).response(for: rows("a\nb\n"), name: "ingest")
            .wait()
        server.stop()
        // When
        let replay = Connect(transport: transport(.replay), retryPolicy: nil)
        let replayed = try replay.response(for: rows("a\nb\n"), name: "ingest").wait()
        let other = try failure(of: replay.response(for: rows("c\n"), name: "ingest"))
        // Then
        XCTAssertEqual(String(decoding: live.data, as: UTF8.self), "got 4 bytes")
        XCTAssertEqual(recorder.entries.first?.request.postData?.text, "a\nb\n")
        XCTAssertEqual(replayed.data, live.data)
        XCTAssertEqual(try recordingError(of: other).reason, .noMatch)
    }

    func testTheRetryClockIsTheTestClockInReplayOnly() {
        XCTAssertTrue(transport(.replay).retryClock is ImmediateRetryClock)
        XCTAssertFalse(transport(.record).retryClock is ImmediateRetryClock)
        XCTAssertFalse(transport(.recordMissing).retryClock is ImmediateRetryClock)
    }
}

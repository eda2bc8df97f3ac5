import Foundation
import SwiftConnect
import XCTest

@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server-sent event stream's `data:` lines are JSON as often as not (a device login that pushes its token once
/// approved, a GraphQL subscription): its secret keys become placeholders in a recording as a JSON answer's do, and the
/// tokens it hands out are hidden in later exchanges.
final class RecordingEventStreamSecretsTests: XCTestCase {
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

    private let stream =
        "event: pending\ndata: {\"status\":\"waiting\"}\n\n"
        + "event: approved\r\nid: 2\r\ndata: {\"status\":\"approved\",\"access_token\":\"tok-SSE-8675309\","
        + "\"user\":{\"refresh_token\":\"tok-SSE-REFRESH-1122\"}}\r\n\r\n"
        + "data: see https://app.test/cb?session_id=tok-SSE-URL-5566\n\n"

    func testTheSecretsOfAnEventStreamsJSONDataStayOutOfTheRecordingAndAreHandedOut() {
        // When
        let recorded = String(
            decoding: RecordingRedaction.responseBody(
                Data(stream.utf8), contentType: "text/event-stream; charset=utf-8", secrets: SecretValues(values: [])),
            as: UTF8.self)
        let handedOut = RecordingRedaction.secretsHandedOut(
            fields: [.contentType: "text/event-stream"], body: Data(stream.utf8))
        // Then
        for secret in ["tok-SSE-8675309", "tok-SSE-REFRESH-1122", "tok-SSE-URL-5566"] {
            XCTAssertFalse(recorded.contains(secret), recorded)
            XCTAssertTrue(handedOut.contains(secret), "\(secret) not in \(handedOut)")
        }
        XCTAssertTrue(recorded.hasPrefix("event: pending\ndata: {\"status\":\"waiting\"}\n\n"), recorded)
        XCTAssertTrue(
            recorded.contains(
                "event: approved\r\nid: 2\r\ndata: {\"access_token\":\"<redacted:access_token>\",\"status\":\"approved\","
            ),
            recorded)
        XCTAssertTrue(recorded.hasSuffix("?session_id=%3Credacted%3Asession_id%3E\n\n"), recorded)
    }

    func testAnEventWhoseJSONSpansDataLinesOrIsCutShortKeepsItsSecretsOut() {
        // Given: JSON over two `data:` lines, then an event cut short by a broken stream
        let text =
            "data: {\"a\":1,\ndata: \"password\":\"pw-MULTI-778899\"}\n\n"
            + "id: 3\ndata: {\"token\":\"tok-CUT-445566"
        // When
        let recorded = RecordingRedaction.redactedEventStream(text)
        let handedOut = RecordingRedaction.secretsHandedOut(byEventStream: text)
        // Then
        XCTAssertEqual(
            recorded,
            "data: {\"a\":1,\"password\":\"<redacted:password>\"}\n\nid: 3\ndata: {\"token\":\"<redacted>")
        XCTAssertEqual(handedOut.sorted(), ["pw-MULTI-778899", "tok-CUT-445566"])
        // Data that only starts like JSON (the `[DONE]` that ends many streams) is kept as it came.
        XCTAssertEqual(RecordingRedaction.redactedEventStream("data: [DONE]\n\n"), "data: [DONE]\n\n")
    }

    func testAnEventStreamsTokenIsNotInTheFileAndReplaysAsItsPlaceholder() async throws {
        // Given
        let stream = self.stream
        server.route("GET", "/login/events") { _ in
            .stream(contentLength: nil, contentType: "text/event-stream") { write in
                _ = write(Data(stream.utf8))
            }
        }
        let file = folder.appendingPathComponent("events.har")
        let route = Route("/login/events", baseURL: server.baseURL, timeout: 20)
        // When: recorded
        let recorder = Connect(
            transport: RecordingTransport(fileURL: file, wrapping: URLSessionTransport(), mode: .record),
            retryPolicy: nil)
        var live: [String] = []
        for try await event in recorder.stream(route).events { live.append(event.data) }
        // Then
        XCTAssertTrue(live.contains { $0.contains("tok-SSE-8675309") }, "the caller reads what was sent: \(live)")
        XCTAssertEqual(live.count, 3, "\(live)")
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in ["tok-SSE-8675309", "tok-SSE-REFRESH-1122", "tok-SSE-URL-5566"] {
            XCTAssertFalse(text.contains(secret), text)
        }
        // When: replayed with a token of the test's
        let replayer = Connect(
            transport: RecordingTransport(
                fileURL: file, mode: .replay, placeholderValues: ["access_token": "test-token"]),
            retryPolicy: nil)
        var replayed: [String] = []
        for try await event in replayer.stream(route).events { replayed.append(event.data) }
        // Then: the same events, the token the test's, still JSON
        XCTAssertEqual(replayed.count, 3, "\(replayed)")
        let approved = try XCTUnwrap(replayed.dropFirst().first)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(approved.utf8)) as? [String: Any])
        XCTAssertEqual(json["access_token"] as? String, "test-token")
        XCTAssertEqual(json["status"] as? String, "approved")
    }
}

import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The recording is a valid HAR 1.2 file a human can read, and a browser's export replays.
final class HARFileTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// Records a JSON GET with a query, a binary answer and a POST with a body, and returns the file's URL.
    private func recordSample() throws -> URL {
        let fake = FakeTransport()
        fake.stub(.get, "/todos", with: .json(string: #"{"id":1}"#, headers: ["X-Trace": "t-1"]))
        fake.stub(
            .get, "/logo",
            with: .data(Data([0x89, 0x50, 0x4E, 0x47, 0xFF, 0x00]), headers: ["Content-Type": "image/png"]))
        fake.stub(.post, "/upload", with: .status(201))
        let file = folder.appendingPathComponent("sample.har")
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        let requests = [
            try connectRequest(.get, "http://api.test/todos?b=2&a=1"),
            try connectRequest(.get, "http://api.test/logo"),
            try connectRequest(
                .post, "http://api.test/upload", headers: [.contentType: "application/octet-stream"],
                body: Data([0x00, 0xC3, 0x28, 0xFF])),
        ]
        for request in requests { _ = try recorder.send(request, transfer: TransferOptions()).wait() }
        return file
    }

    func testRecordingHasEveryRequiredFieldAndTimeIsTheSumOfTimings() throws {
        // Given
        let file = try recordSample()
        // When: read as plain JSON, as another tool would
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        let log = try XCTUnwrap(root["log"] as? [String: Any])
        let entries = try XCTUnwrap(log["entries"] as? [[String: Any]])
        // Then
        XCTAssertEqual(log["version"] as? String, "1.2")
        XCTAssertNotNil((log["creator"] as? [String: Any])?["name"] as? String)
        XCTAssertNotNil((log["creator"] as? [String: Any])?["version"] as? String)
        XCTAssertEqual(entries.count, 3)
        for entry in entries {
            XCTAssertNotNil(entry["startedDateTime"] as? String)
            XCTAssertNotNil(entry["cache"] as? [String: Any])
            let timings = try XCTUnwrap(entry["timings"] as? [String: Double])
            let phases = ["send", "wait", "receive"].compactMap { timings[$0] }
            XCTAssertEqual(phases.count, 3)
            XCTAssertTrue(phases.allSatisfy { $0 >= 0 })
            XCTAssertEqual(try XCTUnwrap(entry["time"] as? Double), phases.reduce(0, +), accuracy: 1e-9)
            let request = try XCTUnwrap(entry["request"] as? [String: Any])
            for key in ["method", "url", "httpVersion", "headers", "queryString", "cookies", "headersSize", "bodySize"]
            {
                XCTAssertNotNil(request[key], "request.\(key)")
            }
            XCTAssertEqual(request["headersSize"] as? Int, -1)
            let response = try XCTUnwrap(entry["response"] as? [String: Any])
            for key in [
                "status", "statusText", "httpVersion", "headers", "cookies", "content", "redirectURL", "headersSize",
                "bodySize",
            ] {
                XCTAssertNotNil(response[key], "response.\(key)")
            }
            let content = try XCTUnwrap(response["content"] as? [String: Any])
            XCTAssertNotNil(content["size"] as? Int)
            XCTAssertNotNil(content["mimeType"] as? String)
        }
        let query = try XCTUnwrap((entries[0]["request"] as? [String: Any])?["queryString"] as? [[String: String]])
        XCTAssertEqual(query, [["name": "b", "value": "2"], ["name": "a", "value": "1"]])
        XCTAssertEqual((entries[0]["response"] as? [String: Any])?["statusText"] as? String, "OK")
    }

    func testBinaryBodiesAreBase64AndTextBodiesAreText() throws {
        // Given
        let har = try HAR(contentsOf: recordSample())
        // Then
        XCTAssertEqual(har.log.entries[0].response.content.text, #"{"id":1}"#)
        XCTAssertNil(har.log.entries[0].response.content.encoding)
        let logo = har.log.entries[1].response.content
        XCTAssertEqual(logo.encoding, "base64")
        XCTAssertEqual(logo.text, Data([0x89, 0x50, 0x4E, 0x47, 0xFF, 0x00]).base64EncodedString())
        XCTAssertEqual(logo.size, 6)
        let upload = try XCTUnwrap(har.log.entries[2].request.postData)
        XCTAssertEqual(upload.encoding, "base64")
        XCTAssertEqual(upload.data, Data([0x00, 0xC3, 0x28, 0xFF]))
        XCTAssertEqual(har.log.entries[2].request.bodySize, 4)
    }

    /// Binary bodies whose first byte happens to be `{` or `[` (a BSON document 91 bytes long starts with 0x5B) are
    /// not JSON: they are recorded, replayed and matched byte for byte, not withheld as JSON that cannot be read.
    func testBinaryBodiesStartingLikeJSONRoundTripExactly() throws {
        // Given: an upload and an answer that are not UTF-8, each starting with a JSON opening character
        let sent = Data([0x7B, 0x00, 0xFF, 0x10, 0x80, 0x7D])
        let answer = Data([0x5B, 0x00, 0x00, 0x00, 0x02, 0xFE, 0xFF, 0x5D])
        let file = folder.appendingPathComponent("binary.har")
        let recorder = RecordingTransport(
            fileURL: file,
            wrapping: FakeTransport.answering(.data(answer, headers: ["Content-Type": "application/bson"])),
            mode: .record)
        let upload = try connectRequest(
            .post, "http://api.test/blob", headers: [.contentType: "application/octet-stream"], body: sent)
        // When
        _ = try recorder.send(upload, transfer: TransferOptions()).wait()
        // Then: the file holds both as they were
        let entry = try XCTUnwrap(HAR(contentsOf: file).log.entries.first)
        XCTAssertEqual(entry.request.postData?.data, sent)
        XCTAssertEqual(entry.response.content.data, answer)
        // When: replayed, another binary upload of the same start does not match; the same one gets the answer
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        var other = upload
        other.body = .bytes(Data([0x7B, 0x00, 0xFF, 0x10, 0x81, 0x7D]))
        XCTAssertEqual(try recordingError(of: failure(of: replay.send(other, transfer: .init()))).reason, .noMatch)
        XCTAssertEqual(try replay.send(upload, transfer: TransferOptions()).wait().data, answer)
    }

    func testFileIsPrettyPrintedWithSortedKeys() throws {
        // Given
        let file = try recordSample()
        let text = try String(contentsOf: file, encoding: .utf8)
        // Then: re-encoding the parsed file gives the same bytes (deterministic), indented, keys in order
        XCTAssertEqual(try HAR(contentsOf: file).encoded(), try Data(contentsOf: file))
        XCTAssertTrue(text.contains("\n  \"log\" : {"), String(text.prefix(200)))
        let cache = try XCTUnwrap(text.range(of: "\"cache\""))
        let request = try XCTUnwrap(text.range(of: "\"request\""))
        let timings = try XCTUnwrap(text.range(of: "\"timings\""))
        XCTAssertLessThan(cache.lowerBound, request.lowerBound)
        XCTAssertLessThan(request.lowerBound, timings.lowerBound)
        let names = try HAR(contentsOf: file).log.entries[0].response.headers.map { $0.name.lowercased() }
        XCTAssertGreaterThan(names.count, 1)
        XCTAssertEqual(names, names.sorted(), "header fields in a stable order")
    }

    /// A browser's export holds the secrets it sent: its requests are redacted as live ones are, so a request with an
    /// API key and a password matches (it never did: the live side's were placeholders), and no message shows them.
    func testABrowsersExportWithSecretsReplays() throws {
        let export = #"""
            {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "entries": [{
              "startedDateTime": "2024-05-01T10:00:00.123Z", "time": 10,
              "request": {"method": "POST", "url": "https://example.com/login?api_key=ak-EXPORTED-1", "httpVersion": "h2",
                "headers": [{"name": "authorization", "value": "Bearer tok-EXPORTED-2"},
                            {"name": "content-type", "value": "application/json"}],
                "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0,
                "postData": {"mimeType": "application/json", "text": "{\"password\":\"pw-EXPORTED-3\",\"user\":\"amy\"}"}},
              "response": {"status": 200, "statusText": "", "httpVersion": "h2",
                "headers": [{"name": "content-type", "value": "application/json"}],
                "content": {"size": 2, "mimeType": "application/json", "text": "{}"},
                "redirectURL": "", "headersSize": -1, "bodySize": -1},
              "cache": {}, "timings": {"send": 0, "wait": 10, "receive": 0}}]}}
            """#
        let file = folder.appendingPathComponent("export-secrets.har")
        try Data(export.utf8).write(to: file)
        let replayer = RecordingTransport(fileURL: file, mode: .replay)
        var request = try connectRequest(
            .post, "https://example.com/login?api_key=ak-LIVE-1",
            headers: [.authorization: "Bearer tok-LIVE-2", .contentType: "application/json"])
        request.httpBody = Data(#"{"password":"pw-LIVE-3","user":"amy"}"#.utf8)
        let response = try replayer.send(request, transfer: TransferOptions()).wait()
        XCTAssertEqual(response.statusCode, 200)
    }

    /// The messages about an export's entries (unused, or with a body that cannot be read) show its URLs redacted.
    func testNoMessageAboutABrowsersExportShowsTheSecretsInItsURLs() throws {
        // Given: an export of a call with a key in its query and, by a hand's edit, a body that is not base64
        let export = #"""
            {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "entries": [{
              "startedDateTime": "2024-05-01T10:00:00.123Z", "time": 10,
              "request": {"method": "GET", "url": "https://amy:pw-EXPORTED-4@example.com/a?api_key=ak-EXPORTED-5"},
              "response": {"status": 200, "content": {"mimeType": "text/plain", "text": "%%", "encoding": "base64"}},
              "timings": {"send": 0, "wait": 10, "receive": 0}}]}}
            """#
        let file = folder.appendingPathComponent("export-messages.har")
        try Data(export.utf8).write(to: file)
        // When: left unused
        XCTAssertThrowsError(try RecordingTransport(fileURL: file, mode: .replay).verifyAllRecordingsUsed()) { error in
            // Then
            let text = "\(error)"
            XCTAssertTrue(text.contains("example.com/a"), text)
            XCTAssertFalse(text.contains("ak-EXPORTED-5"), text)
            XCTAssertFalse(text.contains("pw-EXPORTED-4"), text)
        }
        // When: replayed
        let request = try connectRequest(.get, "https://amy:pw-LIVE-4@example.com/a?api_key=ak-LIVE-5")
        let error = try failure(of: RecordingTransport(fileURL: file, mode: .replay).send(request, transfer: .init()))
        // Then: it fails for its body, naming the URL without its secrets
        XCTAssertEqual(try recordingError(of: error).reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("example.com/a"), error.message)
        XCTAssertFalse(error.message.contains("ak-EXPORTED-5"), error.message)
        XCTAssertFalse(error.message.contains("pw-EXPORTED-4"), error.message)
    }

    func testABrowsersExportReplays() throws {
        // Given: the shape Chrome and Firefox export, with fields this model does not know and some it lacks
        let export = #"""
            {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"},
              "pages": [{"startedDateTime": "2024-05-01T10:00:00.000Z", "id": "page_1", "title": "x", "pageTimings": {}}],
              "entries": [{
                "_initiator": {"type": "script"}, "_priority": "High", "_resourceType": "fetch",
                "cache": {}, "connection": "443", "pageref": "page_1", "serverIPAddress": "93.184.216.34",
                "startedDateTime": "2024-05-01T10:00:00.123Z", "time": 41.5,
                "request": {"method": "GET", "url": "https://example.com/api/items?id=7", "httpVersion": "h2",
                  "headers": [{"name": ":authority", "value": "example.com"}, {"name": "accept", "value": "*/*"}],
                  "queryString": [{"name": "id", "value": "7"}], "cookies": [], "headersSize": -1, "bodySize": 0},
                "response": {"status": 200, "statusText": "", "httpVersion": "h2",
                  "headers": [{"name": "content-type", "value": "application/json"}, {"name": "x-served-by", "value": "edge-1"}],
                  "content": {"size": 22, "mimeType": "application/json", "text": "{\"id\":7,\"name\":\"pen\"}"},
                  "redirectURL": "", "headersSize": -1, "bodySize": -1, "_transferSize": 180, "_error": null},
                "timings": {"blocked": 1.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.5, "wait": 38.0,
                  "receive": 1.5, "_blocked_queueing": 0.8}
              }]}}
            """#
        let file = folder.appendingPathComponent("export.har")
        try Data(export.utf8).write(to: file)
        let replayer = RecordingTransport(fileURL: file, mode: .replay)
        // When
        let request = try connectRequest(.get, "https://example.com/api/items?id=7", headers: [.accept: "*/*"])
        let response = try replayer.send(request, transfer: TransferOptions()).wait()
        // Then
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.data, Data(#"{"id":7,"name":"pen"}"#.utf8))
        XCTAssertEqual(response.header("X-Served-By"), "edge-1")
        XCTAssertEqual(replayer.entries.first?.timings.total, 41.5)
    }
}

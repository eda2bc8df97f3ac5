import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A replayed answer is held to the `Content-Length` it was recorded with, as a live engine holds a body to it: a
/// recording whose body is shorter or longer than its stated length (a file edited by hand, a browser's export that
/// left the body out) fails typed, naming the file, rather than handing over a body the length says is not whole.
final class RecordingDeclaredLengthTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// A recording of `GET http://api.test/report` answered 200 with `body` and the header fields `headers`.
    private func recording(_ name: String, body: String, headers: [(String, String)]) throws -> URL {
        let fields = headers.map { #"{"name": "\#($0.0)", "value": "\#($0.1)"}"# }.joined(separator: ", ")
        let text = """
            {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": [{
              "startedDateTime": "2024-01-01T00:00:00.000Z", "time": 1,
              "request": {"method": "GET", "url": "http://api.test/report", "httpVersion": "HTTP/1.1", "cookies": [],
                          "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
              "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                           "headers": [\(fields)],
                           "content": {"size": 0, "mimeType": "text/plain", "text": "\(body)"},
                           "redirectURL": "", "headersSize": -1, "bodySize": -1},
              "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}]}}
            """
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    func testABodyShorterOrLongerThanItsRecordedLengthFailsNamingTheFile() throws {
        for (length, body) in [("20", "eight by"), ("3", "eight by"), ("8", "")] {
            let file = try recording(
                "length-\(length)-\(body.count).har", body: body, headers: [("Content-Length", length)])
            let destination = folder.appendingPathComponent("report-\(length).bin")
            var streamed = TransferOptions()
            streamed.streaming = StreamingOptions()
            for transfer in [TransferOptions(), TransferOptions(destination: destination), streamed] {
                // Given
                let replay = RecordingTransport(fileURL: file, mode: .replay)
                // When
                let error = try failure(
                    of: replay.send(connectRequest(.get, "http://api.test/report"), transfer: transfer))
                // Then
                let recording = try recordingError(of: error)
                XCTAssertEqual(recording.reason, .unreadableRecording, "\(length): \(error)")
                XCTAssertTrue(error.message.contains(file.lastPathComponent), error.message)
                XCTAssertTrue(
                    error.message.contains("\(body.utf8.count) bytes")
                        && error.message.contains("Content-Length \(length)"),
                    error.message)
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), "no file for a body not whole")
        }
    }

    func testABodyOfItsRecordedLengthOrWhoseLengthCountsOtherBytesReplays() throws {
        let cases: [(name: String, headers: [(String, String)])] = [
            ("whole.har", [("Content-Length", "8")]),
            // The length of the encoded body, which the recording holds decoded (a browser's export).
            ("encoded.har", [("Content-Encoding", "gzip"), ("Content-Length", "30")]),
            ("none.har", []),
        ]
        for (name, headers) in cases {
            let file = try recording(name, body: "eight by", headers: headers)
            let replay = RecordingTransport(fileURL: file, mode: .replay)
            let response = try replay.send(connectRequest(.get, "http://api.test/report"), transfer: .init()).wait()
            XCTAssertEqual(response.data, Data("eight by".utf8), name)
        }
    }

    /// A placeholder filled on replay changes the body's length: the length replayed is the filled body's, not the
    /// recorded one, which would say the answer is shorter or longer than it is.
    func testAFilledPlaceholderReplaysWithTheLengthOfTheFilledBody() throws {
        let body = "token=<redacted:access_token>"
        let file = try recording("filled.har", body: body, headers: [("Content-Length", "\(body.utf8.count)")])
        let replay = RecordingTransport(
            fileURL: file, mode: .replay, placeholderValues: ["access_token": "a-much-longer-test-token"])
        let response = try replay.send(connectRequest(.get, "http://api.test/report"), transfer: .init()).wait()
        XCTAssertEqual(response.data, Data("token=a-much-longer-test-token".utf8))
        XCTAssertEqual(response.header("Content-Length"), "\(response.data.count)")
    }
}

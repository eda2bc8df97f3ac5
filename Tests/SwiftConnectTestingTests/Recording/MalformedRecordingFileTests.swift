import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A recording file that is not what a replay can read (empty, not JSON, not UTF-8, a field of the wrong type or
/// missing, another format's version, a folder) fails each request with a typed error that names the file and says
/// what is wrong.
final class MalformedRecordingFileTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// A valid recording of `GET http://api.test/todos`, answered 200 `{"id":1}`, as text to be damaged.
    private static let valid = """
        {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": [{
          "startedDateTime": "2024-01-01T00:00:00.000Z", "time": 1,
          "request": {"method": "GET", "url": "http://api.test/todos", "httpVersion": "HTTP/1.1", "cookies": [],
                      "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
          "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [],
                       "content": {"size": 8, "mimeType": "application/json", "text": "{\\"id\\":1}"},
                       "redirectURL": "", "headersSize": -1, "bodySize": 8},
          "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}]}}
        """

    /// The error a replay of the file `name` holding `contents` gives `GET http://api.test/todos`.
    private func replayError(_ name: String, _ contents: Data) throws -> (RecordingError, ConnectError) {
        let file = folder.appendingPathComponent(name)
        try contents.write(to: file)
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let error = try failure(of: replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.fileURL, file)
        XCTAssertTrue(error.message.contains(name), error.message)
        return (recording, error)
    }

    func testTheValidFileReplays() throws {
        // The file the other tests damage replays when whole.
        let file = folder.appendingPathComponent("valid.har")
        try Data(Self.valid.utf8).write(to: file)
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let response = try replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()).wait()
        XCTAssertEqual(response.data, Data(#"{"id":1}"#.utf8))
    }

    func testAnEmptyFileIsUnreadable() throws {
        let (recording, _) = try replayError("empty.har", Data())
        XCTAssertEqual(recording.reason, .unreadableRecording)
    }

    func testAFileThatIsNotUTF8IsUnreadable() throws {
        // Given: the text in Latin-1 with an `é` (0xE9), which is no UTF-8
        var bytes = Data(Self.valid.utf8)
        bytes.replaceSubrange(bytes.range(of: Data("test".utf8))!, with: Data([0x74, 0xE9, 0x73, 0x74]))
        let (recording, _) = try replayError("latin1.har", bytes)
        XCTAssertEqual(recording.reason, .unreadableRecording)
    }

    func testAStatusOfTheWrongTypeIsUnreadableAndNamed() throws {
        let text = Self.valid.replacingOccurrences(of: #""status": 200"#, with: #""status": "200""#)
        let (recording, error) = try replayError("string-status.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("status"), error.message)
    }

    func testAnEntryWithoutAResponseIsUnreadableAndNamed() throws {
        let text = Self.valid.replacingOccurrences(of: #""response": {"status""#, with: #""answer": {"status""#)
        let (recording, error) = try replayError("no-response.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("response"), error.message)
    }

    func testEntriesThatAreNotAListAreUnreadable() throws {
        let (recording, _) = try replayError("object-entries.har", Data(#"{"log": {"entries": {}}}"#.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
    }

    func testJSONThatIsNotAnArchiveIsUnreadable() throws {
        let (recording, _) = try replayError("array.har", Data("[]".utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
    }

    func testAnotherFormatVersionIsUnreadableAndNamed() throws {
        // Given: an archive of a HAR version this library does not know
        let text = Self.valid.replacingOccurrences(of: #""version": "1.2""#, with: #""version": "2.0""#)
        // Then: the request fails saying why, rather than being answered from a format read by guesswork
        let (recording, error) = try replayError("v2.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("2.0"), error.message)
    }

    func testTheVersionsOfHAR1Replay() throws {
        for version in ["1.1", "1.2"] {
            let file = folder.appendingPathComponent("v\(version).har")
            let text = Self.valid.replacingOccurrences(of: #""version": "1.2""#, with: #""version": "\#(version)""#)
            try Data(text.utf8).write(to: file)
            let replay = RecordingTransport(fileURL: file, mode: .replay)
            let response = try replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()).wait()
            XCTAssertEqual(response.statusCode, 200, version)
        }
    }

    func testAFolderInPlaceOfTheFileIsUnreadableInReplay() throws {
        // Given: a folder where the recording should be
        let file = folder.appendingPathComponent("folder.har")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        // When
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let error = try failure(of: replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("folder.har"), error.message)
        XCTAssertTrue(error.message.contains("directory"), error.message)
    }

    func testRecordingOverAFolderFailsAndKeepsTheFolder() throws {
        // Given: a folder, with a file in it, where the recording should go
        let file = folder.appendingPathComponent("folder.har")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        let inside = file.appendingPathComponent("keep.txt")
        try Data("keep".utf8).write(to: inside)
        // When
        let recorder = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        let error = try failure(of: recorder.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then: a typed error naming the file; the folder and its file are untouched
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .writeFailed)
        XCTAssertTrue(error.message.contains("folder.har"), error.message)
        XCTAssertEqual(try Data(contentsOf: inside), Data("keep".utf8))
    }

    func testRecordingIntoAFolderThatCannotBeMadeFailsNamingTheFile() throws {
        // Given: the recording's folder would be where a file is
        let blocker = folder.appendingPathComponent("blocker")
        try Data("file".utf8).write(to: blocker)
        let file = blocker.appendingPathComponent("inside.har")
        // When
        let recorder = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: "{}")), mode: .record)
        let error = try failure(of: recorder.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .writeFailed)
        XCTAssertTrue(error.message.contains("inside.har"), error.message)
        XCTAssertEqual(try Data(contentsOf: blocker), Data("file".utf8))
    }

    func testAStatusNoHTTPAnswerHasIsUnreadableAndSaidSo() throws {
        for status in [-1, 1000] {
            let text = Self.valid.replacingOccurrences(of: #""status": 200"#, with: #""status": \#(status)"#)
            let (recording, error) = try replayError("status\(status).har", Data(text.utf8))
            XCTAssertEqual(recording.reason, .unreadableRecording)
            XCTAssertTrue(error.message.contains("status \(status), which no HTTP answer has"), error.message)
            XCTAssertFalse(error.message.contains("got no response"), error.message)
        }
    }

    func testStatusZeroWithoutAFailureIsUnreadableAndSaidToBeARequestThatGotNoResponse() throws {
        // Given: a browser's export of a request that got no response, which it writes with status 0
        let text = Self.valid.replacingOccurrences(of: #""status": 200"#, with: #""status": 0"#)
        let (recording, error) = try replayError("status0.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("status 0 and no _failure"), error.message)
    }

    func testAResponseHeaderNoServerSendsReplaysWithoutStoppingTheProcess() throws {
        // Given: header names and values no server sends (empty, with a blank, a line break)
        let text = Self.valid.replacingOccurrences(
            of: #""cookies": [], "headers": []"#,
            with: #""cookies": [], "headers": [{"name": "", "value": "x"}, {"name": "A B", "value": "a\r\nb"}]"#)
        XCTAssertNotEqual(text, Self.valid, "the response's fields were replaced")
        let file = folder.appendingPathComponent("headers.har")
        try Data(text.utf8).write(to: file)
        // When
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let result = try replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init())
            .waitForResult(timeout: 20)
        // Then: an answer or a typed error, not a crash
        if case .failure(let error) = result { XCTAssertTrue(error is ConnectError, "\(error)") }
    }

    /// A header no server can send replayed as one field (`a\r\nSet-Cookie: …` handed over whole); it fails as the
    /// damaged file it is, naming the field, as an engine fails on such a line.
    func testAResponseHeaderNoServerSendsIsUnreadableAndNamed() throws {
        let headers = [
            (#"{"name": "X-Note", "value": "a\r\nSet-Cookie: session=stolen"}"#, #""X-Note""#),
            (#"{"name": "X-Note", "value": "a\u0000b"}"#, #""X-Note""#),
            (#"{"name": "A B", "value": "v"}"#, #""A…""#), (#"{"name": "", "value": "v"}"#, #""""#),
        ]
        for (index, (header, shown)) in headers.enumerated() {
            // The response's fields (the request's are on another line).
            let text = Self.valid.replacingOccurrences(
                of: #""cookies": [], "headers": []"#, with: #""cookies": [], "headers": [\#(header)]"#)
            XCTAssertNotEqual(text, Self.valid)
            let (recording, error) = try replayError("header\(index).har", Data(text.utf8))
            XCTAssertEqual(recording.reason, .unreadableRecording)
            XCTAssertTrue(error.message.contains("the header \(shown)"), error.message)
        }
    }

    func testAHugeDeclaredSizeIsIgnoredAndTheBodyReplaysAsRecorded() throws {
        let text = Self.valid.replacingOccurrences(of: #""size": 8"#, with: #""size": 9223372036854775807"#)
            .replacingOccurrences(of: #""bodySize": 8"#, with: #""bodySize": 9223372036854775807"#)
        let file = folder.appendingPathComponent("huge.har")
        try Data(text.utf8).write(to: file)
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let response = try replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()).wait()
        XCTAssertEqual(response.data, Data(#"{"id":1}"#.utf8))
    }

    func testARecordedFailureOfAKindNoErrorHasIsUnreadableAndNamed() throws {
        // Given: a failure edited by hand, its kind misspelt (`timedOut` is the kind)
        let text = Self.valid.replacingOccurrences(of: #""status": 200"#, with: #""status": 0"#)
            .replacingOccurrences(
                of: #""cache": {}"#, with: #""_failure": {"kind": "timeout", "message": "took too long"}, "cache": {}"#)
        // Then: the request fails saying so, rather than replaying another kind of error
        let (recording, error) = try replayError("failure-kind.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains(#"kind "timeout""#), error.message)
    }

    func testAStreamedBodyFailureOfAKindNoErrorHasIsUnreadableAndNamed() throws {
        // Given: a body that broke, its failure's kind edited to one no error has
        let text = Self.valid.replacingOccurrences(
            of: #""cache": {}"#, with: #""_bodyFailure": {"kind": "reset", "message": "cut"}, "cache": {}"#)
        // Then
        let (recording, error) = try replayError("body-failure-kind.har", Data(text.utf8))
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains(#"kind "reset""#), error.message)
    }
}

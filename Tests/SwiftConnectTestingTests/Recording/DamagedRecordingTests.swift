import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A recording file that is cut short, edited by hand or not a recording at all fails its requests with a typed
/// error naming the file, and is never overwritten by a mode that only adds to it.
final class DamagedRecordingTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// Records one `GET http://api.test/todos` answered `{"id":1}`, and returns the file's URL.
    private func recordOne(named name: String) throws -> URL {
        let file = folder.appendingPathComponent(name)
        let recorder = RecordingTransport(
            fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"id":1}"#)), mode: .record)
        _ = try recorder.send(connectRequest(.get, "http://api.test/todos"), transfer: TransferOptions()).wait()
        return file
    }

    /// The file's archive, changed by `edit`, written back.
    private func edit(_ file: URL, _ edit: (inout HAR) -> Void) throws {
        var har = try HAR(contentsOf: file)
        edit(&har)
        try har.encoded().write(to: file)
    }

    func testATruncatedFileFailsEveryModeThatReadsItNamingTheFileAndIsNotOverwritten() throws {
        // Given: a recording cut in half, as a disk full or a crash of another tool leaves it
        let file = try recordOne(named: "cut.har")
        let whole = try Data(contentsOf: file)
        let cut = whole.prefix(whole.count / 2)
        try cut.write(to: file)
        for mode in [RecordingMode.replay, .recordMissing] {
            // When
            let transport = RecordingTransport(
                fileURL: file, wrapping: FakeTransport.answering(.json(string: #"{"id":2}"#)), mode: mode)
            let error = try failure(
                of: transport.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
            // Then: a typed error that names the file; the file is as it was
            let recording = try recordingError(of: error)
            XCTAssertEqual(recording.reason, .unreadableRecording, "\(mode)")
            XCTAssertEqual(recording.fileURL, file)
            XCTAssertTrue(error.message.contains("cut.har"), error.message)
            XCTAssertEqual(try Data(contentsOf: file), cut, "\(mode) changed the damaged file")
        }
    }

    func testARecordedBodyThatIsNotBase64FailsNamingTheFile() throws {
        // Given: an answer's body marked base64 whose text is not
        let file = try recordOne(named: "bad-body.har")
        try edit(file) { har in
            har.log.entries[0].response.content.text = "not base64!"
            har.log.entries[0].response.content.encoding = "base64"
        }
        // When
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let error = try failure(of: replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .unreadableRecording)
        XCTAssertTrue(error.message.contains("bad-body.har"), error.message)
        XCTAssertTrue(error.message.contains("base64"), error.message)
    }

    func testARecordedRequestThatCannotBeReadIsNamedWhenNothingMatches() throws {
        // Given: the recorded request's body marked base64 whose text is not
        let file = try recordOne(named: "bad-request.har")
        try edit(file) { har in
            har.log.entries[0].request.postData = HAR.PostData(Data(), mimeType: "application/json")
            har.log.entries[0].request.postData?.text = "not base64!"
            har.log.entries[0].request.postData?.encoding = "base64"
        }
        // When
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        let error = try failure(of: replay.send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then: the error says that the recording has an entry it could not read, rather than none at all
        let recording = try recordingError(of: error)
        XCTAssertEqual(recording.reason, .noMatch)
        XCTAssertTrue(error.message.contains("bad-request.har"), error.message)
        XCTAssertFalse(error.message.contains("holds no requests"), error.message)
        XCTAssertTrue(error.message.contains("entry 1"), error.message)
    }

    func testARecordedBodyInAnEncodingOtherThanBase64IsNamedWithItsEncoding() throws {
        // Given: an answer's body, then a request's, marked with an encoding a replay does not read
        let answer = try recordOne(named: "gzip-answer.har")
        try edit(answer) { har in har.log.entries[0].response.content.encoding = "gzip" }
        let request = try recordOne(named: "gzip-request.har")
        try edit(request) { har in
            har.log.entries[0].request.postData = HAR.PostData(Data("x".utf8), mimeType: "text/plain")
            har.log.entries[0].request.postData?.encoding = "gzip"
        }
        // When
        let answerError = try failure(
            of: RecordingTransport(fileURL: answer, mode: .replay)
                .send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        let requestError = try failure(
            of: RecordingTransport(fileURL: request, mode: .replay)
                .send(connectRequest(.get, "http://api.test/todos"), transfer: .init()))
        // Then: each names the encoding, not base64 the text is not meant to be
        XCTAssertEqual(try recordingError(of: answerError).reason, .unreadableRecording)
        XCTAssertTrue(answerError.message.contains(#"encoding "gzip""#), answerError.message)
        XCTAssertFalse(answerError.message.contains("not valid base64"), answerError.message)
        XCTAssertTrue(requestError.message.contains(#"encoding "gzip""#), requestError.message)
        XCTAssertFalse(requestError.message.contains("not valid base64"), requestError.message)
    }
}

/// A streamed answer's pieces (`_chunks`) edited to sizes and times no recording has: replayed without stopping the
/// process.
extension DamagedRecordingTests {
    private static let feedURL = URL(string: "http://api.test")!

    /// Records a streamed `GET http://api.test/feed` answered in two pieces, `first,` and `second`.
    private func recordStream(named name: String) async throws -> URL {
        let file = folder.appendingPathComponent(name)
        let fake = FakeTransport()
        fake.stub(.get, "/feed", with: .stream([Data("first,".utf8), Data("second".utf8)]))
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        for try await _ in Connect(transport: recorder, retryPolicy: nil).stream(Route("/feed", baseURL: Self.feedURL))
        {}
        XCTAssertTrue(recorder.waitUntilRecorded())
        return file
    }

    func testAPieceSizeNearIntMaxReplaysTheBodyWhole() async throws {
        // Given: three pieces, the middle one edited to a size near `Int.max` (`offset + size` overflowed)
        let file = try await recordStream(named: "huge-size.har")
        try edit(file) { har in
            har.log.entries[0].chunks = [
                HAR.Chunk(time: 0, size: 1), HAR.Chunk(time: 0, size: .max), HAR.Chunk(time: 0, size: 1),
            ]
        }
        // When
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        var pieces: [String] = []
        for try await piece in Connect(transport: replay, retryPolicy: nil).stream(
            Route("/feed", baseURL: Self.feedURL))
        {
            pieces.append(String(decoding: piece, as: UTF8.self))
        }
        // Then: the first byte, then the rest of the body; nothing is left for the last piece
        XCTAssertEqual(pieces, ["f", "irst,second"])
    }

    func testAPieceTimeOfAThousandYearsIsAWaitThatTheIdleTimeoutEndsWithLatencies() async throws {
        // Given: the second piece edited to arrive 1e300 ms after the request (its nanoseconds overflowed UInt64)
        let file = try await recordStream(named: "huge-time.har")
        try edit(file) { har in
            har.log.entries[0].chunks = [HAR.Chunk(time: 0, size: 6), HAR.Chunk(time: 1e300, size: 6)]
        }
        // When: replayed with latencies, under an idle timeout of half a second
        let replay = RecordingTransport(fileURL: file, mode: .replay, replaysLatencies: true)
        let stream = Connect(transport: replay, retryPolicy: nil).stream(
            Route("/feed", baseURL: Self.feedURL), streaming: StreamingOptions(idleTimeout: 0.5))
        var pieces: [String] = []
        do {
            for try await piece in stream { pieces.append(String(decoding: piece, as: UTF8.self)) }
            XCTFail("the second piece comes after the idle timeout")
        } catch let error as ConnectError {
            // Then: the first piece, then the idle timeout ends the wait for the second
            XCTAssertEqual(error.kind, .timedOut)
        }
        XCTAssertEqual(pieces, ["first,"])
    }
}

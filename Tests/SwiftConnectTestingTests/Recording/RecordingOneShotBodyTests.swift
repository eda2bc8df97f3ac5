import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A one-shot body (an async sequence, an `InputStream`) is held to the length it announces in every mode, as every
/// engine holds it: a body of another length fails with the core's error, and replay never answers it.
final class RecordingOneShotBodyTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    private var fileURL: URL { folder.appendingPathComponent("exchange.har") }

    /// A POST of `bytes` as a one-shot body announcing `length`.
    private func streamed(_ bytes: Data, announcing length: Int64?) throws -> ConnectRequest {
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(bytes)
            continuation.finish()
        }
        var request = try connectRequest(.post, "http://api.test/upload")
        request.body = .stream(ConnectRequest.OneShotStream(chunks, length: length))
        return request
    }

    /// Records a POST of `abc` answered `stored`.
    private func recordUpload() throws {
        let upstream = FakeTransport.answering(.data(Data("stored".utf8)))
        let recorder = RecordingTransport(fileURL: fileURL, wrapping: upstream, mode: .record)
        let live = try recorder.send(try streamed(Data("abc".utf8), announcing: 3), transfer: TransferOptions()).wait()
        XCTAssertEqual(live.data, Data("stored".utf8))
    }

    func testAReplayedOneShotBodyShorterThanItAnnouncedFailsAsOnTheWire() throws {
        // Given
        try recordUpload()
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay)
        // When: the same bytes, announcing five
        let error = try failure(
            of: replayer.send(try streamed(Data("abc".utf8), announcing: 5), transfer: TransferOptions()))
        // Then: the core's error for a miscounted body, the recording unused
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("announced 5"), error.message)
        XCTAssertEqual(replayer.unusedEntries.count, 1)
    }

    func testAReplayedOneShotBodyLongerThanItAnnouncedFailsAsOnTheWire() throws {
        // Given
        try recordUpload()
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay)
        // When: the same bytes, announcing two
        let error = try failure(
            of: replayer.send(try streamed(Data("abc".utf8), announcing: 2), transfer: TransferOptions()))
        // Then
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("2 bytes it announced"), error.message)
        XCTAssertEqual(replayer.unusedEntries.count, 1)
    }

    func testARecordedOneShotBodyOfAnotherLengthIsNeitherSentNorRecorded() throws {
        // Given
        let upstream = FakeTransport.answering(.data(Data("stored".utf8)))
        let recorder = RecordingTransport(fileURL: fileURL, wrapping: upstream, mode: .record)
        // When
        let error = try failure(
            of: recorder.send(try streamed(Data("abc".utf8), announcing: 5), transfer: TransferOptions()))
        // Then
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertEqual(upstream.requests.count, 0)
        XCTAssertEqual(recorder.entries.count, 0)
    }

    func testAOneShotBodyOfUnknownLengthReplaysByItsBytes() throws {
        // Given
        try recordUpload()
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay)
        // When
        let replayed = try replayer.send(try streamed(Data("abc".utf8), announcing: nil), transfer: TransferOptions())
            .wait()
        // Then
        XCTAssertEqual(replayed.data, Data("stored".utf8))
    }
}

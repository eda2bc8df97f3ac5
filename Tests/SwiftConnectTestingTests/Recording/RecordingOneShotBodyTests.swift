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

    /// A body of unknown length is held to the `Content-Length` its caller set, as on the wire: one of another length
    /// fails in replay too, though the matcher, which ignores fields, would find its recording.
    func testAOneShotBodyOfUnknownLengthIsHeldToItsContentLengthField() throws {
        // Given
        try recordUpload()
        let replayer = RecordingTransport(fileURL: fileURL, mode: .replay)
        var request = try streamed(Data("abc".utf8), announcing: nil)
        request.headerFields[.contentLength] = "5"
        // When
        let error = try failure(of: replayer.send(request, transfer: TransferOptions()))
        // Then
        XCTAssertEqual(error.kind, .invalidRequest)
        XCTAssertTrue(error.message.contains("announced 5"), error.message)
        XCTAssertEqual(replayer.unusedEntries.count, 1)
        let replayed = try RecordingTransport(fileURL: fileURL, mode: .replay).send(
            try streamed(Data("abc".utf8), announcing: nil).withContentLength("3"), transfer: TransferOptions()
        ).wait()
        XCTAssertEqual(replayed.data, Data("stored".utf8))
    }
}

extension ConnectRequest {
    fileprivate func withContentLength(_ value: String) -> ConnectRequest {
        var request = self
        request.headerFields[.contentLength] = value
        return request
    }
}

// MARK: - Cancellation while the body is read

/// A one-shot body of two pieces, `ab` then `c`, that says when it is asked for the second one and gives it only once
/// `release` is signalled, then says when the transport has let go of it.
private final class GatedBody: AsyncSequence, Sendable {
    typealias Element = Data

    /// Signalled when the second piece is asked for.
    let askedForSecond = DispatchSemaphore(value: 0)
    /// Signalled by the test to give the second piece.
    let release = DispatchSemaphore(value: 0)
    /// Signalled when the body is released: the transport is done with it.
    let released: DispatchSemaphore

    init(released: DispatchSemaphore) {
        self.released = released
    }

    deinit { released.signal() }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: GatedBody
        var served = 0

        mutating func next() async throws -> Data? {
            served += 1
            switch served {
            case 1:
                return Data("ab".utf8)
            case 2:
                body.askedForSecond.signal()
                let release = body.release
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().async {
                        release.wait()
                        continuation.resume()
                    }
                }
                return Data("c".utf8)
            default:
                return nil
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}

extension RecordingOneShotBodyTests {
    func testACallCancelledWhileItsOneShotBodyIsReadSendsNothing() throws {
        // Given: a recording call whose body's second piece is being waited for
        let upstream = FakeTransport.answering(.data(Data("stored".utf8)))
        let recorder = RecordingTransport(fileURL: fileURL, wrapping: upstream, mode: .record)
        let released = DispatchSemaphore(value: 0)
        var body: GatedBody? = GatedBody(released: released)
        let askedForSecond = try XCTUnwrap(body?.askedForSecond)
        let release = try XCTUnwrap(body?.release)
        var request = try connectRequest(.post, "http://api.test/upload")
        request.body = .stream(ConnectRequest.OneShotStream(try XCTUnwrap(body), length: nil))
        body = nil
        let call = recorder.send(request, transfer: TransferOptions())
        request.body = .none
        XCTAssertEqual(askedForSecond.wait(timeout: .now() + 10), .success)
        // When: the caller cancels, then the body ends
        call.cancel()
        release.signal()
        // Then: once the transport is done with the body, nothing was sent, nor recorded
        XCTAssertEqual(released.wait(timeout: .now() + 10), .success, "the transport kept the body")
        XCTAssertEqual(upstream.requests.count, 0, "a cancelled call was sent")
        XCTAssertTrue(recorder.waitUntilRecorded())
        XCTAssertEqual(recorder.entries.count, 0)
    }
}

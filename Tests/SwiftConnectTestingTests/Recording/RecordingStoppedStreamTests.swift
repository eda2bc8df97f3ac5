import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A streamed answer the reader stopped reading before its end is recorded as cut short: a replay read further
/// fails where the recording stops, rather than passing the part for the whole body.
final class RecordingStoppedStreamTests: XCTestCase {
    private static let base = URL(string: "http://api.test")!

    func testAStreamTheReaderStoppedReplaysItsPiecesThenFailsRatherThanEndingAsComplete() async throws {
        // Given: a feed that sends one piece, then waits (its end never comes while recording)
        let folder = try makeRecordingFolder(for: self)
        let file = folder.appendingPathComponent("stopped.har")
        let fake = FakeTransport()
        fake.stub(
            .get, "/feed",
            with: .stream { body in
                guard await body.send(Data("one".utf8)) else { return }
                let never = AsyncStream<Never> { _ in }
                for await _ in never {}
                body.finish(throwing: nil)
            })
        let recorder = RecordingTransport(fileURL: file, wrapping: fake, mode: .record)
        // When: the recording reader takes the first piece and stops
        for try await piece in Connect(transport: recorder, retryPolicy: nil).stream(Route("/feed", baseURL: Self.base))
        {
            XCTAssertEqual(piece, Data("one".utf8))
            break
        }
        XCTAssertTrue(recorder.waitUntilRecorded())
        // Then: a replay that reads on gets the piece, then a typed error, not the end of a complete body
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        var pieces: [Data] = []
        do {
            for try await piece in Connect(transport: replay, retryPolicy: nil).stream(
                Route("/feed", baseURL: Self.base))
            {
                pieces.append(piece)
            }
            XCTFail("the replay ended as if the body were complete: \(pieces)")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .transport)
            XCTAssertTrue(error.message.contains("stopped.har"), error.message)
            XCTAssertTrue(error.message.contains("stopped reading"), error.message)
        }
        XCTAssertEqual(pieces, [Data("one".utf8)])
    }

    /// A streamed answer that broke, replayed to a request that reads the body whole, fails as the broken body did:
    /// it was answered with the pieces before the break, as if they were the whole body.
    func testABrokenStreamReplayedWholeFailsRatherThanAnsweringItsPiecesAsTheBody() throws {
        // Given: a recorded stream that broke after one piece
        let folder = try makeRecordingFolder(for: self)
        let file = folder.appendingPathComponent("broken.har")
        var entry = HAR.Entry(
            startedDateTime: "2024-05-01T10:00:00.000Z",
            request: HAR.Request(
                method: "GET", url: "http://api.test/feed", headers: [], queryString: [], postData: nil),
            response: HAR.Response(status: 200, headers: [], content: HAR.Content(Data("one".utf8), mimeType: "")),
            timings: HAR.Timings(send: 0, wait: 1, receive: 1))
        entry.chunks = [HAR.Chunk(time: 2, size: 3)]
        entry.bodyFailure = HAR.Failure(
            kind: ConnectError.Kind.connectionLost.rawValue, message: "the connection was lost",
            urlErrorCode: URLError.Code.networkConnectionLost.rawValue)
        try HAR(entries: [entry]).encoded().write(to: file)
        let replay = RecordingTransport(fileURL: file, mode: .replay)
        // When: read whole
        let error = try failure(of: replay.send(try connectRequest(.get, "http://api.test/feed"), transfer: .init()))
        // Then
        XCTAssertEqual(error.kind, .connectionLost)
    }
}

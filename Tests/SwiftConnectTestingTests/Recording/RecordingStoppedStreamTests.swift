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
}

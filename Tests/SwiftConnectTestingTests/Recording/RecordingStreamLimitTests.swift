import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A streamed answer replayed under a size limit (`maxResponseBytes`) ends as a live one does: with
/// `.responseTooLarge` at its head when its declared length is over the limit, else at the piece that goes over it.
final class RecordingStreamLimitTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try makeRecordingFolder(for: self)
    }

    /// A replayer of a recorded stream of three 4-byte pieces, with `headers`.
    private func replayer(headers: [HAR.NameValue] = []) throws -> RecordingTransport {
        let fileURL = folder.appendingPathComponent("stream.har")
        var entry = HAR.Entry(
            startedDateTime: "2024-05-01T10:00:00.000Z",
            request: HAR.Request(
                method: "GET", url: "http://api.test/events", headers: [], queryString: [], postData: nil),
            response: HAR.Response(
                status: 200, headers: headers, content: HAR.Content(Data("aaaabbbbcccc".utf8), mimeType: "")),
            timings: HAR.Timings(send: 0, wait: 1, receive: 3))
        entry.chunks = [HAR.Chunk(time: 2, size: 4), HAR.Chunk(time: 3, size: 4), HAR.Chunk(time: 4, size: 4)]
        try HAR(entries: [entry]).encoded().write(to: fileURL)
        return RecordingTransport(fileURL: fileURL, mode: .replay)
    }

    private var limited: TransferOptions { TransferOptions(maxResponseBytes: 6, streaming: StreamingOptions()) }

    func testAReplayedStreamOverTheLimitFailsAtThePieceThatGoesOver() async throws {
        // Given
        let request = try connectRequest(.get, "http://api.test/events")
        // When
        let response = try await replayer().send(request, transfer: limited).value
        let body = try XCTUnwrap(response.bodyStream)
        var received = Data()
        var failure: (any Error)?
        do {
            while let piece = try await body.next() { received.append(piece) }
        } catch {
            failure = error
        }
        // Then: the first piece, then the limit's error
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "aaaa")
        XCTAssertEqual((failure as? ConnectError)?.kind, .responseTooLarge, "\(String(describing: failure))")
    }

    func testAReplayedStreamDeclaringALengthOverTheLimitFailsAtItsHead() throws {
        // Given
        let request = try connectRequest(.get, "http://api.test/events")
        let transport = try replayer(headers: [HAR.NameValue(name: "Content-Length", value: "12")])
        // When
        let error = try failure(of: transport.send(request, transfer: limited))
        // Then
        XCTAssertEqual(error.kind, .responseTooLarge)
        XCTAssertEqual(error.response?.statusCode, 200)
    }

    func testAReplayedStreamWithinTheLimitIsWhole() async throws {
        // Given
        let request = try connectRequest(.get, "http://api.test/events")
        let transfer = TransferOptions(maxResponseBytes: 12, streaming: StreamingOptions())
        // When
        let response = try await replayer().send(request, transfer: transfer).value
        let body = try XCTUnwrap(response.bodyStream)
        var received = Data()
        while let piece = try await body.next() { received.append(piece) }
        // Then
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "aaaabbbbcccc")
    }
}

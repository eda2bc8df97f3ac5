import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// URLSession cannot pause a transfer for a slow reader (FoundationNetworking has no way to; Apple's data tasks
/// are not paused by SwiftConnect either): the stream buffers up to its limit, then fails with a typed error
/// instead of growing memory (issue 25, item 3).
final class URLSessionStreamingTests: XCTestCase {
    func testAReaderThatFallsBehindFailsTheStreamAtTheBufferLimit() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let producerEnded = Promise<Void>()
        let firstPieceRead = Promise<Void>()
        server.route("GET", "/export") { _ in
            .stream(contentLength: nil) { write in
                let piece = Data(repeating: 0x2A, count: 64 << 10)
                guard write(piece) else { return }
                // The rest once the reader has the first piece: sent at once, 16 MiB could fill the buffer before
                // the reader asks for anything, and the first read would fail instead (seen once in CI).
                _ = try? firstPieceRead.future.wait(timeout: 30)
                for _ in 1..<256 {  // 16 MiB in all
                    guard write(piece) else { break }
                }
                producerEnded.succeed(())
            }
        }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        let stream = connect.stream(
            Route("/export", baseURL: server.baseURL), streaming: StreamingOptions(bufferLimit: 1 << 20))
        var iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertNotNil(first)
        firstPieceRead.succeed(())

        // The reader stops reading; the server sends the rest (or gives up once the client stops the transfer).
        try await producerEnded.future.value(timeout: 30)
        do {
            while try await iterator.next() != nil {}
            XCTFail("16 MiB cannot fit a 1 MiB buffer")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge, "\(error)")
            XCTAssertTrue(error.message.contains("buffer"), error.message)
        }
    }
}

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

    /// The bytes a slow reader had not yet taken when the buffer overflowed still reach it, then the typed error:
    /// the overflow dropped them, and the reader lost the megabyte it was owed.
    func testTheBytesBufferedBeforeAnOverflowReachTheReaderBeforeItsError() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let bufferLimit = 1 << 20
        let firstPieceRead = Promise<Void>()
        let sent = Promise<Int>()
        server.route("GET", "/export") { _ in
            .stream(contentLength: nil) { write in
                let piece = Data(repeating: 0x2A, count: 64 << 10)
                guard write(piece) else { return }
                _ = try? firstPieceRead.future.wait(timeout: 30)
                // 32 MiB, more than the buffer and the sockets between hold: the server is done writing only once
                // the client has read past its buffer limit (or stopped the transfer).
                var written = piece.count
                for _ in 1..<512 {
                    guard write(piece) else { break }
                    written += piece.count
                }
                sent.succeed(written)
            }
        }
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)
        let stream = connect.stream(
            Route("/export", baseURL: server.baseURL, timeout: .infinity),
            streaming: StreamingOptions(bufferLimit: bufferLimit))
        var iterator = stream.makeAsyncIterator()
        var received = try await iterator.next()?.count ?? 0
        XCTAssertGreaterThan(received, 0)
        firstPieceRead.succeed(())

        // The reader reads nothing until the server has sent (or failed to send) 32 MiB.
        let written = try await sent.future.value(timeout: 60)
        XCTAssertGreaterThan(written, bufferLimit)
        do {
            while let chunk = try await iterator.next() { received += chunk.count }
            XCTFail("32 MiB cannot fit a 1 MiB buffer")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .responseTooLarge, "\(error)")
        }
        // The buffer held more than its limit less one chunk when it overflowed, and the stream in front of it
        // 256 KiB more: all of it is the reader's.
        XCTAssertGreaterThanOrEqual(received, bufferLimit, "bytes buffered before the overflow were dropped")
    }
}

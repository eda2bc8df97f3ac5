import AsyncHTTPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwiftConnect
import XCTest

@testable import SwiftConnectAsyncHTTPClient

/// How a body written in pieces reaches AsyncHTTPClient's writer: a body of known length ends with its last write, on
/// the event loop, so the server's answer to its last byte can never be read before the body's end was told (which
/// AsyncHTTPClient fails with `requestStreamCancelled`).
final class RequestConversionTests: XCTestCase {
    private var group: MultiThreadedEventLoopGroup!

    override func setUp() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    override func tearDown() async throws {
        try await group.shutdownGracefully()
    }

    /// What the body's source and the writer saw, in order.
    private final class Log: Sendable {
        private let entries = NIOLockedValueBox<[String]>([])

        func append(_ entry: String) { entries.withLockedValue { $0.append(entry) } }

        var all: [String] { entries.withLockedValue { $0 } }
    }

    /// Chunks that log each read, and fail instead of ending when told to.
    private struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer

        let parts: [String]
        let log: Log
        var failsAtEnd = false

        struct SourceFailed: Error {}

        func makeAsyncIterator() -> Iterator { Iterator(parts: parts[...], log: log, failsAtEnd: failsAtEnd) }

        struct Iterator: AsyncIteratorProtocol {
            var parts: ArraySlice<String>
            let log: Log
            let failsAtEnd: Bool

            mutating func next() async throws -> ByteBuffer? {
                guard let part = parts.popFirst() else {
                    log.append("read end")
                    if failsAtEnd { throw SourceFailed() }
                    return nil
                }
                log.append("read \(part)")
                return ByteBuffer(string: part)
            }
        }
    }

    /// A writer that logs each write; the write of `held` waits for the returned promise.
    private func writer(log: Log, holding held: String? = nil) -> (
        HTTPClient.Body.StreamWriter, EventLoopPromise<Void>?
    ) {
        let loop = group.next()
        let heldWrite = held.map { _ in loop.makePromise(of: Void.self) }
        let writer = HTTPClient.Body.StreamWriter { data in
            guard case .byteBuffer(let buffer) = data else { return loop.makeFailedFuture(Chunks.SourceFailed()) }
            let part = String(buffer: buffer)
            log.append("write \(part)")
            if part == held, let heldWrite { return heldWrite.futureResult }
            return loop.makeSucceededFuture(())
        }
        return (writer, heldWrite)
    }

    /// A body from memory longer than a slice goes in slices, each written once the last one was: each is reported
    /// written (progress, the idle timeout) as it goes, not the whole body once at its end.
    func testALongBodyFromMemoryIsWrittenInSlicesOneAfterTheOther() async throws {
        let loop = group.next()
        let data = Data((0..<(3 * RequestConversion.sliceSize + 100)).map { UInt8(truncatingIfNeeded: $0) })
        let writes = NIOLockedValueBox<[ByteBuffer]>([])
        let pending = NIOLockedValueBox(0)
        let writer = HTTPClient.Body.StreamWriter { part in
            guard case .byteBuffer(let buffer) = part else { return loop.makeFailedFuture(Chunks.SourceFailed()) }
            // One write at a time: the next is asked for only once this one is done.
            XCTAssertEqual(pending.withLockedValue { $0 }, 0)
            pending.withLockedValue { $0 += 1 }
            writes.withLockedValue { $0.append(buffer) }
            return loop.submit { pending.withLockedValue { $0 -= 1 } }
        }
        let written = loop.makePromise(of: Void.self)
        try await RequestConversion.write(
            DataSlices(data: data), length: Int64(data.count), to: writer, ending: written)
        try await written.futureResult.get()
        let sizes = writes.withLockedValue { $0.map(\.readableBytes) }
        XCTAssertEqual(sizes, [65536, 65536, 65536, 100])
        XCTAssertEqual(Data(writes.withLockedValue { $0.flatMap { Array($0.readableBytesView) } }), data)
    }

    func testABodyOfKnownLengthEndsWithItsLastWriteOnTheEventLoop() async throws {
        // Given: a body of 5 bytes in two chunks, and a writer that holds the last write
        let log = Log()
        let loop = group.next()
        let (writer, held) = writer(log: log, holding: "de")
        let lastWrite = try XCTUnwrap(held)
        let written = loop.makePromise(of: Void.self)
        let ended = NIOLockedValueBox(false)
        written.futureResult.whenComplete { _ in ended.withLockedValue { $0 = true } }

        // When
        try await RequestConversion.write(
            Chunks(parts: ["abc", "de"], log: log), length: 5, to: writer, ending: written)

        // Then: the end was read before the last write, and the body has not ended while that write waits
        XCTAssertEqual(log.all, ["read abc", "write abc", "read de", "read end", "write de"])
        try await loop.submit {}.get()
        XCTAssertFalse(ended.withLockedValue { $0 }, "the body ended before its last write")

        // When the last write completes, the body ends in the same turn of the loop
        let endedWithIt = try await loop.submit { () -> Bool in
            lastWrite.succeed(())
            return ended.withLockedValue { $0 }
        }.get()
        XCTAssertTrue(endedWithIt)
        try await written.futureResult.get()
    }

    func testABodyOfUnknownLengthEndsWhenItsSourceDoes() async throws {
        // Given: chunked, so the server cannot answer before the end is sent
        let log = Log()
        let loop = group.next()
        let (writer, _) = writer(log: log)
        let written = loop.makePromise(of: Void.self)

        // When
        try await RequestConversion.write(
            Chunks(parts: ["abc", "de"], log: log), length: nil, to: writer, ending: written)

        // Then: each chunk read once the last was taken, no read ahead
        XCTAssertEqual(log.all, ["read abc", "write abc", "read de", "write de", "read end"])
        try await written.futureResult.get()
    }

    func testASourceFailingAtItsEndSendsNoLastChunk() async throws {
        // Given: a source that fails where it should end
        let log = Log()
        let loop = group.next()
        let (writer, _) = writer(log: log)
        let written = loop.makePromise(of: Void.self)
        defer { written.succeed(()) }

        // When / Then: the failure comes before the last chunk is written, so the server never has a whole body
        do {
            try await RequestConversion.write(
                Chunks(parts: ["abc", "de"], log: log, failsAtEnd: true), length: 5, to: writer, ending: written)
            XCTFail("the source's failure is the body's")
        } catch is Chunks.SourceFailed {}
        XCTAssertEqual(log.all, ["read abc", "write abc", "read de", "read end"])
    }

    func testAStoppedWriterEndsWhileItsWriteIsHeldBack() async throws {
        // Given: a write AsyncHTTPClient holds back, as it does for good once the server answered early
        let log = Log()
        let loop = group.next()
        let heldWrite = loop.makePromise(of: Void.self)
        let wrote = expectation(description: "the first chunk is written")
        let writer = HTTPClient.Body.StreamWriter { _ in
            wrote.fulfill()
            return heldWrite.futureResult
        }
        let written = loop.makePromise(of: Void.self)
        let ended = expectation(description: "the writer ends")
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        let writing = Task {
            do {
                try await RequestConversion.write(
                    Chunks(parts: ["abc", "de"], log: log), length: nil, to: writer, ending: written)
                outcome.withLockedValue { $0 = .success(()) }
            } catch {
                outcome.withLockedValue { $0 = .failure(error) }
            }
            ended.fulfill()
        }
        await fulfillment(of: [wrote], timeout: 5)

        // When
        writing.cancel()

        // Then: the writer ends at once, with the write still held back, and reads no further
        await fulfillment(of: [ended], timeout: 5)
        guard case .failure(let error) = outcome.withLockedValue({ $0 }) else { return XCTFail("the writer went on") }
        XCTAssertTrue(error is CancellationError, "\(error)")
        XCTAssertEqual(log.all, ["read abc"])
        heldWrite.succeed(())
        written.fail(error)
    }

    func testAnEmptyBodyOfKnownLengthEnds() async throws {
        let log = Log()
        let loop = group.next()
        let (writer, _) = writer(log: log)
        let written = loop.makePromise(of: Void.self)

        try await RequestConversion.write(Chunks(parts: [], log: log), length: 0, to: writer, ending: written)

        XCTAssertEqual(log.all, ["read end"])
        try await written.futureResult.get()
    }
}

/// A body file is opened only when the connection wants its body, after DNS, TCP and TLS: a pipe put in its place
/// meanwhile (a rename over it) is refused at once, not waited on in `open`, which held a thread of the shared pool
/// until a writer came.
final class FileChunksTests: XCTestCase {
    func testAPipeInPlaceOfTheFileIsRefusedWithoutWaiting() async throws {
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID().uuidString)")
        guard mkfifo(fifo.path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { try? FileManager.default.removeItem(at: fifo) }
        var chunks = FileChunks(file: fifo, size: 10, sent: { _ in }).makeAsyncIterator()
        do {
            _ = try await chunks.next()
            XCTFail("a pipe was read as a body file")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .fileAccess, error.description)
        }
    }

    func testARegularFileIsReadUpToItsAnnouncedLength() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("body-\(UUID().uuidString)")
        try Data(repeating: 1, count: 100).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var read = 0
        for try await chunk in FileChunks(file: file, size: 60, sent: { _ in }) { read += chunk.readableBytes }
        XCTAssertEqual(read, 60)
    }
}

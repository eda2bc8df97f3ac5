import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A one-shot body's chunks, as engines read them: from an `InputStream` or an async sequence, failures made the
/// core's, lengths checked, and the blocking bridge URLSession reads.
final class RequestBodyChunksTests: XCTestCase {
    struct ProducerFailed: Error {}

    private func collect(_ chunks: RequestBodyChunks) async throws -> [Data] {
        var collected: [Data] = []
        for try await chunk in chunks { collected.append(chunk) }
        return collected
    }

    func testAnInputStreamIsReadInPiecesOfAtMost64KiB() async throws {
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        let body = ConnectRequest.OneShotStream(InputStream(data: bytes))

        let chunks = try await collect(body.chunks)

        XCTAssertEqual(chunks.reduce(Data(), +), bytes)
        XCTAssertTrue(chunks.allSatisfy { $0.count <= 64 << 10 }, "\(chunks.map(\.count))")
        XCTAssertGreaterThan(chunks.count, 3)
        XCTAssertNil(body.length)
    }

    func testASequenceGivesItsChunksInOrderAndSkipsEmptyOnes() async throws {
        let parts = [Data("a".utf8), Data(), Data("bc".utf8), Data()]
        let body = ConnectRequest.OneShotStream(
            AsyncStream { continuation in
                for part in parts { continuation.yield(part) }
                continuation.finish()
            }, length: 3)

        let chunks = try await collect(body.chunks)

        XCTAssertEqual(chunks, [Data("a".utf8), Data("bc".utf8)])
        XCTAssertEqual(body.length, 3)
    }

    func testASequenceThatThrowsFailsAsTheCoresInvalidRequestKeepingItsError() async throws {
        let body = ConnectRequest.OneShotStream(
            AsyncThrowingStream<Data, any Error> { continuation in
                continuation.yield(Data("part".utf8))
                continuation.finish(throwing: ProducerFailed())
            })
        var iterator = body.chunks.makeAsyncIterator()
        let first = try await iterator.next()
        XCTAssertEqual(first, Data("part".utf8))

        do {
            _ = try await iterator.next()
            XCTFail("expected the producer's failure")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .invalidRequest)
            guard case .bodyEncodingFailed? = error.invalidRequestReason else { return XCTFail("\(error)") }
            XCTAssertTrue(error.underlyingError is ProducerFailed, "\(error)")
        }
        let after = try await iterator.next()
        XCTAssertNil(after, "a failed body stays ended")
    }

    func testACountedBodyOfAnotherLengthThanAnnouncedFails() async throws {
        for (parts, announced) in [([Data(count: 10)], Int64(20)), ([Data(count: 10), Data(count: 15)], Int64(20))] {
            let sent = Protected<Int64>(0)
            let chunks = ConnectRequest.OneShotStream(parts.async).chunks
                .counted(announcing: announced, sent: { count in sent.withLock { $0 += count } })
            do {
                _ = try await collect(chunks)
                XCTFail("\(parts.map(\.count)) against \(announced): expected a failure")
            } catch let error as ConnectError {
                XCTAssertEqual(error.kind, .invalidRequest, "\(error)")
                XCTAssertTrue(error.message.contains("announced"), error.message)
            }
            XCTAssertLessThanOrEqual(sent.snapshot, announced, "no chunk past the length is handed over")
        }
    }

    func testACountedBodyTellsEachChunkTaken() async throws {
        let sent = Protected<[Int64]>([])
        let chunks = ConnectRequest.OneShotStream([Data(count: 3), Data(count: 4)].async).chunks
            .counted(announcing: 7, sent: { count in sent.withLock { $0.append(count) } })

        _ = try await collect(chunks)

        XCTAssertEqual(sent.snapshot, [3, 4])
    }

    // MARK: - The blocking bridge URLSession reads

    func testTheBlockingReaderGivesEachChunkThenTheEnd() throws {
        let reader = BlockingChunkReader(ConnectRequest.OneShotStream([Data("x".utf8), Data("yz".utf8)].async).chunks)
        let results = Protected<[Result<Data?, any Error>]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for _ in 0..<4 {
                let next = reader.next()
                results.withLock { $0.append(next) }
            }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)

        let values = results.snapshot.map { result -> String in
            switch result {
            case .success(let chunk?): return String(decoding: chunk, as: UTF8.self)
            case .success(nil): return "end"
            case .failure(let error): return "\(error)"
            }
        }
        XCTAssertEqual(values, ["x", "yz", "end", "end"])
    }

    /// A producer asked for a chunk it never makes: it says when it is asked, and when its wait is cancelled.
    struct StalledChunks: AsyncSequence, Sendable {
        typealias Element = Data
        let asked: DispatchSemaphore
        let cancelled: DispatchSemaphore

        func makeAsyncIterator() -> Self { self }
    }

    func testCancellingTheBlockingReaderReleasesAReadWaitingForAChunkThatNeverComes() throws {
        let asked = DispatchSemaphore(value: 0)
        let producerCancelled = DispatchSemaphore(value: 0)
        let reader = BlockingChunkReader(
            ConnectRequest.OneShotStream(StalledChunks(asked: asked, cancelled: producerCancelled)).chunks)
        let result = Protected<Result<Data?, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let next = reader.next()
            result.withLock { $0 = next }
            done.signal()
        }
        XCTAssertEqual(asked.wait(timeout: .now() + 10), .success, "the read asked the producer for a chunk")

        reader.cancel()

        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the read is released")
        guard case .failure(let error)? = result.snapshot else {
            return XCTFail("\(String(describing: result.snapshot))")
        }
        XCTAssertTrue(error is CancellationError, "\(error)")
        XCTAssertEqual(producerCancelled.wait(timeout: .now() + 10), .success, "the producer's wait is cancelled")
        XCTAssertNil(reader.failure, "a cancellation is not the body's failure")
    }

    #if canImport(FoundationNetworking)
        /// FoundationNetworking ends a body as soon as `hasBytesAvailable` is false: the bridge says it has bytes
        /// until its end, waits in `read` for a slow producer, and fails with -1 (its error kept) when it fails.
        func testTheLinuxBridgeWaitsForASlowProducerAndReportsItsFailure() throws {
            let second = Promise<Void>()
            let chunks = AsyncThrowingStream<Data, any Error> { continuation in
                continuation.yield(Data("first".utf8))
                let task = Task {
                    try? await second.future.value
                    continuation.yield(Data("second".utf8))
                    continuation.finish(throwing: ProducerFailed())
                }
                continuation.onTermination = { _ in task.cancel() }
            }
            let body = ConnectRequest.OneShotStream(chunks)
            nonisolated(unsafe) let stream = body.inputStream  // read by the one thread below, then here
            XCTAssertTrue(stream is ChunkedBodyInputStream)
            let log = Protected<[String]>([])
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                stream.open()
                var buffer = [UInt8](repeating: 0, count: 3)
                while stream.hasBytesAvailable {
                    let count = stream.read(&buffer, maxLength: buffer.count)
                    log.withLock {
                        $0.append(count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : "\(count)")
                    }
                    if count <= 0 { break }
                    // The producer goes on only once the first chunk was read whole.
                    if log.snapshot.joined() == "first" { _ = second.succeed(()) }
                }
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)

            XCTAssertEqual(log.snapshot, ["fir", "st", "sec", "ond", "-1"])
            XCTAssertEqual(stream.streamStatus, .error)
            let error = try XCTUnwrap(stream.streamError as? ConnectError)
            XCTAssertTrue(error.underlyingError is ProducerFailed, "\(error)")
        }
    #endif

    /// A sequence that throws `CancellationError` of its own (its producer's task was cancelled; the call was not)
    /// fails the call as any other producer's failure: `invalidRequest`, its error kept, and the server never gets
    /// a whole body. Over URLSession it failed as a transport failure, "operation aborted by callback".
    func testASequenceThatThrowsACancellationOfItsOwnFailsAsTheCoresInvalidRequest() async throws {
        let server = try LocalServer.started()
        defer { server.stop() }
        let received = Promise<(count: Int, complete: Bool)>()
        server.streamingRoute("PUT", "/upload") { _, body in
            var count = 0
            while let piece = body.read() { count += piece.count }
            _ = received.succeed((count, body.isComplete))
            return .text("\(count)")
        }
        let body = ConnectRequest.OneShotStream(
            AsyncThrowingStream<Data, any Error> { continuation in
                continuation.yield(Data("part".utf8))
                continuation.finish(throwing: CancellationError())
            })
        let request = ConnectRequest(
            method: .put, url: server.baseURL.appendingPathComponent("upload"), body: .stream(body),
            timeoutInterval: 10)
        let connect = Connect(transport: URLSessionTransport(), retryPolicy: nil)

        do {
            let response = try await connect.response(for: request, name: "upload").value
            XCTFail("expected the producer's failure, got \(response.statusCode)")
        } catch let error as ConnectError {
            XCTAssertEqual(error.kind, .invalidRequest, "\(error)")
            guard case .bodyEncodingFailed? = error.invalidRequestReason else { return XCTFail("\(error)") }
            XCTAssertTrue(error.underlyingError is CancellationError, "\(error)")
        }
        // The server may not have seen the request at all; if it did, the body was not whole.
        if let seen = try? await received.future.value(timeout: 5) {
            XCTAssertFalse(seen.complete, "the server got a complete body of \(seen.count) bytes")
        }
    }

    func testABodyOfChunksThroughAURLRequestAndBackIsStillItsChunks() async throws {
        let body = ConnectRequest.OneShotStream([Data("one".utf8), Data("two".utf8)].async, length: 6)
        let request = ConnectRequest(
            method: .post, url: URL(string: "http://api.test/upload")!, body: .stream(body))

        let back = try ConnectRequest(request.urlRequest)

        guard case .stream(let stream) = back.body else { return XCTFail("\(back.body)") }
        XCTAssertTrue(stream === body, "the same body, not a stream read through the bridge")
        let chunks = try await collect(stream.chunks)
        XCTAssertEqual(chunks, [Data("one".utf8), Data("two".utf8)])
    }
}

extension RequestBodyChunksTests.StalledChunks: AsyncIteratorProtocol {
    func next() async throws -> Data? {
        asked.signal()
        // Never resumes on its own: only the cancellation of the reading task ends it.
        let never = AsyncStream<Void> { _ in }
        await withTaskCancellationHandler {
            for await _ in never {}
        } onCancel: {
            cancelled.signal()
        }
        throw CancellationError()
    }
}

extension Array where Element == Data {
    /// The chunks as an async sequence, for tests.
    var async: AsyncStream<Data> {
        AsyncStream { continuation in
            for chunk in self { continuation.yield(chunk) }
            continuation.finish()
        }
    }
}

import Foundation
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnect

/// A one-shot upload's producer (an `AsyncStream`'s task) is told that the body is no longer wanted once the exchange
/// is over, whatever the engine is doing then: the core tells it (`SequenceReader`), not the engine's luck of being
/// inside the sequence's `next()`.
final class StreamUploadProducerTests: XCTestCase {
    /// An engine that takes the body's first chunk, then either waits until it is cancelled (a write the connection
    /// never takes) or answers at once, the rest of the body unread. It keeps the body's iterator for the test.
    final class OneChunkEngine: HTTPEngine, Sendable {
        enum Then: Sendable {
            case waitUntilCancelled
            case answer
        }

        let then: Then
        /// The body's iterator, as the engine left it when it answered.
        let kept = Protected<RequestBodyChunks.Iterator?>(nil)

        init(then: Then) {
            self.then = then
        }

        func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncThrowingStream<Data, any Error>> {
            guard case .stream(let chunks, _) = hop.body else { throw TestError(1) }
            var iterator = chunks.makeAsyncIterator()
            _ = try await iterator.next()
            switch then {
            case .waitUntilCancelled:
                await waitUntilCancelled()
                throw CancellationError()
            case .answer:
                kept.withLock { $0 = iterator }
                let (body, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
                continuation.finish()
                return EngineResponse(
                    head: ResponseHead(status: 200, headerFields: [:]), httpVersion: "HTTP/1.1", body: body)
            }
        }
    }

    private func upload(_ producer: StalledProducer) -> ConnectRequest {
        ConnectRequest(
            method: .post, url: URL(string: "http://example.test/upload")!,
            body: .stream(ConnectRequest.OneShotStream(producer)))
    }

    /// Cancelled while the engine holds the first chunk (not inside `next()`): the call ends cancelled and the
    /// producer is told.
    func testACancelledUploadTellsTheProducerWhileTheEngineHoldsAChunk() throws {
        let producer = StalledProducer(first: Data(count: 1_000))
        let connect = Connect(transport: OneChunkEngine(then: .waitUntilCancelled), retryPolicy: nil)
        let call = connect.response(for: upload(producer))
        try producer.taken.future.wait(timeout: 10)
        call.cancel()
        XCTAssertThrowsError(try call.wait(timeout: 10)) {
            XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)")
        }
        XCTAssertNoThrow(try producer.released.future.wait(timeout: 10), "the producer was never told")
    }

    /// Answered after one chunk, the rest unread (a server's early answer): the producer is told once the call
    /// ends, and the engine gets nothing more of it afterwards.
    func testAnUploadAnsweredEarlyTellsTheProducerAndGivesNothingMore() async throws {
        let producer = StalledProducer(first: Data(count: 1_000))
        let engine = OneChunkEngine(then: .answer)
        let connect = Connect(transport: engine, retryPolicy: nil)
        let response = try await connect.response(for: upload(producer)).value
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertNoThrow(try producer.released.future.wait(timeout: 10), "the producer was never told")
        var iterator = try XCTUnwrap(engine.kept.withLock { $0 })
        do {
            let chunk = try await iterator.next()
            XCTFail("the body gave \(String(describing: chunk)) after its exchange ended")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }

    /// The tests' socket engine, over a server that reads nothing: cancelled while its 16 MiB chunk waits for the
    /// connection, the producer is told and the connection closed.
    func testTheSocketEngineTellsTheProducerOfAnUploadCancelledMidWrite() throws {
        try CancellationAuditTests.assertAStreamUploadCancelledMidWriteTellsTheProducer(over: SocketEngine())
    }
}

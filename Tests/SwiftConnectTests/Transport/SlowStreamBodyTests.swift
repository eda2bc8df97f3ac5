import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A streamed request body whose producer is slower than the connection holds FoundationNetworking's one work queue
/// (Linux): other requests wait for it, but the threads that send them are not held.
final class SlowStreamBodyTests: XCTestCase {
    #if canImport(FoundationNetworking)
        /// A plain GET sent while another transport's upload waits in `read` for its producer's next chunk:
        /// `send` returns at once (creating and resuming a task waits for that queue), and the GET is answered once
        /// the producer goes on.
        func testSendingAPlainRequestWhileAStreamBodyWaitsForItsProducerDoesNotHoldTheCaller() throws {
            let server = try LocalServer.started()
            defer { server.stop() }
            let (holder, chunks) = try Self.uploadWaitingForItsProducer(to: server)
            defer { holder.cancel() }

            let get = Protected<Future<ConnectResponse>?>(nil)
            let sendReturned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                get.withLock {
                    $0 = URLSessionTransport().send(URLRequest(url: server.baseURL.appendingPathComponent("hello")))
                }
                sendReturned.signal()
            }
            let returned = sendReturned.wait(timeout: .now() + 10) == .success
            _ = chunks.release.succeed(())  // the producer goes on: the queue is free
            XCTAssertTrue(returned, "send held its caller while another request's body waited for its producer")
            if !returned { _ = sendReturned.wait(timeout: .now() + 70) }

            XCTAssertEqual(String(decoding: try holder.wait(timeout: 10).data, as: UTF8.self), "2000")
            XCTAssertEqual(String(decoding: try XCTUnwrap(get.snapshot).wait(timeout: 10).data, as: UTF8.self), "hello")
        }

        /// Requests through the core's exchange (here, with a size limit) sent while another transport's upload
        /// waits for its producer: their hops used to create their tasks on threads of Swift's concurrency pool,
        /// each held there, and with the pool's threads all held the producer (a task of that pool) could not go on:
        /// nothing was answered before the upload's timeout. Now the producer goes on, and everything is answered.
        func testRequestsThroughTheExchangeWhileAStreamBodyWaitsLeaveThePoolToTheProducer() throws {
            let server = try LocalServer.started()
            defer { server.stop() }
            let (holder, chunks) = try Self.uploadWaitingForItsProducer(to: server)
            defer { holder.cancel() }

            var transfer = TransferOptions()
            transfer.maxResponseBytes = 1_000
            let transport = URLSessionTransport()
            let gets = (0..<(2 * ProcessInfo.processInfo.activeProcessorCount + 2)).map { _ in
                transport.send(
                    ConnectRequest(method: .get, url: server.baseURL.appendingPathComponent("hello")),
                    transfer: transfer)
            }
            _ = chunks.release.succeed(())

            XCTAssertEqual(String(decoding: try holder.wait(timeout: 20).data, as: UTF8.self), "2000")
            for get in gets { XCTAssertEqual(String(decoding: try get.wait(timeout: 20).data, as: UTF8.self), "hello") }
        }

        /// Routes `/hello` and `/upload` on `server`, and starts an upload (60 s deadline) whose body waits for
        /// its producer's second chunk: returned once FoundationNetworking asked for it from `read`, on the work
        /// queue, which it then holds until `chunks.release` succeeds.
        private static func uploadWaitingForItsProducer(
            to server: LocalServer
        ) throws -> (holder: Future<ConnectResponse>, chunks: GatedChunks) {
            server.route("GET", "/hello") { _ in .text("hello") }
            server.streamingRoute("POST", "/upload") { _, body in
                var count = 0
                while let piece = body.read() { count += piece.count }
                return .text("\(count)")
            }
            let chunks = GatedChunks()
            var upload = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
            upload.body = .stream(ConnectRequest.OneShotStream(chunks))
            upload.timeoutInterval = 60
            let holder = URLSessionTransport().send(upload, transfer: TransferOptions())
            do {
                try chunks.asked.future.wait(timeout: 10)
            } catch {
                holder.cancel()
                throw error
            }
            return (holder, chunks)
        }
    #endif
}

/// A body of two chunks whose second waits for ``release``; ``asked`` is kept when it is asked for.
private final class GatedChunks: AsyncSequence, AsyncIteratorProtocol, Sendable {
    typealias Element = Data
    let asked = Promise<Void>()
    let release = Promise<Void>()
    private let count = Protected(0)

    func makeAsyncIterator() -> GatedChunks { self }

    func next() async throws -> Data? {
        let index = count.withLock {
            $0 += 1
            return $0
        }
        switch index {
        case 1:
            return Data(repeating: 1, count: 1_000)
        case 2:
            _ = asked.succeed(())
            let release = release
            try await withTaskCancellationHandler {
                try await release.future.value
            } onCancel: {
                _ = release.fail(CancellationError())
            }
            return Data(repeating: 2, count: 1_000)
        default:
            return nil
        }
    }
}

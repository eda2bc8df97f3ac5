import Dispatch
import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cancelling a plain exchange (URLSession's completion-handler path) does not hold the caller while
/// FoundationNetworking's `cancel()` waits for libcurl's work queue (Linux).
final class PlainTaskCancellationTests: XCTestCase {
    #if canImport(FoundationNetworking)
        /// libcurl's work queue, which every session of the process shares, is held by another request (a body
        /// stream that waits for its producer): a plain GET's `cancel()` returns all the same, and the GET still
        /// ends cancelled, its connection closed, once the queue is free.
        func testCancellingAPlainRequestDoesNotWaitForLibcurlsBusyQueue() throws {
            let server = try LocalServer.started()
            defer { server.stop() }
            let arrived = Promise<Void>()
            server.route("GET", "/slow") { _ in
                _ = arrived.succeed(())
                return LocalServer.Response.text("late").delayed(by: 60)
            }
            let firstPiece = Promise<Void>()
            server.streamingRoute("POST", "/upload") { _, body in
                var count = 0
                while let piece = body.read() {
                    count += piece.count
                    if count >= 1_000 { _ = firstPiece.succeed(()) }
                }
                return .text("\(count)")
            }
            let chunks = StalledProducer(first: Data(repeating: 1, count: 1_000))
            let transport = URLSessionTransport()
            let plain = transport.send(URLRequest(url: server.baseURL.appendingPathComponent("slow")))
            try arrived.future.wait(timeout: 10)
            // The upload's body stream blocks libcurl's work queue while it waits for its next chunk.
            var upload = ConnectRequest(method: .post, url: server.baseURL.appendingPathComponent("upload"))
            upload.body = .stream(ConnectRequest.OneShotStream(chunks))
            let holder = URLSessionTransport().send(upload, transfer: TransferOptions())
            defer { holder.cancel() }
            try firstPiece.future.wait(timeout: 10)

            let cancelReturned = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                plain.cancel()
                cancelReturned.signal()
            }
            let returned = cancelReturned.wait(timeout: .now() + 10) == .success
            holder.cancel()  // frees the queue: the stop lands
            XCTAssertTrue(returned, "cancel() held its caller until libcurl's work queue was free")
            if !returned { _ = cancelReturned.wait(timeout: .now() + 10) }
            XCTAssertThrowsError(try plain.wait(timeout: 10)) {
                XCTAssertEqual(($0 as? ConnectError)?.kind, .cancelled, "\($0)")
            }
            XCTAssertTrue(server.waitUntilIdle(timeout: 10), "the cancelled GET still holds its connection")
        }
    #endif
}

import Dispatch
import Foundation
import NIOConcurrencyHelpers
@_spi(Engine) import SwiftConnect
import SwiftConnectTesting
import XCTest

@testable @_spi(Engine) import SwiftConnectAsyncHTTPClient

/// The engine's own buffer, in front of the core's stream, against a stream's `StreamingOptions.bufferLimit`.
final class StreamBufferLimitTests: XCTestCase {
    private var server: LocalServer!

    override func setUpWithError() throws {
        server = try LocalServer.started()
    }

    override func tearDown() {
        server.stop()
    }

    /// A stream whose reader reads nothing, with a buffer limit of 16 KiB: the engine stops reading once its own
    /// buffer holds the limit (one part past it at most), as the core's stream does, not at 256 KiB, which held
    /// about 272 KiB unread for a limit of 16. Then the reader gets the whole body, in order.
    func testAStreamNobodyReadsPausesTheEngineAtItsBufferLimit() async throws {
        let body = LocalServer.generatedBytes(count: 4 << 20, seed: 11)
        server.route("GET", "/big") { _ in
            .stream(contentLength: nil) { write in
                var offset = 0
                while offset < body.count {
                    let end = min(offset + (1 << 14), body.count)
                    guard write(Data(body[offset..<end])) else { return }
                    offset = end
                }
            }
        }
        let transport = AsyncHTTPClientTransport()
        let deliveries = NIOLockedValueBox<[ResponseDelivery]>([])
        let engine = WatchedEngine(transport: transport) { delivery in
            deliveries.withLockedValue { $0.append(delivery) }
        }
        let limit = 16 << 10
        let stream = Connect(transport: engine, retryPolicy: nil).stream(
            SwiftConnect.Route("/big", baseURL: server.baseURL, timeout: 60),
            streaming: StreamingOptions(bufferLimit: limit))
        _ = try await stream.response
        let delivery = try XCTUnwrap(deliveries.withLockedValue { $0.first })

        // Nobody reads: the core's stream fills to the limit and stops taking parts, then the engine's buffer fills.
        // A part is what one read of the socket brought: 16 KiB chunks here, never more than 64 KiB.
        let paused = await bufferedAtPause(of: delivery, within: 30)
        let held = try XCTUnwrap(paused, "the engine never paused")
        XCTAssertGreaterThanOrEqual(held, limit)
        XCTAssertLessThan(held, limit + (64 << 10), "the engine held \(held) bytes unread for a limit of \(limit)")
        print("a stream of limit \(limit) nobody reads: the engine paused holding \(held) bytes")

        var received = Data()
        for try await chunk in stream { received.append(chunk) }
        XCTAssertEqual(received.count, body.count)
        XCTAssertTrue(received == body, "the body arrived changed")
        try await transport.shutdown()
    }

    /// The engine pauses at 256 KiB unread, as the core's stream does, or at a streamed answer's buffer limit if
    /// smaller; never at 0 or less, under which an emptied buffer would not resume it.
    func testThePauseThresholdIsTheSmallerOf256KiBAndTheLimit() {
        XCTAssertEqual(ResponseDelivery().pauseThreshold, 256 << 10)
        XCTAssertEqual(ResponseDelivery(bufferLimit: 8 << 20).pauseThreshold, 256 << 10)
        XCTAssertEqual(ResponseDelivery(bufferLimit: 16 << 10).pauseThreshold, 16 << 10)
        XCTAssertEqual(ResponseDelivery(bufferLimit: 0).pauseThreshold, 1)
        XCTAssertEqual(ResponseDelivery(bufferLimit: .min).pauseThreshold, 1)
    }

    /// The bytes `delivery` held when the engine paused (at once if it is paused now), or `nil` if it did not
    /// within `seconds`.
    private func bufferedAtPause(of delivery: ResponseDelivery, within seconds: Double) async -> Int? {
        let waiting = NIOLockedValueBox<CheckedContinuation<Int?, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            waiting.withLockedValue { $0 = continuation }
            let resume: @Sendable (Int?) -> Void = { held in
                waiting.withLockedValue { waiting in
                    defer { waiting = nil }
                    return waiting
                }?.resume(returning: held)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { resume(nil) }
            delivery.whenPaused { resume($0) }
        }
    }
}

/// The AsyncHTTPClient engine under the core's exchange, each hop's delivery handed to the test.
private struct WatchedEngine: HTTPEngine {
    let transport: AsyncHTTPClientTransport
    let watch: @Sendable (ResponseDelivery) -> Void

    var decodedContentCodings: Set<String> { transport.decodedContentCodings }

    func send(_ hop: EngineRequest) async throws -> EngineResponse<AsyncHTTPClientTransport.ResponseBody> {
        let response = try await transport.send(hop)
        watch(response.body.delivery)
        return response
    }

    func failure(_ error: any Error) -> ConnectError? {
        transport.failure(error)
    }
}
